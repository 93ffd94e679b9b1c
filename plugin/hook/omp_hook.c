/* The OpenMP hook's entry points: definitions of libomptarget's data entry points that come
 * first in symbol lookup (the program links -lompbatch before the OpenMP runtime, or preloads
 * libompbatch.so), decide what the hook copies itself (hook_update.c, hook_begin.c,
 * hook_end.c, hook_region.c) and forward the rest
 * to the runtime's own definitions (hook_runtime.c).
 *
 * Re-entry: libomptarget calls some of these through its own PLT (its legacy and nowait
 * wrappers call the mapper forms), which lands here again. Every call into the runtime runs
 * with a per-thread depth set, and calls arriving while it is set go straight through.
 *
 * Locking: data constructs hold the construct lock exclusively from their decisions until
 * their copies are done; target regions hold it shared for their whole call. A region that
 * found an entry the hook is about to fill (entry created with `to` taken off, hook copy
 * pending) would otherwise run on data that is not there yet. The lock prefers writers so a
 * stream of regions on other threads cannot starve data constructs. */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/core/alloc.h"
#include "plugin/core/clock.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/core/workers.h"
#include "plugin/hook/hook_begin.h"
#include "plugin/hook/hook_construct.h"
#include "plugin/hook/hook_end.h"
#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_direct_choice.h"
#include "plugin/hook/hook_forward.h"
#include "plugin/hook/hook_mapper.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_region.h"
#include "plugin/hook/hook_register.h"
#include "plugin/hook/hook_runtime.h"
#include "plugin/hook/hook_state.h"
#include "plugin/hook/hook_stats.h"
#include "plugin/hook/hook_update.h"
#include "plugin/hook/omp_abi.h"
#include "ompbatch.h"
#include "plugin/core/phase_time.h"

#define OB_HOOK_EXPORT __attribute__((visibility("default")))

static pthread_rwlock_t construct_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* Why the hook passes everything through, with OMPBATCH_VERBOSE=1 and once: a program's
 * stderr is part of its output (test harnesses compare it), and forwarding changes nothing
 * the program could see. */
static void say_once(atomic_int *said, const char *fmt, ...)
{
    if (ob_log_level() >= 1 && atomic_exchange(said, 1) == 0) {
        char line[512];
        va_list args;
        va_start(args, fmt);
        vsnprintf(line, sizeof(line), fmt, args);
        va_end(args);
        ob_log_write("hook: %s", line);
    }
}

static int offload_disabled(void)
{
    const char *policy = getenv("OMP_TARGET_OFFLOAD");
    return policy != NULL && strcasecmp(policy, "disabled") == 0;
}

/* libomptarget's own reports (LIBOMPTARGET_INFO: kernel arguments, look-ups, entries made and
 * removed, copies, table dumps; LIBOMPTARGET_DEBUG: a debug build's trace) describe the work it
 * does itself: with the hook doing part of that work they would lose lines and gain others. A
 * program that asks for them gets the runtime alone. The level is read as the runtime reads it
 * (std::stoi: blanks, a sign, decimal digits); a value it cannot read asks for nothing. */
static const char *runtime_reports_asked(void)
{
    static const char *const names[] = {"LIBOMPTARGET_INFO", "LIBOMPTARGET_DEBUG"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *value = getenv(names[i]);
        char *end = NULL;
        if (value != NULL && strtol(value, &end, 10) != 0 && end != value)
            return names[i];
    }
    return NULL;
}

