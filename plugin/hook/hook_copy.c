#include "plugin/hook/hook_copy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/api/batch.h"
#include "plugin/api/batch_add.h"
#include "plugin/api/cost_models.h"
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/cuda/device.h"
#include "plugin/cuda/driver.h"
#include "plugin/cuda/kernel_module.h"
#include "plugin/cuda/memkind.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_stats.h"
#include "ompbatch.h"
#include "plugin/core/phase_time.h"
#include "plugin/cuda/staging.h"

typedef enum device_verdict { VERDICT_UNKNOWN = 0, VERDICT_USABLE, VERDICT_FORWARD } device_verdict;

/* Written only by data constructs, which hold the construct lock exclusively. */
static device_verdict verdicts[OB_MIRROR_MAX_DEVICES];
static ob_device executors[OB_MIRROR_MAX_DEVICES];

typedef struct thread_batches {
    ompbatch_batch *batches[OB_MIRROR_MAX_DEVICES];
} thread_batches;

static pthread_key_t batches_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* At a thread's exit nobody is left to tell: a failed destroy is logged where it fails. */
static void destroy_thread_batches(void *value)
{
    thread_batches *mine = value;
    for (int d = 0; d < OB_MIRROR_MAX_DEVICES; d++)
        (void)ob_batch_destroy(mine->batches[d]);
    free(mine);
}

static void create_key(void)
{
    pthread_key_create(&batches_key, destroy_thread_batches);
}

/* Whether addr lies in ordinary read-write memory of this process, from /proc/self/maps:
 * what LLVM's host-offload plugin hands out (malloc). Device memory is not that: the CUDA
 * driver reserves its address ranges without access, or maps them from /dev/nvidia*. */
static int is_host_memory(uintptr_t addr)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL)
        return 0;
    char line[512];
    int host = 0;
    while (fgets(line, sizeof(line), maps) != NULL) {
        unsigned long begin, end;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &begin, &end, perms, path) < 3)
            continue;
        if (addr >= begin && addr < end) {
            host = perms[0] == 'r' && perms[1] == 'w' && strncmp(path, "/dev/", 5) != 0;
            break;
        }
    }
    fclose(maps);
    return host;
}

static int classify(int device, uintptr_t device_address, ob_device *out)
{
    out->number = device;
    out->ordinal = -1;
    const ob_driver *driver = ob_driver_get();
    if (!driver->loaded) {
        /* Without the driver the hook can only copy with memcpy, which is right for LLVM's
         * host-offload devices and fatal for a CUDA device the library could not open. */
        if (!is_host_memory(device_address)) {
            ob_log(1, "hook: OpenMP device %d maps memory that is not host memory and the CUDA "
                      "driver is not usable (%s); forwarding its transfers",
                   device, driver->reason);
            return 0;
        }
        out->kind = OB_DEVICE_HOST_OFFLOAD;
        return 1;
    }
    ob_mem_cache cache = {0};
    ob_mem_info info;
    int status = ob_mem_classify(driver, &cache, device_address, &info);
    ob_mem_cache_free(&cache);
    if (status != OMPBATCH_OK) {
        ob_log(1, "hook: device %d: cannot classify device address %#lx (%s); forwarding "
                     "its transfers", device, (unsigned long)device_address,
                     ompbatch_last_error());
        return 0;
    }
    switch (info.kind) {
    case OB_MEM_DEVICE:
        /* libomptarget 16 numbers CUDA devices by ordinal when only CUDA images exist;
         * anything else means a numbering the hook does not know. */
        if (info.ordinal != device) {
            ob_log(1, "hook: OpenMP device %d maps memory on CUDA device %d; forwarding its "
                         "transfers", device, info.ordinal);
            return 0;
        }
        out->kind = OB_DEVICE_CUDA;
        out->ordinal = info.ordinal;
        return 1;
    case OB_MEM_PAGEABLE:
        out->kind = OB_DEVICE_HOST_OFFLOAD; /* LLVM's host-offload plugin: memory is malloc'd */
        return 1;
    default:
        ob_log(1, "hook: OpenMP device %d maps %s memory; forwarding its transfers", device,
                     ob_mem_kind_name(info.kind));
        return 0;
    }
}

