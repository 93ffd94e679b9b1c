/*
 * Optional access to the ompbatch OpenMP hook from a plain OpenMP program.
 *
 * The example programs must build and run with or without ompbatch, so they never call the
 * hook's functions directly: a direct call would need -lompbatch to link. They look the
 * functions up at run time with dlsym(RTLD_DEFAULT) instead, which finds them whether the
 * library was linked statically (the link must then export them and pull them in: see
 * BUILD.bazel, HOOK_EXPORT_COPTS) or preloaded (LD_PRELOAD=libompbatch.so). ompbatch.h is
 * included only for the statistics struct and the status and path constants; nothing here
 * needs the library at link time (not even ompbatch_err_name: status codes print as numbers).
 *
 * Header-only (static inline) because the omp_binary macro compiles one source file per
 * program.
 */
#ifndef OMPBATCH_EXAMPLES_OMP_HOOK_API_H
#define OMPBATCH_EXAMPLES_OMP_HOOK_API_H

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ompbatch.h"

typedef int (*hook_set_enabled_fn)(int enabled);
typedef int (*hook_get_stats_fn)(ompbatch_hook_stats *stats);
typedef int (*hook_reset_stats_fn)(void);

typedef struct hook_api {
    hook_set_enabled_fn set_enabled;
    hook_get_stats_fn get_stats;
    hook_reset_stats_fn reset_stats;
    int linked;     /* all three entry points were found */
    int can_enable; /* set_enabled(1) succeeded once (OMPBATCH_DISABLE=1 refuses it) */
} hook_api;

/* Finds the hook's entry points. A partial set means a library we do not understand, so the
 * program treats it like no hook at all rather than guessing. */
static inline hook_api hook_api_lookup(void)
{
    hook_api api;
    memset(&api, 0, sizeof api);
    api.set_enabled = (hook_set_enabled_fn)dlsym(RTLD_DEFAULT, "ompbatch_hook_set_enabled");
    api.get_stats = (hook_get_stats_fn)dlsym(RTLD_DEFAULT, "ompbatch_hook_get_stats");
    api.reset_stats = (hook_reset_stats_fn)dlsym(RTLD_DEFAULT, "ompbatch_hook_reset_stats");
    api.linked = api.set_enabled && api.get_stats && api.reset_stats;
    return api;
}

/* Probes whether batching can be switched on, and leaves it off. Prints one line saying what
 * the run will compare. */
static inline void hook_api_probe(hook_api *api, FILE *out)
{
    if (!api->linked) {
        if (api->set_enabled || api->get_stats || api->reset_stats)
            fprintf(out, "hook: only some ompbatch_hook_* functions found; treated as not "
                         "linked\n");
        else
            fprintf(out, "hook not linked: timing the OpenMP runtime only\n");
        return;
    }
    int rc = api->set_enabled(1);
    api->can_enable = rc >= 0;
    api->set_enabled(0);
    if (api->can_enable)
        fprintf(out, "hook linked: timing the runtime alone (hook off) and with the hook on\n");
    else
        fprintf(out, "hook linked but it refused to turn on (status %d; OMPBATCH_DISABLE set?): "
                     "timing the runtime only\n", rc);
}

/* Turns batching on or off; a no-op without the hook. Returns 0 or the hook's status. */
static inline int hook_api_set(const hook_api *api, int on)
{
    if (!api->linked)
        return on ? OMPBATCH_ERR_UNSUPPORTED : 0;
    int rc = api->set_enabled(on);
    return rc < 0 ? rc : 0;
}

/* The hook's counters now; all zero without the hook (or if the call fails). */
static inline ompbatch_hook_stats hook_api_stats(const hook_api *api)
{
    ompbatch_hook_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (api->linked && api->get_stats(&s) != OMPBATCH_OK) {
        memset(&s, 0, sizeof s);
        s.struct_size = sizeof s;
    }
    return s;
}