static void setup(void)
{
    const ob_hook_runtime *rt = ob_hook_runtime_get();
    char known[64];
    ob_runtime_versions_known(known, sizeof(known));
    ob_hook_state_set(OB_HOOK_ENABLED, !ob_config_get()->disable);
    static atomic_int said;
    if (!rt->present) {
        /* A program without OpenMP offload (one that calls the API only) has nothing to hook:
         * not a problem to warn about. */
        ob_log(1, "hook: no OpenMP offload runtime is present: nothing to hook");
    } else if (!rt->complete) {
        say_once(&said, "the OpenMP offload runtime lacks %s (hook expects libomptarget %s); "
                 "forwarding every call unchanged", rt->missing, known);
    } else if (rt->version == NULL) {
        char what[300];
        snprintf(what, sizeof(what), "%s (LLVM %d)", rt->path[0] ? rt->path : "an unnamed library",
                 rt->major);
        say_once(&said, "the OpenMP offload runtime is %s; the hook knows libomptarget %s only "
                 "and forwards every call unchanged", what, known);
    } else if (offload_disabled()) {
        ob_log(1, "hook: OMP_TARGET_OFFLOAD=disabled: forwarding every call unchanged");
    } else if (runtime_reports_asked() != NULL) {
        ob_log(1, "hook: %s asks the runtime to report its own work: forwarding every call "
                  "unchanged", runtime_reports_asked());
    } else {
        ob_hook_state_set(OB_HOOK_RUNTIME_KNOWN, 1);
    }
    if (ob_hook_active())
        ob_log(1, "hook: active over %s", rt->path);
}

static const ob_hook_runtime *hook_setup(void)
{
    pthread_once(&setup_once, setup);
    ob_hook_state_set(OB_HOOK_LOADED, 1);
    return ob_hook_runtime_get();
}

/* A call the program makes although the runtime behind the hook lacks it cannot be passed
 * on; the program could not have run without the hook either. */
static void require(const void *fn, const char *name)
{
    if (fn == NULL) {
        fprintf(stderr, "ompbatch: hook: the program called %s, which no OpenMP offload "
                        "runtime after the hook defines\n", name);
        abort();
    }
}

/* The OpenMP device a data construct addresses, or -1 for everything the hook leaves alone:
 * the initial device (host fallback), numbers the runtime will reject, devices beyond the
 * mirror's table. */
static int resolve_device(const ob_hook_runtime *rt, int64_t device_id)
{
    if (device_id == -1)
        device_id = rt->get_default_device();
    int64_t count = rt->get_num_devices();
    if (device_id < 0 || device_id >= count || device_id >= OB_MIRROR_MAX_DEVICES)
        return -1;
    return (int)device_id;
}

typedef enum construct_kind { KIND_BEGIN, KIND_END, KIND_UPDATE } construct_kind;

/* Arrays the hook may read: a negative count, or a positive one with a NULL array the runtime
 * needs, is left to the runtime exactly as the program passed it (the hook reads nothing). */
static int arrays_usable(const ob_map_args *a)
{
    if (a->count < 0)
        return 0;
    return a->count == 0 ||
           (a->bases != NULL && a->begins != NULL && a->sizes != NULL && a->types != NULL);
}

/* A begin the hook forwarded while switched off: what its items may have mapped becomes
 * foreign, so that a region split after the hook is on again cannot enclose it unseen. */
static void remember_while_off(const ob_hook_runtime *rt, ob_construct *c)
{
    int device = resolve_device(rt, c->device_id);
    if (device < 0)
        return;
    pthread_rwlock_wrlock(&construct_lock);
    ob_hook_forget_touched(device, &c->args);
    pthread_rwlock_unlock(&construct_lock);
}