int ob_hook_device_usable(int device, uintptr_t device_address)
{
    if (device < 0 || device >= OB_MIRROR_MAX_DEVICES)
        return 0;
    if (verdicts[device] == VERDICT_UNKNOWN) {
        int usable = classify(device, device_address, &executors[device]);
        verdicts[device] = usable ? VERDICT_USABLE : VERDICT_FORWARD;
        if (usable)
            ob_log(1, "hook: OpenMP device %d copies %s", device,
                         executors[device].kind == OB_DEVICE_CUDA ? "through CUDA"
                                                                  : "with memcpy (host offload)");
    }
    return verdicts[device] == VERDICT_USABLE;
}

static thread_batches *this_thread(void)
{
    pthread_once(&key_once, create_key);
    thread_batches *mine = pthread_getspecific(batches_key);
    if (mine == NULL) {
        mine = calloc(1, sizeof(*mine));
        if (mine == NULL || pthread_setspecific(batches_key, mine) != 0) {
            free(mine);
            return NULL;
        }
    }
    return mine;
}

/* The calling thread's batch for the device, made on first use. */
static int thread_batch(int device, ompbatch_batch **out)
{
    thread_batches *mine = this_thread();
    if (mine == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "hook: no memory for this thread's batches");
    if (mine->batches[device] == NULL) {
        ompbatch_batch_options options = {.struct_size = sizeof(options), .synchronous = 1};
        int status = ob_batch_create_on(&mine->batches[device], &executors[device], NULL,
                                        &options);
        if (status != OMPBATCH_OK)
            return status;
        ob_batch_set_hook_mode(mine->batches[device]);
        ob_batch_set_cost_models(mine->batches[device], ob_cost_model_for);
    }
    *out = mine->batches[device];
    return OMPBATCH_OK;
}

static void count_batch(const ompbatch_batch *batch)
{
    ompbatch_stats stats = {.struct_size = sizeof(stats)};
    if (ompbatch_batch_get_stats(batch, &stats) != OMPBATCH_OK)
        return;
    ob_hook_add(&ob_hook_count.batches, 1);
    ob_hook_add(&ob_hook_count.bytes_batched, stats.bytes);
    ob_hook_add(&ob_hook_count.driver_batch_calls, stats.batch_calls);
    atomic_fetch_or_explicit(&ob_hook_count.paths, stats.paths, memory_order_relaxed);
}

/* One batch per construct: the planner picks direct or staged copies for each group (the
 * copies of a construct are usually pageable program data, which the staged strategy packs
 * and unpacks through pinned staging). */
int ob_hook_copy_run(int device, const char *label, const ob_hook_copy *copies, size_t count)
{
    ompbatch_batch *batch = NULL;
    int status = thread_batch(device, &batch);
    if (status != OMPBATCH_OK)
        return status;
    uint64_t started = ob_phase_start();
    for (size_t i = 0; i < count && status == OMPBATCH_OK; i++) {
        const ob_hook_copy *c = &copies[i];
        int dst_device = c->to_device ? device : OMPBATCH_HOST_DEVICE;
        int src_device = c->to_device ? OMPBATCH_HOST_DEVICE : device;
        uint64_t map_type = c->to_device ? OMPBATCH_MAP_TO : OMPBATCH_MAP_FROM;
        status = c->rect != NULL ? ob_batch_add_rect_or_runs(batch, c->dst, dst_device, c->src,
                                                             src_device, c->rect, map_type)
                                 : ompbatch_batch_add(batch, c->dst, dst_device, c->src,
                                                      src_device, c->bytes, map_type);
    }
    ob_phase_end(OB_PHASE_ADD, started);
    if (status == OMPBATCH_OK) {
        ob_batch_set_label(batch, label);
        status = ompbatch_batch_submit(batch);
        ob_batch_set_label(batch, NULL);
    }
    /* The wait also unpacks staged device-to-host pieces into their destinations. */
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(batch);
    if (status == OMPBATCH_OK)
        count_batch(batch);
    else
        ob_log(1, "hook: a batch of %zu copies for device %d failed (%s); the runtime makes "
                  "them instead", count, device, ompbatch_last_error());
    int reset = ompbatch_batch_reset(batch);
    return status != OMPBATCH_OK ? status : reset;
}

