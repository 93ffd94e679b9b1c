#include "hook_copy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "batch.h"
#include "config.h"
#include "device.h"
#include "driver.h"
#include "hook_mirror.h"
#include "kernels.h"
#include "hook_stats.h"
#include "log.h"
#include "memkind.h"
#include "ompbatch.h"

typedef enum device_verdict { VERDICT_UNKNOWN = 0, VERDICT_USABLE, VERDICT_FORWARD } device_verdict;

/* Written only by data constructs, which hold the construct lock exclusively. */
static device_verdict verdicts[OB_MIRROR_MAX_DEVICES];
static ob_device executors[OB_MIRROR_MAX_DEVICES];

/* Pieces up to this size go through pinned staging. The driver copies into pageable memory
 * one piece at a time at a fraction of the speed (DESIGN.md: 1024 x 4 KiB into pageable
 * memory 9.3 ms per copy, 20.7 ms as a batch; into pinned memory 0.53 ms), and out of it
 * through its own bounce buffers: on the H200, 16 pageable 4 KiB pieces to the device took
 * 2.5 us each in a batch, where a memcpy into pinned memory costs a fraction of that. */
#define OB_STAGE_MAX_PIECE ((size_t)1 << 20)
/* Pinned memory is a scarce system resource: one area per thread and device, at most this. */
#define OB_STAGE_MAX_AREA ((size_t)64 << 20)

typedef struct pinned_area {
    void *ptr;
    size_t size;
} pinned_area;

typedef struct device_area {
    CUdeviceptr ptr;
    size_t size;
} device_area;

typedef struct thread_batches {
    ompbatch_batch *batches[OB_MIRROR_MAX_DEVICES];
    pinned_area staging[OB_MIRROR_MAX_DEVICES];
    device_area scatter_area[OB_MIRROR_MAX_DEVICES]; /* where packed pieces land */
} thread_batches;

/* The scatter kernel per device, loaded on first use (under the construct lock). */
typedef enum scatter_state { SCATTER_UNKNOWN = 0, SCATTER_READY, SCATTER_UNAVAILABLE } scatter_state;
static scatter_state scatter_states[OB_MIRROR_MAX_DEVICES];
static CUfunction scatter_functions[OB_MIRROR_MAX_DEVICES];

/* Pinned staging of every thread together, against OMPBATCH_STAGING_MB: pinned memory is
 * taken from the whole system, and a program with many threads must not pin gigabytes. The
 * device areas of the scatter kernel count against the same cap, separately. */
static atomic_size_t pinned_total;
static atomic_size_t device_total;

/* Reserves size bytes against OMPBATCH_STAGING_MB for an area that now holds `held` (freed
 * once the new one exists). Returns 0 when the cap refuses. */
static int reserve(atomic_size_t *total, size_t held, size_t size)
{
    size_t before = atomic_fetch_add(total, size);
    if (before - held + size <= ob_config_get()->staging_bytes)
        return 1;
    atomic_fetch_sub(total, size);
    return 0;
}

static void free_device_area(int device, device_area *area)
{
    if (area->ptr == 0)
        return;
    atomic_fetch_sub(&device_total, area->size);
    const ob_driver *driver = ob_driver_get();
    int pushed = 0;
    if (ob_driver_enter_context(executors[device].ordinal, &pushed) == OMPBATCH_OK) {
        OB_CU(driver, cuMemFree, area->ptr);
        ob_driver_leave_context(pushed);
    }
    area->ptr = 0;
    area->size = 0;
}

static void free_area(int device, pinned_area *area)
{
    if (area->ptr == NULL)
        return;
    atomic_fetch_sub(&pinned_total, area->size);
    const ob_driver *driver = ob_driver_get();
    int pushed = 0;
    if (ob_driver_enter_context(executors[device].ordinal, &pushed) == OMPBATCH_OK) {
        OB_CU(driver, cuMemFreeHost, area->ptr);
        ob_driver_leave_context(pushed);
    }
    area->ptr = NULL;
    area->size = 0;
}