static void data_construct(construct_kind kind, int nowait, ob_construct *c)
{
    const ob_hook_runtime *rt = hook_setup();
    static const char *const names[] = {"begin", "end", "update"};
    static const char *const symbols[] = {
        "__tgt_target_data_begin_mapper", "__tgt_target_data_end_mapper",
        "__tgt_target_data_update_mapper"};
    ob_tgt_data_fn blocking[] = {rt->begin, rt->end, rt->update};
    ob_tgt_data_nowait_fn nowaits[] = {rt->begin_nowait, rt->end_nowait, rt->update_nowait};
    c->what = names[kind];
    c->blocking = blocking[kind];
    c->nowait = nowait ? nowaits[kind] : NULL;
    require((void *)c->blocking, symbols[kind]);
    if (nowait)
        require((void *)c->nowait, symbols[kind]);
    c->device = -1;
    if (!ob_hook_in_runtime() && ob_hook_active() && arrays_usable(&c->args))
        c->device = resolve_device(rt, c->device_id);
    if (c->device < 0) {
        ob_hook_call_runtime(c, &c->args, 1);
        if (kind == KIND_BEGIN && !ob_hook_in_runtime() && ob_hook_switched_off() &&
            arrays_usable(&c->args))
            remember_while_off(rt, c);
        return;
    }
    uint64_t started = ob_phase_start();
    pthread_rwlock_wrlock(&construct_lock);
    switch (kind) {
    case KIND_BEGIN:
        ob_hook_begin(c);
        break;
    case KIND_END:
        ob_hook_end(c);
        break;
    case KIND_UPDATE:
        ob_hook_update(c);
        break;
    }
    pthread_rwlock_unlock(&construct_lock);
    ob_phase_end(OB_PHASE_CONSTRUCT, started);
}

#define DATA_PARAMS                                                                             \
    ob_ident *loc, int64_t device_id, int32_t arg_num, void **args_base, void **args,           \
        int64_t *arg_sizes, int64_t *arg_types, void **arg_names, void **arg_mappers
#define NOWAIT_PARAMS                                                                           \
    int32_t dep_num, void *dep_list, int32_t noalias_dep_num, void *noalias_dep_list
#define CONSTRUCT_INIT                                                                          \
    .loc = loc, .device_id = device_id,                                                         \
    .args = {arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers}
/* Clang 16 calls the nowait forms with nine arguments: the four dependency arguments hold
 * whatever the registers and stack had. They are never read, only passed back. */
#define NOWAIT_INIT                                                                             \
    .dep_num = dep_num, .dep_list = dep_list, .noalias_dep_num = noalias_dep_num,               \
    .noalias_dep_list = noalias_dep_list

OB_HOOK_EXPORT void __tgt_target_data_begin_mapper(DATA_PARAMS)
{
    ob_construct c = {CONSTRUCT_INIT};
    data_construct(KIND_BEGIN, 0, &c);
}

OB_HOOK_EXPORT void __tgt_target_data_end_mapper(DATA_PARAMS)
{
    ob_construct c = {CONSTRUCT_INIT};
    data_construct(KIND_END, 0, &c);
}

OB_HOOK_EXPORT void __tgt_target_data_update_mapper(DATA_PARAMS)
{
    ob_construct c = {CONSTRUCT_INIT};
    data_construct(KIND_UPDATE, 0, &c);
}

OB_HOOK_EXPORT void __tgt_target_data_begin_nowait_mapper(DATA_PARAMS, NOWAIT_PARAMS)
{
    ob_construct c = {CONSTRUCT_INIT, NOWAIT_INIT};
    data_construct(KIND_BEGIN, 1, &c);
}

OB_HOOK_EXPORT void __tgt_target_data_end_nowait_mapper(DATA_PARAMS, NOWAIT_PARAMS)
{
    ob_construct c = {CONSTRUCT_INIT, NOWAIT_INIT};
    data_construct(KIND_END, 1, &c);
}

OB_HOOK_EXPORT void __tgt_target_data_update_nowait_mapper(DATA_PARAMS, NOWAIT_PARAMS)
{
    ob_construct c = {CONSTRUCT_INIT, NOWAIT_INIT};
    data_construct(KIND_UPDATE, 1, &c);
}

/* Runs the region's kernel with args' map types and bases replaced by types[] and bases[] (a
 * private copy of the struct): what libomptarget writes into the struct (the argument count,
 * the team count) is copied back, so the program sees what it would have seen. The caller
 * holds the construct lock shared. */