int ob_hook_buffer_get(int device, size_t bytes, ob_hook_buffer *out)
{
    out->bytes = NULL;
    out->region = NULL;
    if (device >= 0 && device < OB_MIRROR_MAX_DEVICES && verdicts[device] == VERDICT_USABLE &&
        executors[device].kind == OB_DEVICE_CUDA) {
        int pushed = 0;
        if (ob_driver_enter_context(executors[device].ordinal, &pushed) == OMPBATCH_OK) {
            if (ob_staging_acquire(executors[device].ordinal, bytes, 0, &out->region) ==
                OMPBATCH_OK)
                out->bytes = out->region->host;
            else
                ob_log(2, "hook: %zu bytes of pinned staging refused (%s); using host memory",
                       bytes, ompbatch_last_error());
            /* A failed pop is logged where it fails; the buffer serves either way. */
            (void)ob_driver_leave_context(pushed, OMPBATCH_OK);
        }
    }
    if (out->bytes == NULL)
        out->bytes = ob_malloc(bytes > 0 ? bytes : 1);
    return out->bytes != NULL ? 0 : -1;
}

void ob_hook_buffer_put(ob_hook_buffer *buffer)
{
    if (buffer->region != NULL)
        ob_staging_release(buffer->region);
    else
        free(buffer->bytes);
    buffer->bytes = NULL;
    buffer->region = NULL;
}

/* Device memory the runtime frees is reused for other mappings: drop what the batches learnt
 * about device addresses (hook batches do not classify device sides at all, see
 * ob_batch_set_hook_mode; host entries stay, so the next construct asks the driver nothing). */
void ob_hook_copy_forget_memory(void)
{
    pthread_once(&key_once, create_key);
    thread_batches *mine = pthread_getspecific(batches_key);
    if (mine == NULL)
        return;
    for (int d = 0; d < OB_MIRROR_MAX_DEVICES; d++)
        if (mine->batches[d] != NULL)
            ob_batch_forget_device_memory(mine->batches[d]);
}

/* Runs a registration call in the device's context. */
static int in_device_context(int device, void *host, size_t bytes, int registering)
{
    if (device < 0 || device >= OB_MIRROR_MAX_DEVICES || verdicts[device] != VERDICT_USABLE ||
        executors[device].kind != OB_DEVICE_CUDA)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "OpenMP device %d does not copy through CUDA", device);
    const ob_driver *driver = ob_driver_get();
    if (registering ? driver->fn.cuMemHostRegister == NULL
                    : driver->fn.cuMemHostUnregister == NULL)
        return ob_fail(OMPBATCH_ERR_UNSUPPORTED, "the driver has no %s",
                       registering ? "cuMemHostRegister" : "cuMemHostUnregister");
    int pushed = 0;
    int status = ob_driver_enter_context(executors[device].ordinal, &pushed);
    if (status != OMPBATCH_OK)
        return status;
    status = registering ? OB_CU(driver, cuMemHostRegister, host, bytes,
                                 CU_MEMHOSTREGISTER_PORTABLE)
                         : OB_CU(driver, cuMemHostUnregister, host);
    status = ob_driver_leave_context(pushed, status);
    /* Every batch's memory kinds and plans, this thread's or not, the program's or the hook's,
     * are learnt again: after an unregistration none may take the range for pinned. */
    ob_mem_host_changed();
    return status;
}

int ob_hook_copy_register(int device, void *host, size_t bytes)
{
    return in_device_context(device, host, bytes, 1);
}

int ob_hook_copy_unregister(int device, void *host)
{
    return in_device_context(device, host, 0, 0);
}

void ob_hook_copy_reset_for_testing(void)
{
    thread_batches *mine = this_thread();
    for (int d = 0; d < OB_MIRROR_MAX_DEVICES && mine != NULL; d++) {
        (void)ob_batch_destroy(mine->batches[d]); /* a test starting over */
        mine->batches[d] = NULL;
    }
    memset(verdicts, 0, sizeof(verdicts));
    ob_staging_free_idle();
    ob_kernels_forget_for_testing();
}