static pthread_key_t batches_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void destroy_thread_batches(void *value)
{
    thread_batches *mine = value;
    for (int d = 0; d < OB_MIRROR_MAX_DEVICES; d++) {
        ob_batch_destroy(mine->batches[d]);
        free_area(d, &mine->staging[d]);
        free_device_area(d, &mine->scatter_area[d]);
    }
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

static ompbatch_batch *thread_batch(thread_batches *mine, int device)
{
    if (mine->batches[device] == NULL) {
        ompbatch_batch_options options = {.struct_size = sizeof(options), .synchronous = 1};
        if (ob_batch_create_on(&mine->batches[device], &executors[device], NULL, &options) !=
            OMPBATCH_OK)
            return NULL;
    }
    return mine->batches[device];
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

static size_t staged_size(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

/* Whether copy c goes through staging when `staged` bytes of it are taken; every walk over a
 * batch's copies asks this in the same order, so they agree on where each piece lies. */
static int is_staged(const ob_hook_copy *c, size_t staged)
{
    return c->bytes <= OB_STAGE_MAX_PIECE && staged + staged_size(c->bytes) <= OB_STAGE_MAX_AREA;
}

/* Bytes of pinned staging the pieces of copies want, within the caps. */
static size_t staging_wanted(const ob_hook_copy *copies, size_t count)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        if (is_staged(&copies[i], total))
            total += staged_size(copies[i].bytes);
    return total;
}

/* A pinned area of at least `bytes` for this thread and device, or NULL (no staging: the
 * pieces then go straight between their sources and destinations). */
static unsigned char *staging_area(thread_batches *mine, int device, size_t bytes)
{
    pinned_area *area = &mine->staging[device];
    if (bytes == 0 || executors[device].kind != OB_DEVICE_CUDA)
        return NULL;
    if (area->size >= bytes)
        return area->ptr;
    const ob_driver *driver = ob_driver_get();
    if (driver->fn.cuMemAllocHost == NULL || driver->fn.cuMemFreeHost == NULL)
        return NULL;
    size_t size = bytes < ((size_t)1 << 20) ? (size_t)1 << 20 : bytes;
    /* Reserve before freeing the old area: a refusal keeps it for smaller batches. */
    if (!reserve(&pinned_total, area->size, size)) {
        ob_log(2, "hook: %zu bytes of pinned staging would pass OMPBATCH_STAGING_MB; this "
                  "batch copies directly", size);
        return NULL;
    }
    free_area(device, area);
    int pushed = 0;
    void *ptr = NULL;
    int status = ob_driver_enter_context(executors[device].ordinal, &pushed);
    if (status == OMPBATCH_OK) {
        status = OB_CU(driver, cuMemAllocHost, &ptr, size);
        ob_driver_leave_context(pushed);
    }
    if (status != OMPBATCH_OK) {
        atomic_fetch_sub(&pinned_total, size);
        ob_log(1, "hook: no pinned staging (%s); this batch copies directly",
               ompbatch_last_error());
        return NULL;
    }
    area->ptr = ptr;
    area->size = size;
    return ptr;
}

/* ---- the device scatter kernel ---------------------------------------------------------- */

/* Small host-to-device pieces cost the copy engine ~2.5 us each even in one batch (H200,
 * BENCHMARKS.md); packed into pinned memory, moved by one copy and scattered on the device by
 * a kernel, they cost a copy and a launch per construct. */

static CUfunction scatter_function(int device)
{
    if (scatter_states[device] != SCATTER_UNKNOWN)
        return scatter_states[device] == SCATTER_READY ? scatter_functions[device] : NULL;
    scatter_states[device] = SCATTER_UNAVAILABLE;
    const ob_driver *driver = ob_driver_get();
    if (!ob_config_get()->scatter || driver->fn.cuModuleLoadData == NULL ||
        driver->fn.cuModuleGetFunction == NULL || driver->fn.cuLaunchKernel == NULL ||
        driver->fn.cuMemAlloc == NULL || driver->fn.cuMemFree == NULL)
        return NULL;
    int pushed = 0;
    CUmodule module = NULL;
    int status = ob_driver_enter_context(executors[device].ordinal, &pushed);
    if (status == OMPBATCH_OK) {
        status = OB_CU(driver, cuModuleLoadData, &module, ob_scatter_ptx);
        if (status == OMPBATCH_OK)
            status = OB_CU(driver, cuModuleGetFunction, &scatter_functions[device], module,
                           OB_SCATTER_KERNEL);
        ob_driver_leave_context(pushed);
    }
    if (status != OMPBATCH_OK) {
        ob_log(1, "hook: device %d: no scatter kernel (%s); host-to-device pieces go as copies",
               device, ompbatch_last_error());
        return NULL;
    }
    ob_log(1, "hook: device %d: scatter kernel loaded", device);
    scatter_states[device] = SCATTER_READY;
    return scatter_functions[device];
}

/* Bytes the scatter of copies needs (descriptors, then the pieces), or 0 when the copies are
 * not all small host-to-device pieces. */
static size_t scatter_bytes(const ob_hook_copy *copies, size_t count)
{
    if (count < 2)
        return 0;
    size_t total = staged_size(count * sizeof(ob_scatter_piece));
    for (size_t i = 0; i < count; i++) {
        if (!copies[i].to_device || copies[i].bytes > OB_STAGE_MAX_PIECE)
            return 0;
        total += staged_size(copies[i].bytes);
        if (total > OB_STAGE_MAX_AREA)
            return 0;
    }
    return total;
}

static int device_area_of(thread_batches *mine, int device, size_t bytes, CUdeviceptr *out)
{
    device_area *area = &mine->scatter_area[device];
    if (area->size < bytes) {
        const ob_driver *driver = ob_driver_get();
        size_t size = bytes < ((size_t)1 << 20) ? (size_t)1 << 20 : bytes;
        if (!reserve(&device_total, area->size, size))
            return OMPBATCH_ERR_NO_MEMORY;
        free_device_area(device, area);
        int pushed = 0;
        int status = ob_driver_enter_context(executors[device].ordinal, &pushed);
        if (status == OMPBATCH_OK) {
            status = OB_CU(driver, cuMemAlloc, &area->ptr, size);
            ob_driver_leave_context(pushed);
        }
        if (status != OMPBATCH_OK) {
            area->ptr = 0;
            atomic_fetch_sub(&device_total, size);
            return status;
        }
        area->size = size;
    }
    *out = area->ptr;
    return OMPBATCH_OK;
}

/* Packs the pieces and their descriptors into the pinned area, copies them to the device area
 * and launches the kernel on the library's stream; waits. */
static int scatter_run(thread_batches *mine, int device, CUfunction fn, unsigned char *staging,
                       size_t bytes, const ob_hook_copy *copies, size_t count)
{
    const ob_driver *driver = ob_driver_get();
    CUdeviceptr area = 0;
    CUstream stream = NULL;
    int status = device_area_of(mine, device, bytes, &area);
    if (status == OMPBATCH_OK)
        status = ob_driver_own_stream(executors[device].ordinal, &stream);
    if (status != OMPBATCH_OK)
        return status;
    ob_scatter_piece *pieces = (ob_scatter_piece *)staging;
    size_t offset = staged_size(count * sizeof(ob_scatter_piece));
    for (size_t i = 0; i < count; i++) {
        memcpy(staging + offset, copies[i].src, copies[i].bytes);
        pieces[i].dst = (uint64_t)(uintptr_t)copies[i].dst;
        pieces[i].offset = offset;
        pieces[i].bytes = copies[i].bytes;
        offset += staged_size(copies[i].bytes);
    }
    int pushed = 0;
    if ((status = ob_driver_enter_context(executors[device].ordinal, &pushed)) != OMPBATCH_OK)
        return status;
    CUdeviceptr pieces_arg = area, packed_arg = area;
    unsigned int n = (unsigned int)count;
    void *params[] = {&pieces_arg, &packed_arg, &n};
    unsigned int blocks = count < 1024 ? (unsigned int)count : 1024;
    status = OB_CU(driver, cuMemcpyAsync, area, (CUdeviceptr)(uintptr_t)staging, offset, stream);
    if (status == OMPBATCH_OK)
        status = OB_CU(driver, cuLaunchKernel, fn, blocks, 1, 1, 256, 1, 1, 0, stream, params,
                       NULL);
    /* Whatever was enqueued must be finished before the staging is reused. */
    int waited = ob_stream_wait(driver, stream);
    ob_driver_leave_context(pushed);
    if (status == OMPBATCH_OK)
        status = waited;
    if (status == OMPBATCH_OK) {
        ob_hook_add(&ob_hook_count.batches, 1);
        size_t descriptors = staged_size(count * sizeof(ob_scatter_piece));
        ob_hook_add(&ob_hook_count.bytes_batched, offset - descriptors);
        atomic_fetch_or_explicit(&ob_hook_count.paths, OMPBATCH_PATH_KERNEL,
                                 memory_order_relaxed);
    }
    return status;
}

int ob_hook_copy_run(int device, const ob_hook_copy *copies, size_t count)
{
    thread_batches *mine = this_thread();
    ompbatch_batch *batch = mine != NULL ? thread_batch(mine, device) : NULL;
    if (batch == NULL)
        return OMPBATCH_ERR_NO_MEMORY;
    size_t scatter = executors[device].kind == OB_DEVICE_CUDA ? scatter_bytes(copies, count) : 0;
    CUfunction fn = scatter > 0 ? scatter_function(device) : NULL;
    if (fn != NULL) {
        unsigned char *area = staging_area(mine, device, scatter);
        int status = area != NULL ? scatter_run(mine, device, fn, area, scatter, copies, count)
                                  : OMPBATCH_ERR_NO_MEMORY;
        if (status == OMPBATCH_OK)
            return OMPBATCH_OK;
        if (status != OMPBATCH_ERR_NO_MEMORY) {
            ob_log(1, "hook: the scatter of %zu pieces for device %d failed (%s); the runtime "
                      "makes them instead", count, device, ompbatch_last_error());
            return status;
        }
        /* No room for staging: the pieces go as copies below. */
    }
    unsigned char *staging = staging_area(mine, device, staging_wanted(copies, count));
    int status = OMPBATCH_OK;
    size_t staged = 0;
    for (size_t i = 0; i < count && status == OMPBATCH_OK; i++) {
        const ob_hook_copy *c = &copies[i];
        void *dst = c->dst;
        const void *src = c->src;
        if (staging != NULL && is_staged(c, staged)) {
            if (c->to_device) {
                memcpy(staging + staged, c->src, c->bytes);
                src = staging + staged;
            } else {
                dst = staging + staged;
            }
            staged += staged_size(c->bytes);
        }
        status = ompbatch_batch_add(batch, dst, c->to_device ? device : OMPBATCH_HOST_DEVICE,
                                    src, c->to_device ? OMPBATCH_HOST_DEVICE : device, c->bytes,
                                    c->to_device ? OMPBATCH_MAP_TO : OMPBATCH_MAP_FROM);
    }
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(batch);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(batch);
    if (status == OMPBATCH_OK) {
        /* The same walk as above hands each staged device-to-host piece to its destination. */
        staged = 0;
        for (size_t i = 0; i < count && staging != NULL; i++) {
            const ob_hook_copy *c = &copies[i];
            if (is_staged(c, staged)) {
                if (!c->to_device)
                    memcpy(c->dst, staging + staged, c->bytes);
                staged += staged_size(c->bytes);
            }
        }
        count_batch(batch);
    }
    else
        ob_log(1, "hook: a batch of %zu copies for device %d failed (%s); the runtime makes "
                     "them instead", count, device, ompbatch_last_error());
    int reset = ompbatch_batch_reset(batch);
    return status != OMPBATCH_OK ? status : reset;
}

/* Device memory the runtime frees is reused for other mappings: drop what the batches
 * learnt about addresses. */
void ob_hook_copy_forget_memory(void)
{
    pthread_once(&key_once, create_key);
    thread_batches *mine = pthread_getspecific(batches_key);
    if (mine == NULL)
        return;
    for (int d = 0; d < OB_MIRROR_MAX_DEVICES; d++)
        if (mine->batches[d] != NULL)
            ompbatch_batch_forget_memory(mine->batches[d]);
}

void ob_hook_copy_reset_for_testing(void)
{
    thread_batches *mine = this_thread();
    for (int d = 0; d < OB_MIRROR_MAX_DEVICES && mine != NULL; d++) {
        ob_batch_destroy(mine->batches[d]);
        mine->batches[d] = NULL;
        free_area(d, &mine->staging[d]);
        free_device_area(d, &mine->scatter_area[d]);
    }
    memset(verdicts, 0, sizeof(verdicts));
    memset(scatter_states, 0, sizeof(scatter_states));
}