static int run_kernel(const ob_hook_runtime *rt, ob_ident *loc, int64_t device_id,
                      int32_t num_teams, int32_t thread_limit, void *host_ptr,
                      ob_kernel_args *args, void **bases, int64_t *types)
{
    ob_kernel_args mine = *args;
    mine.arg_base_ptrs = bases;
    mine.arg_types = types;
    uint64_t started = ob_phase_start();
    ob_hook_runtime_enter();
    int result = rt->kernel(loc, device_id, num_teams, thread_limit, host_ptr, &mine);
    ob_hook_runtime_leave();
    ob_phase_end(OB_PHASE_KERNEL, started);
    mine.arg_base_ptrs = args->arg_base_ptrs;
    mine.arg_types = args->arg_types;
    *args = mine;
    return result;
}

/* Room for a region's replaced bases and types: on the stack for most regions. */
#define OB_REGION_ARGS_ON_STACK 32

typedef struct region_args {
    void **bases;
    int64_t *types;
    void *heap;
    void *stack_bases[OB_REGION_ARGS_ON_STACK];
    int64_t stack_types[OB_REGION_ARGS_ON_STACK];
} region_args;

static int region_args_init(region_args *r, uint32_t count)
{
    r->heap = NULL;
    r->bases = r->stack_bases;
    r->types = r->stack_types;
    if (count <= OB_REGION_ARGS_ON_STACK)
        return 0;
    r->heap = ob_malloc((size_t)count * (sizeof(void *) + sizeof(int64_t)));
    if (r->heap == NULL)
        return -1;
    r->bases = r->heap;
    r->types = (int64_t *)(r->bases + count);
    return 0;
}

/* A target region done as data begin + kernel + data end (ob_hook_region_splittable says
 * when): the halves take the construct lock exclusively, as data constructs do, and the
 * kernel shared, as every region does. The kernel gets its mapped arrays as device addresses
 * when the mirror holds them all after the begin half, else the program's arguments with TO,
 * FROM and ALWAYS taken off. Returns -1 without doing anything when the copy of the arguments
 * cannot be allocated. */
static int split_region(const ob_hook_runtime *rt, ob_construct *c, int32_t num_teams,
                        int32_t thread_limit, void *host_ptr, ob_kernel_args *args,
                        int *result)
{
    region_args kernel_args;
    if (region_args_init(&kernel_args, args->num_args) != 0)
        return -1;
    ob_hook_add(&ob_hook_count.regions_split, 1);
    c->what = "region begin";
    c->blocking = rt->begin;
    pthread_rwlock_wrlock(&construct_lock);
    ob_hook_begin(c);
    pthread_rwlock_unlock(&construct_lock);

    pthread_rwlock_rdlock(&construct_lock);
    if (ob_hook_region_direct_args(c->device, args, 1, kernel_args.bases, kernel_args.types)) {
        ob_hook_add(&ob_hook_count.regions_direct, 1);
    } else {
        for (uint32_t i = 0; i < args->num_args; i++)
            kernel_args.bases[i] = args->arg_base_ptrs[i];
        ob_hook_region_kernel_types(args, kernel_args.types);
    }
    *result = run_kernel(rt, c->loc, c->device_id, num_teams, thread_limit, host_ptr, args,
                         kernel_args.bases, kernel_args.types);
    pthread_rwlock_unlock(&construct_lock);

    c->what = "region end";
    c->blocking = rt->end;
    pthread_rwlock_wrlock(&construct_lock);
    ob_hook_end(c);
    pthread_rwlock_unlock(&construct_lock);
    free(kernel_args.heap);
    return 0;
}