/* acc += (after - before) for every counter; paths and state are taken from after. */
static inline void hook_stats_accumulate(ompbatch_hook_stats *acc,
                                         const ompbatch_hook_stats *before,
                                         const ompbatch_hook_stats *after)
{
#define HOOK_STATS_ADD_(field) acc->field += after->field - before->field;
    HOOK_STATS_ADD_(constructs)
    HOOK_STATS_ADD_(kernels)
    HOOK_STATS_ADD_(items)
    HOOK_STATS_ADD_(update_batched)
    HOOK_STATS_ADD_(enter_batched)
    HOOK_STATS_ADD_(exit_batched)
    HOOK_STATS_ADD_(items_forwarded)
    HOOK_STATS_ADD_(batches)
    HOOK_STATS_ADD_(bytes_batched)
    HOOK_STATS_ADD_(driver_batch_calls)
    HOOK_STATS_ADD_(regions_split)
    HOOK_STATS_ADD_(region_items)
    HOOK_STATS_ADD_(region_batched)
    HOOK_STATS_ADD_(time_construct_ns)
    HOOK_STATS_ADD_(time_runtime_ns)
    HOOK_STATS_ADD_(time_kernel_ns)
    HOOK_STATS_ADD_(time_query_ns)
    HOOK_STATS_ADD_(time_add_ns)
    HOOK_STATS_ADD_(time_plan_ns)
    HOOK_STATS_ADD_(time_enqueue_ns)
    HOOK_STATS_ADD_(time_poll_ns)
    HOOK_STATS_ADD_(time_block_ns)
    HOOK_STATS_ADD_(time_unpack_ns)
    HOOK_STATS_ADD_(regions_direct)
    HOOK_STATS_ADD_(registrations)
    HOOK_STATS_ADD_(bytes_registered)
#undef HOOK_STATS_ADD_
    acc->paths |= after->paths;
    acc->state = after->state;
    acc->runtime_major = after->runtime_major;
}

/* Items the hook copied itself, of every kind. */
static inline uint64_t hook_stats_batched_items(const ompbatch_hook_stats *s)
{
    return s->update_batched + s->enter_batched + s->exit_batched + s->region_batched;
}

static inline const char *hook_state_name(int state)
{
    switch (state) {
    case OMPBATCH_HOOK_NOT_LOADED: return "not-loaded";
    case OMPBATCH_HOOK_ACTIVE: return "active";
    case OMPBATCH_HOOK_PASS_THROUGH: return "pass-through";
    default: return "unknown";
    }
}

/* "batch+host" etc.; "none" for 0. */
static inline const char *hook_paths_text(unsigned paths, char *buf, size_t size)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        {OMPBATCH_PATH_BATCH, "batch"},
        {OMPBATCH_PATH_PER_COPY, "per-copy"},
        {OMPBATCH_PATH_HOST, "host"},
        {OMPBATCH_PATH_KERNEL, "kernel"},
        {OMPBATCH_PATH_STAGED, "staged"},
    };
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(paths & names[i].bit))
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? "+" : "", names[i].name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(buf, size, "none");
    return buf;
}

static inline void hook_stats_print(FILE *out, const char *indent, const ompbatch_hook_stats *s)
{
    char paths[64];
    fprintf(out,
            "%sstate %s (runtime LLVM %d); constructs %" PRIu64 ", kernels %" PRIu64
            ", items %" PRIu64 "\n",
            indent, hook_state_name(s->state), s->runtime_major, s->constructs, s->kernels,
            s->items);
    fprintf(out,
            "%sbatched items: update %" PRIu64 ", enter %" PRIu64 ", exit %" PRIu64
            "; forwarded %" PRIu64 "\n",
            indent, s->update_batched, s->enter_batched, s->exit_batched, s->items_forwarded);
    fprintf(out,
            "%sbatches %" PRIu64 ", bytes %" PRIu64 ", driver_batch_calls %" PRIu64
            ", paths %s\n",
            indent, s->batches, s->bytes_batched, s->driver_batch_calls,
            hook_paths_text(s->paths, paths, sizeof paths));
}

#endif /* OMPBATCH_EXAMPLES_OMP_HOOK_API_H */