/* A region with nothing to copy whose arrays the mirror holds: its kernel gets their device
 * addresses, and the runtime's look-ups of each array (three a region under 16) are saved.
 * Not while the host is busy (the caller's check): with every processor taken, such regions
 * took about 40 us each in some processes against the runtime's 19-30 alone (0.47-0.72x,
 * LLVM 16 and 19, H100 hosts), while forwarded whole they kept close to the runtime's pace
 * (BENCHMARKS.md, "Never slower"). With `use` 0 only finds out whether the region could have
 * run so (*eligible), for timing the forwarded way (hook_direct_choice.h). Returns 0 with
 * *result set when the kernel ran, or -1 to forward the region as it is. The caller holds the
 * construct lock shared. */
static int direct_region(const ob_hook_runtime *rt, ob_ident *loc, int64_t device_id,
                         int device, int32_t num_teams, int32_t thread_limit, void *host_ptr,
                         ob_kernel_args *args, int use, int *eligible, int *result)
{
    region_args kernel_args;
    if (region_args_init(&kernel_args, args->num_args) != 0)
        return -1;
    *eligible = ob_hook_region_direct_args(device, args, 0, kernel_args.bases,
                                           kernel_args.types);
    int direct = *eligible && use;
    if (direct) {
        ob_hook_add(&ob_hook_count.regions_direct, 1);
        *result = run_kernel(rt, loc, device_id, num_teams, thread_limit, host_ptr, args,
                             kernel_args.bases, kernel_args.types);
    }
    free(kernel_args.heap);
    return direct ? 0 : -1;
}

/* The hook turned pass-through for good (a runtime it does not know after all, or unified
 * shared memory): it will not see the registered ranges' mappings die, so their registrations
 * are undone now (hook_register.h). */
static void went_pass_through(void)
{
    pthread_rwlock_wrlock(&construct_lock);
    ob_hook_register_release_all();
    pthread_rwlock_unlock(&construct_lock);
}

OB_HOOK_EXPORT int __tgt_target_kernel(ob_ident *loc, int64_t device_id, int32_t num_teams,
                                       int32_t thread_limit, void *host_ptr, ob_kernel_args *args)
{
    const ob_hook_runtime *rt = hook_setup();
    require((void *)rt->kernel, "__tgt_target_kernel");
    int device = -1;
    if (!ob_hook_in_runtime() && ob_hook_active()) {
        ob_hook_add(&ob_hook_count.kernels, 1);
        if (args != NULL && args->version > rt->version->kernel_args_max) {
            static atomic_int said;
            say_once(&said, "a target region passes kernel arguments of version %u, newer "
                     "than libomptarget %d's; the program was built for another runtime: "
                     "forwarding every call unchanged from now on", (unsigned)args->version,
                     rt->major);
            ob_hook_state_set(OB_HOOK_RUNTIME_KNOWN, 0);
            went_pass_through();
        } else {
            device = resolve_device(rt, device_id);
        }
    }
    if (device < 0 || args == NULL) {
        /* Switched off, a nowait region's entries outlive the call (hook_foreign.h). */
        if (args != NULL && (args->flags & OB_KERNEL_NOWAIT) && !ob_hook_in_runtime() &&
            ob_hook_switched_off() && args->version <= rt->version->kernel_args_max &&
            (device = resolve_device(rt, device_id)) >= 0) {
            pthread_rwlock_rdlock(&construct_lock);
            (void)ob_hook_kernel_maps(device, args);
            pthread_rwlock_unlock(&construct_lock);
        }
        ob_hook_runtime_enter();
        int result = rt->kernel(loc, device_id, num_teams, thread_limit, host_ptr, args);
        ob_hook_runtime_leave();
        return result;
    }
    uint64_t region_started = ob_phase_start();
    int result = 0;
    pthread_rwlock_rdlock(&construct_lock);
    /* Direct first: a region it takes has every item present and no copy to make, so the
     * split would have nothing to batch; one pass of look-ups decides it. Whether it runs
     * so is timed per kernel, while the choice is being made. */
    ob_direct_choice *choice = NULL;
    ob_direct_mode mode = OB_DIRECT_NO;
    if (!ob_host_saturated()) {
        choice = ob_direct_choice_of(host_ptr);
        mode = ob_direct_choice_next(choice);
    }
    uint64_t timed_from = mode >= OB_DIRECT_TIME_NO ? ob_clock_ns() : 0;
    int eligible = 0;
    if (mode != OB_DIRECT_NO &&
        direct_region(rt, loc, device_id, device, num_teams, thread_limit, host_ptr, args,
                      mode != OB_DIRECT_TIME_NO, &eligible, &result) == 0) {
        pthread_rwlock_unlock(&construct_lock);
        if (mode == OB_DIRECT_TIME_YES && result == 0)
            ob_direct_choice_timed(choice, 1, ob_clock_ns() - timed_from);
        ob_phase_end(OB_PHASE_CONSTRUCT, region_started);
        return result;
    }
    int all_mirrored = 0;
    if (ob_hook_region_splittable(device, args, &all_mirrored)) {
        pthread_rwlock_unlock(&construct_lock);
        ob_construct c = {.loc = loc, .device_id = device_id, .device = device, .region = 1,
                          .args = {(int32_t)args->num_args, args->arg_base_ptrs, args->arg_ptrs,
                                   args->arg_sizes, args->arg_types, args->arg_names,
                                   args->arg_mappers}};
        if (split_region(rt, &c, num_teams, thread_limit, host_ptr, args, &result) == 0) {
            ob_phase_end(OB_PHASE_CONSTRUCT, region_started);
            return result;
        }
        pthread_rwlock_rdlock(&construct_lock);
    }
    int mappers = ob_hook_kernel_maps(device, args);
    if (mappers)
        ob_mapper_record_start(-1);
    uint64_t started = ob_phase_start();
    ob_hook_runtime_enter();
    result = rt->kernel(loc, device_id, num_teams, thread_limit, host_ptr, args);
    ob_hook_runtime_leave();
    ob_phase_end(OB_PHASE_KERNEL, started);
    if (mappers)
        ob_hook_kernel_mappers_done(device);
    /* Learning looks at items outside the mirror; a region whose items all lie in it,
     * forwarded on a busy host, costs the look-ups above and nothing more. */
    if (result == 0 && !mappers && !all_mirrored)
        ob_hook_region_learn(device, args);
    pthread_rwlock_unlock(&construct_lock);
    if (mode == OB_DIRECT_TIME_NO && eligible && result == 0)
        ob_direct_choice_timed(choice, 0, ob_clock_ns() - timed_from);
    ob_phase_end(OB_PHASE_CONSTRUCT, region_started);
    return result;
}

/* Called by the compiler's mapper functions while the runtime expands a mapper: recorded for
 * the construct the hook is forwarding (hook_mapper.h), then passed on. */
OB_HOOK_EXPORT void __tgt_push_mapper_component(void *handle, void *base, void *begin,
                                                int64_t size, int64_t type, void *name)
{
    const ob_hook_runtime *rt = ob_hook_runtime_get();
    require((void *)rt->push_mapper_component, "__tgt_push_mapper_component");
    ob_mapper_record(base, begin, size, type);
    rt->push_mapper_component(handle, base, begin, size, type, name);
}

/* The program's `requires` flags: under unified shared memory maps are host memory. */
static void note_requires(int64_t flags)
{
    if ((flags & OB_REQ_UNIFIED_SHARED_MEMORY) &&
        ob_hook_state_set(OB_HOOK_UNIFIED_MEMORY, 1) == 0) {
        ob_log(1, "hook: the program requires unified_shared_memory: forwarding every call");
        went_pass_through();
    }
}

OB_HOOK_EXPORT void __tgt_register_lib(ob_bin_desc *desc)
{
    const ob_hook_runtime *rt = hook_setup();
    require((void *)rt->register_lib, "__tgt_register_lib");
    /* Globals are recorded whatever the hook's state: it may be enabled later. The entries
     * are read only in the layout of a runtime the hook knows. */
    for (ob_offload_entry *e = desc != NULL && rt->version != NULL ? desc->host_entries_begin
                                                                    : NULL;
         e != NULL && e < desc->host_entries_end; e++) {
        if (rt->version->requires_in_entries && e->flags == OB_OFFLOAD_REQUIRES)
            note_requires(e->data);
        else if (e->size > 0 && e->addr != NULL)
            ob_globals_add((uintptr_t)e->addr, (uintptr_t)e->addr + e->size);
    }
    ob_hook_runtime_enter();
    rt->register_lib(desc);
    ob_hook_runtime_leave();
}

OB_HOOK_EXPORT void __tgt_register_requires(int64_t flags)
{
    const ob_hook_runtime *rt = hook_setup();
    require((void *)rt->register_requires, "__tgt_register_requires");
    note_requires(flags);
    ob_hook_runtime_enter();
    rt->register_requires(flags);
    ob_hook_runtime_leave();
}

OB_HOOK_EXPORT int omp_target_associate_ptr(const void *host_ptr, const void *device_ptr,
                                            size_t size, size_t device_offset, int device_num)
{
    const ob_hook_runtime *rt = hook_setup();
    require((void *)rt->associate_ptr, "omp_target_associate_ptr");
    int locked = !ob_hook_in_runtime();
    if (locked)
        pthread_rwlock_wrlock(&construct_lock);
    ob_hook_runtime_enter();
    int result = rt->associate_ptr(host_ptr, device_ptr, size, device_offset, device_num);
    ob_hook_runtime_leave();
    /* The new entry is never batched (its count is infinite); nothing the mirror holds may
     * overlap it any more, and a region's item around it is not new. */
    if (locked) {
        ob_foreign_forget_range(device_num, (uintptr_t)host_ptr,
                                (uintptr_t)host_ptr + size + 1);
        pthread_rwlock_unlock(&construct_lock);
    }
    return result;
}

OB_HOOK_EXPORT int omp_target_disassociate_ptr(const void *host_ptr, int device_num)
{
    const ob_hook_runtime *rt = hook_setup();
    require((void *)rt->disassociate_ptr, "omp_target_disassociate_ptr");
    int locked = !ob_hook_in_runtime();
    if (locked)
        pthread_rwlock_wrlock(&construct_lock);
    ob_hook_runtime_enter();
    int result = rt->disassociate_ptr(host_ptr, device_num);
    ob_hook_runtime_leave();
    if (locked) {
        /* Refused, the association stays: the runtime's, not the mirror's. */
        if (result != 0)
            ob_foreign_forget_range(device_num, (uintptr_t)host_ptr, (uintptr_t)host_ptr + 1);
        else
            ob_mirror_drop_range(device_num, (uintptr_t)host_ptr, (uintptr_t)host_ptr + 1);
        ob_hook_copy_forget_memory();
        pthread_rwlock_unlock(&construct_lock);
    }
    return result;
}

int ompbatch_hook_set_enabled(int want)
{
    if (want != 0 && want != 1)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "enabled is %d; use 0 or 1", want);
    pthread_once(&setup_once, setup);
    if (want && ob_config_get()->disable)
        return ob_fail(OMPBATCH_ERR_BAD_STATE,
                       "OMPBATCH_DISABLE=1 is set: the hook stays a pass-through");
    pthread_rwlock_wrlock(&construct_lock);
    int previous = ob_hook_state_set(OB_HOOK_ENABLED, want);
    /* Off, it will not see the registered ranges' mappings die. */
    if (!want && previous)
        ob_hook_register_release_all();
    /* While off, the hook saw nothing: what it knew of the runtime's tables is stale. */
    if (want && !previous)
        for (int d = 0; d < OB_MIRROR_MAX_DEVICES; d++)
            ob_foreign_forget_mirror(d);
    pthread_rwlock_unlock(&construct_lock);
    return previous;
}
