/* Batch objects: the public API that collects copies, plans and submits them. */
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/api/batch.h"
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/core/phase_time.h"
#include "plugin/core/struct_out.h"
#include "plugin/cuda/device.h"
#include "plugin/cuda/nvtx.h"
#include "plugin/cuda/omp_runtime.h"
#include "plugin/exec/backend.h"
#include "plugin/exec/backend_staged.h"
#include "plugin/exec/exec.h"
#include "plugin/plan/cost.h"
#include "plugin/plan/plan.h"
#include "plugin/plan/plan_cache.h"
#include "plugin/plan/walk.h"

typedef enum batch_state { BATCH_OPEN = 0, BATCH_SUBMITTED } batch_state;

/* A batch's first field says whether it is alive. Destroyed batches keep their (emptied) struct
 * for the last OB_DESTROYED_KEPT destroys, so that a use after destroy or a second destroy in
 * that window is an error naming the batch instead of a crash. */
#define OB_BATCH_ALIVE 0x0b8a7c11u
#define OB_BATCH_DESTROYED 0xdeadba7cu
#define OB_DESTROYED_KEPT 256

struct ompbatch_batch {
    unsigned magic;
    ob_device device;
    int initial_device;       /* the number, besides OMPBATCH_HOST_DEVICE, naming the host */
    CUstream stream;
    ompbatch_batch_options options;
    /* The copies as added: only what the caller gave, 40 bytes each (add is the hot path).
     * While `replaying`, added[0, count) is not written: those copies are current.keys[0,
     * count), each compared as it was added (settle_keys writes them out when needed). */
    ob_copy_key *added;
    size_t count;
    size_t added_capacity;
    int replaying;
    /* Rectangles added whole, in the order added: a key's `rect` names one. Emptied at reset;
     * a plan with rectangles points into this array and is never reused. */
    ob_rect *rects;
    size_t rect_count;
    size_t rect_capacity;
    /* The rectangles the current plan was built from, and where `rects` lay then (the plan
     * points into it): a refill reuses the plan only with the very same rectangles there.
     * Plans with rectangles are not kept among the earlier plans. */
    ob_rect *planned_rects;
    size_t planned_rect_count;
    size_t planned_rect_capacity;
    const ob_rect *planned_rects_at;
    /* The added copies spelled out for planning; the plan takes this array over. */
    ob_copy *copies;
    size_t capacity;
    batch_state state;
    ob_mem_cache cache;
    ob_exec exec;
    ompbatch_stats stats;
    int hook_mode;            /* ob_batch_set_hook_mode */
    const char *label;        /* names its NVTX ranges (ob_batch_set_label); NULL: "batch" */
    int caller_stream;        /* created on the caller's stream, not the library's */
    /* Copies naming other GPUs (multi.h): once one is added, until reset, every copy of the
     * batch goes to `multi` instead of `added`. */
    ob_multi *multi;
    int multi_active;
    const ob_multi_ops *multi_ops; /* NULL: copies of other GPUs are refused */
    /* The plan and the copies it was built from (its keys): a submit of the very same copies
     * (an iteration of a solver refilling its batch) reuses the plan instead of building it
     * again. `valid`: the plan belongs to its keys and nothing made it stale. */
    ob_cached_plan current;
    int plan_reused;          /* the last submit reused it */
    ob_plan_cache *plans;     /* earlier plans, for submits that come back to their copies
                                 (NULL until one is kept) */
    /* Where the device's cost model comes from (cost_models.c for every batch but the
     * calibration's own, which force their strategy); NULL: planned without one. */
    ob_cost_models_fn cost_models;
};

static int is_cuda(const ompbatch_batch *batch)
{
    return batch->device.kind == OB_DEVICE_CUDA;
}

/* A caller's stream must belong to the device's primary context, where the library enqueues
 * (a stream of another device or context fails every submit). Checked when the driver can
 * say (cuStreamGetCtx, CUDA 9.2 and later). */
static int check_stream_context(const ob_device *device, CUstream stream)
{
    const ob_driver *driver = ob_driver_get();
    if (driver->fn.cuStreamGetCtx == NULL)
        return OMPBATCH_OK;
    CUcontext mine = NULL, theirs = NULL;
    int status = ob_driver_primary_context(device->ordinal, &mine);
    if (status != OMPBATCH_OK || (status = ob_driver_push_context(device->ordinal)) != OMPBATCH_OK)
        return status;
    if ((status = OB_CU(driver, cuStreamGetCtx, stream, &theirs)) != OMPBATCH_OK)
        status = ob_fail_context(status, "stream %p: ", (void *)stream);
    else if (theirs != mine)
        status = ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                         "stream %p belongs to another context than device %d's (its primary "
                         "context, where ompbatch enqueues)",
                         (void *)stream, device->number);
    return ob_driver_pop_context_after(status);
}

int ob_batch_create_on(ompbatch_batch **out, const ob_device *resolved, void *stream,
                       const ompbatch_batch_options *options)
{
    int status;
    ob_device device = *resolved;
    ompbatch_batch_options opts = *options;
    *out = NULL;
    CUstream chosen = (CUstream)stream;
    if (chosen == CU_STREAM_LEGACY || chosen == CU_STREAM_PER_THREAD)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "stream %p is CUDA's %s stream, which cuMemcpyBatchAsync rejects; pass "
                       "a stream of your own or NULL for the library's",
                       stream, chosen == CU_STREAM_LEGACY ? "legacy default" : "per-thread");
    if (device.kind == OB_DEVICE_CUDA) {
        if (chosen == NULL && (status = ob_driver_own_stream(device.ordinal, &chosen)) !=
                                  OMPBATCH_OK)
            return status;
        if (stream != NULL && (status = check_stream_context(&device, chosen)) != OMPBATCH_OK)
            return status;
    } else if (chosen != NULL) {
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "stream must be NULL for device %d, which is not a CUDA device",
                       device.number);
    }
    ompbatch_batch *batch = ob_calloc(1, sizeof(*batch));
    if (batch == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate a batch");
    batch->magic = OB_BATCH_ALIVE;
    batch->device = device;
    const ob_omp_runtime *omp = ob_omp_runtime_get();
    const ob_driver *driver = ob_driver_get();
    batch->initial_device = omp->available ? omp->get_initial_device()
                                           : (driver->loaded ? driver->device_count : 0);
    batch->stream = chosen;
    batch->caller_stream = stream != NULL;
    batch->options = opts;
    batch->exec.stream = chosen;
    batch->exec.driver = is_cuda(batch) ? ob_driver_get() : NULL;
    batch->exec.ordinal = device.ordinal;
    batch->exec.max_copies = opts.max_copies ? opts.max_copies : ob_config_get()->max_copies;
    batch->stats.struct_size = sizeof(batch->stats);
    *out = batch;
    return OMPBATCH_OK;
}

/* The side a device number names when it is one of the batch's two usual numbers (its device,
 * the host); -1 for any other number. */
static inline int usual_side(const ompbatch_batch *batch, int device_num)
{
    if (device_num == batch->device.number && batch->device.kind != OB_DEVICE_HOST)
        return OB_SIDE_DEVICE;
    if (device_num == OMPBATCH_HOST_DEVICE || device_num == batch->initial_device)
        return OB_SIDE_HOST;
    return -1;
}

/* A device number of an add, resolved once: the batch's own two numbers without a look-up,
 * any other through ob_device_resolve (its error names the copy). */
static int resolve_number(const ompbatch_batch *batch, size_t index, const char *what,
                          int device_num, ob_device *out)
{
    switch (usual_side(batch, device_num)) {
    case OB_SIDE_DEVICE:
        *out = batch->device;
        return OMPBATCH_OK;
    case OB_SIDE_HOST:
        *out = (ob_device){OB_DEVICE_HOST, -1, OMPBATCH_HOST_DEVICE};
        return OMPBATCH_OK;
    default:
        break;
    }
    int status = ob_device_resolve(device_num, what, out);
    return status == OMPBATCH_OK ? OMPBATCH_OK : ob_fail_in_copy(status, index);
}

/* Which side of a single-device batch a resolved device is: its device or the host. */
static int side_of(const ompbatch_batch *batch, size_t index, const char *what, int device_num,
                   const ob_device *device, ob_side *side)
{
    if (device->kind == OB_DEVICE_HOST) {
        *side = OB_SIDE_HOST;
        return OMPBATCH_OK;
    }
    if (device->kind == batch->device.kind && device->ordinal == batch->device.ordinal &&
        device->number == batch->device.number) {
        *side = OB_SIDE_DEVICE;
        return OMPBATCH_OK;
    }
    return ob_fail_copy(OMPBATCH_ERR_INVALID_DEVICE, index,
                        "%s %d is neither the batch's device %d nor the host", what, device_num,
                        batch->device.number);
}

/* Both device numbers of an add, resolved once each. */
static int resolve_numbers(const ompbatch_batch *batch, size_t index, int dst_device_num,
                           ob_device *dst_device, int src_device_num, ob_device *src_device)
{
    int status = resolve_number(batch, index, "dst_device_num", dst_device_num, dst_device);
    if (status == OMPBATCH_OK)
        status = resolve_number(batch, index, "src_device_num", src_device_num, src_device);
    return status;
}

/* Both sides of an add to a single-device batch. */
static int sides_of(const ompbatch_batch *batch, size_t index, int dst_device_num,
                    const ob_device *dst_device, int src_device_num, const ob_device *src_device,
                    ob_side *dst_side, ob_side *src_side)
{
    int status = side_of(batch, index, "dst_device_num", dst_device_num, dst_device, dst_side);
    if (status == OMPBATCH_OK)
        status = side_of(batch, index, "src_device_num", src_device_num, src_device, src_side);
    return status;
}

/* NULL, destroyed or not a batch: every public batch function asks first. */
static int check_batch(const ompbatch_batch *batch)
{
    if (batch == NULL)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "batch is NULL");
    if (batch->magic == OB_BATCH_ALIVE)
        return OMPBATCH_OK;
    if (batch->magic == OB_BATCH_DESTROYED)
        return ob_fail(OMPBATCH_ERR_BAD_STATE, "batch %p was destroyed", (const void *)batch);
    return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "batch %p is not a batch made by ompbatch",
                   (const void *)batch);
}

static int check_open(const ompbatch_batch *batch)
{
    int status = check_batch(batch);
    if (status != OMPBATCH_OK)
        return status;
    if (batch->state != BATCH_OPEN)
        return ob_fail(OMPBATCH_ERR_BAD_STATE,
                       "the batch was submitted; reset it before adding copies");
    return OMPBATCH_OK;
}

static int check_map_type(size_t index, uint64_t map_type)
{
    uint64_t unknown = map_type & ~(uint64_t)OMPBATCH_MAP_KNOWN_BITS;
    if (unknown != 0)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, index,
                            "map_type %#" PRIx64 " has bits no OpenMP map type uses (%#" PRIx64 ")",
                            map_type, unknown);
    return OMPBATCH_OK;
}

static int check_pointer(size_t index, const char *what, const void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return ob_fail_copy(OMPBATCH_ERR_NULL_POINTER, index, "%s is NULL", what);
    if ((uintptr_t)ptr + bytes < (uintptr_t)ptr)
        return ob_fail_copy(OMPBATCH_ERR_OVERFLOW, index, "%s %p + %zu bytes overflows", what, ptr,
                            bytes);
    return OMPBATCH_OK;
}

/* A refill that matched the plan's keys so far becomes an ordinary fill: the copies matched
 * are written out to `added`, for a copy that differs or anything that reads them. A refill
 * of the same copies (a solver's loop) thus only reads the keys once, where writing them and
 * comparing them at the submit moved three times the bytes: at 4096 copies, 160 KiB a pass,
 * cold after other work, that was a third of a batch's time on the H200 host. */
static int settle_keys(ompbatch_batch *batch)
{
    if (!batch->replaying)
        return OMPBATCH_OK;
    if (batch->count > batch->added_capacity) {
        /* current.capacity >= current.count >= count: the next adds need not grow it soon */
        size_t capacity = batch->current.capacity;
        ob_copy_key *grown = ob_realloc(batch->added, capacity * sizeof(*grown));
        if (grown == NULL)
            return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot grow the batch to %zu copies",
                           capacity);
        batch->added = grown;
        batch->added_capacity = capacity;
    }
    if (batch->count > 0)
        memcpy(batch->added, batch->current.keys, batch->count * sizeof(*batch->added));
    batch->replaying = 0;
    return OMPBATCH_OK;
}

/* A slot at the end of the batch's added copies; the caller fills it and then counts it. */
static ob_copy_key *next_slot(ompbatch_batch *batch)
{
    if (settle_keys(batch) != OMPBATCH_OK)
        return NULL;
    if (ob_grow((void **)&batch->added, &batch->added_capacity, batch->count + 1,
                sizeof(*batch->added)) != 0) {
        ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot grow the batch past %zu copies", batch->count);
        return NULL;
    }
    return &batch->added[batch->count];
}

/* Whether a resolved device is a CUDA device other than a CUDA batch's own. */
static int other_gpu(const ompbatch_batch *batch, const ob_device *device)
{
    return is_cuda(batch) && device->kind == OB_DEVICE_CUDA &&
           device->ordinal != batch->device.ordinal;
}

/* A side of a copy for the multi-device state: the host or a CUDA device. */
static int multi_side(const ompbatch_batch *batch, size_t index, const char *what,
                      int device_num, const ob_device *device)
{
    if (device->kind != OB_DEVICE_CUDA && device->kind != OB_DEVICE_HOST)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_DEVICE, index,
                            "%s %d is not a CUDA device; a batch of device %d copies "
                            "between the host and CUDA devices only",
                            what, device_num, batch->device.number);
    return OMPBATCH_OK;
}

/* A copy naming another GPU: from now until reset the batch's copies go to its multi-device
 * state (multi.h), the ones added so far first. */
static int add_multi(ompbatch_batch *batch, size_t index, void *dst, int dst_device_num,
                     const ob_device *dst_device, const void *src, int src_device_num,
                     const ob_device *src_device, size_t bytes, uint64_t map_type)
{
    int status;
    ob_multi_copy copy = {(uintptr_t)dst, (uintptr_t)src, bytes, map_type, *dst_device,
                          *src_device};
    if ((status = multi_side(batch, index, "dst_device_num", dst_device_num, dst_device)) !=
            OMPBATCH_OK ||
        (status = multi_side(batch, index, "src_device_num", src_device_num, src_device)) !=
            OMPBATCH_OK)
        return status;
    if (!batch->multi_active) {
        if (batch->multi_ops == NULL)
            return ob_fail_copy(OMPBATCH_ERR_UNSUPPORTED, index,
                                "it names another GPU than the batch's device %d, and this "
                                "batch copies on its device only",
                                batch->device.number);
        if (batch->caller_stream)
            return ob_fail_copy(
                OMPBATCH_ERR_UNSUPPORTED, index,
                "it names another GPU than the batch's device %d; a batch "
                "on the caller's stream copies on its device only (create the batch "
                "with stream NULL for copies across GPUs)",
                batch->device.number);
        if (batch->multi == NULL &&
            (status = batch->multi_ops->create(&batch->multi, &batch->device, &batch->options,
                                               batch->cost_models)) != OMPBATCH_OK)
            return status;
        ob_device host = {OB_DEVICE_HOST, -1, OMPBATCH_HOST_DEVICE};
        for (size_t k = 0; k < batch->count && status == OMPBATCH_OK; k++) {
            const ob_copy_key *key = &batch->added[k];
            ob_multi_copy earlier = {key->dst, key->src, key->bytes, key->map_type,
                                     key->dst_side == OB_SIDE_DEVICE ? batch->device : host,
                                     key->src_side == OB_SIDE_DEVICE ? batch->device : host};
            if (key->rect == 0) {
                status = batch->multi_ops->add(batch->multi, &earlier);
                continue;
            }
            /* A rectangle added whole goes to the devices' batches run by run. */
            const ob_rect *rect = &batch->rects[key->rect - 1];
            ob_rect_cursor cursor;
            uint64_t dst_at, src_at, bytes;
            ob_rect_seek(rect, 0, &cursor);
            while (status == OMPBATCH_OK &&
                   ob_rect_next(rect, &cursor, rect->bytes, &dst_at, &src_at, &bytes)) {
                earlier.dst = key->dst + (uintptr_t)dst_at;
                earlier.src = key->src + (uintptr_t)src_at;
                earlier.bytes = (size_t)bytes;
                status = batch->multi_ops->add(batch->multi, &earlier);
            }
        }
        if (status != OMPBATCH_OK) {
            (void)batch->multi_ops->reset(batch->multi); /* cannot fail: nothing submitted */
            return status;
        }
        batch->count = 0;
        batch->multi_active = 1;
    }
    return batch->multi_ops->add(batch->multi, &copy);
}

int ob_batch_device_number(const ompbatch_batch *batch)
{
    return batch->device.number;
}

int ob_batch_check_open(const ompbatch_batch *batch)
{
    return check_open(batch);
}

size_t ob_batch_added(const ompbatch_batch *batch)
{
    return batch->multi_active ? batch->multi_ops->count(batch->multi) : batch->count;
}

/* Every check of an add, with its message; the fast path below sends anything unusual here. */
static int add_checked(ompbatch_batch *batch, void *dst, int dst_device_num, const void *src,
                       int src_device_num, size_t bytes, uint64_t map_type)
    __attribute__((noinline));

static int add_checked(ompbatch_batch *batch, void *dst, int dst_device_num, const void *src,
                       int src_device_num, size_t bytes, uint64_t map_type)
{
    int status = check_open(batch);
    if (status != OMPBATCH_OK)
        return status;
    size_t index = ob_batch_added(batch);
    ob_side dst_side = OB_SIDE_HOST, src_side = OB_SIDE_HOST;
    if ((status = check_map_type(index, map_type)) != OMPBATCH_OK)
        return status;
    if (bytes > 0 && ((status = check_pointer(index, "dst", dst, bytes)) != OMPBATCH_OK ||
                      (status = check_pointer(index, "src", src, bytes)) != OMPBATCH_OK))
        return status;
    ob_device dst_device, src_device; /* each number resolved once, here */
    if ((status = resolve_numbers(batch, index, dst_device_num, &dst_device, src_device_num,
                                  &src_device)) != OMPBATCH_OK)
        return status;
    if (batch->multi_active || other_gpu(batch, &dst_device) || other_gpu(batch, &src_device)) {
        if ((status = settle_keys(batch)) != OMPBATCH_OK) /* add_multi reads them */
            return status;
        return add_multi(batch, index, dst, dst_device_num, &dst_device, src, src_device_num,
                         &src_device, bytes, map_type);
    }
    if ((status = sides_of(batch, index, dst_device_num, &dst_device, src_device_num,
                           &src_device, &dst_side, &src_side)) != OMPBATCH_OK)
        return status;
    ob_copy_key *key = next_slot(batch);
    if (key == NULL)
        return OMPBATCH_ERR_NO_MEMORY;
    *key = (ob_copy_key){(uintptr_t)dst, (uintptr_t)src, bytes, map_type, dst_side, src_side,
                         0, 0};
    batch->count++;
    return OMPBATCH_OK;
}

int ob_batch_add_rect_copy(ompbatch_batch *batch, void *dst, int dst_device_num, const void *src,
                           int src_device_num, const ob_rect *rect, uint64_t map_type,
                           int *taken)
{
    *taken = 0;
    int status = check_open(batch);
    if (status != OMPBATCH_OK)
        return status;
    if (batch->multi_active || batch->rect_count >= UINT32_MAX - 1)
        return OMPBATCH_OK;
    size_t index = batch->count;
    ob_side dst_side = OB_SIDE_HOST, src_side = OB_SIDE_HOST;
    ob_device dst_device, src_device;
    if ((status = check_map_type(index, map_type)) != OMPBATCH_OK ||
        (status = check_pointer(index, "dst", dst, (size_t)rect->dst_span)) != OMPBATCH_OK ||
        (status = check_pointer(index, "src", src, (size_t)rect->src_span)) != OMPBATCH_OK ||
        (status = resolve_numbers(batch, index, dst_device_num, &dst_device, src_device_num,
                                  &src_device)) != OMPBATCH_OK)
        return status;
    if (other_gpu(batch, &dst_device) || other_gpu(batch, &src_device))
        return OMPBATCH_OK;
    if ((status = sides_of(batch, index, dst_device_num, &dst_device, src_device_num,
                           &src_device, &dst_side, &src_side)) != OMPBATCH_OK)
        return status;
    ob_copy_key *key = next_slot(batch);
    if (key == NULL)
        return OMPBATCH_ERR_NO_MEMORY;
    if (ob_grow((void **)&batch->rects, &batch->rect_capacity, batch->rect_count + 1,
                sizeof(*batch->rects)) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot keep %zu rectangles",
                       batch->rect_count + 1);
    batch->rects[batch->rect_count++] = *rect;
    *key = (ob_copy_key){(uintptr_t)dst, (uintptr_t)src, (size_t)rect->bytes, map_type,
                         dst_side, src_side, 0, (uint32_t)batch->rect_count};
    batch->count++;
    *taken = 1;
    return OMPBATCH_OK;
}

int ob_batch_add_rect_or_runs(ompbatch_batch *batch, void *dst, int dst_device_num,
                              const void *src, int src_device_num, const ob_rect *rect,
                              uint64_t map_type)
{
    int taken = 0;
    int status = ob_batch_add_rect_copy(batch, dst, dst_device_num, src, src_device_num, rect,
                                        map_type, &taken);
    if (status != OMPBATCH_OK || taken)
        return status;
    ob_rect_cursor cursor;
    uint64_t dst_at, src_at, bytes;
    ob_rect_seek(rect, 0, &cursor);
    while (status == OMPBATCH_OK &&
           ob_rect_next(rect, &cursor, rect->bytes, &dst_at, &src_at, &bytes))
        status = ompbatch_batch_add(batch, (char *)dst + dst_at, dst_device_num,
                                    (const char *)src + src_at, src_device_num, (size_t)bytes,
                                    map_type);
    return status;
}

int ompbatch_batch_add(ompbatch_batch *batch, void *dst, int dst_device_num, const void *src,
                       int src_device_num, size_t bytes, uint64_t map_type)
{
    /* add is the hot path (4096 adds were half of a 100 us batch on the H200 host): the usual
     * copy -- a live open batch with room, non-NULL pointers that do not wrap, a map type of
     * known bits, the usual device numbers -- is stored here without a call; anything else
     * goes through every check in add_checked, which also words the error. */
    if (batch != NULL && batch->magic == OB_BATCH_ALIVE && batch->state == BATCH_OPEN &&
        !batch->multi_active && dst != NULL && src != NULL &&
        (map_type & ~(uint64_t)OMPBATCH_MAP_KNOWN_BITS) == 0 &&
        (uintptr_t)dst + bytes >= (uintptr_t)dst && (uintptr_t)src + bytes >= (uintptr_t)src) {
        int dst_side = usual_side(batch, dst_device_num);
        int src_side = usual_side(batch, src_device_num);
        if (dst_side >= 0 && src_side >= 0) {
            ob_copy_key key = {(uintptr_t)dst,  (uintptr_t)src,    bytes, map_type,
                               (uint8_t)dst_side, (uint8_t)src_side, 0,     0};
            if (batch->replaying) {
                const ob_copy_key *was = batch->count < batch->current.count
                                             ? &batch->current.keys[batch->count]
                                             : NULL;
                /* Field by field: memcmp is a library call here, and cost 4x the add. */
                if (was != NULL && was->dst == key.dst && was->src == key.src &&
                    was->bytes == key.bytes && was->map_type == key.map_type &&
                    was->dst_side == key.dst_side && was->src_side == key.src_side &&
                    was->rect == 0) {
                    batch->count++;
                    return OMPBATCH_OK;
                }
                int status = settle_keys(batch);
                if (status != OMPBATCH_OK)
                    return status;
            }
            if (batch->count < batch->added_capacity) {
                batch->added[batch->count++] = key;
                return OMPBATCH_OK;
            }
        }
    }
    return add_checked(batch, dst, dst_device_num, src, src_device_num, bytes, map_type);
}

int ompbatch_batch_add_mapped(ompbatch_batch *batch, void *host_ptr, size_t bytes,
                              uint64_t map_type)
{
    int status = check_open(batch);
    if (status != OMPBATCH_OK)
        return status;
    size_t index = ob_batch_added(batch); /* a batch spanning GPUs counts in its parts */
    uint64_t direction = map_type & (OMPBATCH_MAP_TO | OMPBATCH_MAP_FROM);
    if (direction != OMPBATCH_MAP_TO && direction != OMPBATCH_MAP_FROM)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, index,
                            "map_type %#" PRIx64 " must have exactly one of "
                            "OMPBATCH_MAP_TO and OMPBATCH_MAP_FROM",
                            map_type);
    if ((status = check_map_type(index, map_type)) != OMPBATCH_OK)
        return status;
    if (batch->device.kind == OB_DEVICE_HOST)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_DEVICE, index,
                            "mapped transfers need a device batch; this batch is for the "
                            "host");
    const ob_omp_runtime *omp = ob_omp_runtime_get();
    if (!omp->available)
        omp = ob_omp_runtime_refresh();
    if (!omp->available)
        return ob_fail_copy(OMPBATCH_ERR_NO_OFFLOAD_RUNTIME, index,
                            "omp_get_mapped_ptr is not in the process; link or load an "
                            "OpenMP offload runtime (libomptarget)");
    if (bytes == 0)
        return ompbatch_batch_add(batch, NULL, batch->device.number, NULL,
                                  batch->device.number, 0, map_type);
    if ((status = check_pointer(index, "host_ptr", host_ptr, bytes)) != OMPBATCH_OK)
        return status;
    int dev = batch->device.number;
    char *first = omp->get_mapped_ptr(host_ptr, dev);
    if (first == NULL)
        return ob_fail_copy(OMPBATCH_ERR_NOT_MAPPED, index,
                            "host_ptr %p (%zu bytes) is not mapped on device %d", host_ptr, bytes,
                            dev);
    char *last = omp->get_mapped_ptr((char *)host_ptr + bytes - 1, dev);
    if (last != first + (bytes - 1))
        return ob_fail_copy(OMPBATCH_ERR_NOT_MAPPED, index,
                            "host_ptr %p is mapped on device %d but its last byte (+%zu) "
                            "%s",
                            host_ptr, dev, bytes - 1,
                            last == NULL ? "is not: the range is only partly mapped"
                                         : "maps elsewhere: the range spans several mappings");
    if (direction == OMPBATCH_MAP_TO)
        return ompbatch_batch_add(batch, first, dev, host_ptr, OMPBATCH_HOST_DEVICE, bytes,
                                  map_type);
    return ompbatch_batch_add(batch, host_ptr, OMPBATCH_HOST_DEVICE, first, dev, bytes, map_type);
}

/* Whether a rectangle stays one copy: only the host and staged backends take one whole, so
 * a batch that cannot stage (planning disabled, the direct strategy, no batch call) sends its
 * runs; so does a rectangle whose sides' spans overlap, for the planner checks a copy's
 * sides for overlap by their spans. */
static int rect_stays_whole(const ob_plan_params *params, const ob_copy_key *key,
                            const ob_rect *rect)
{
    if (params->driver != NULL && (params->disabled || params->strategy == OB_STRATEGY_DIRECT ||
                                   params->form == OMPBATCH_FORM_NONE))
        return 0;
    return !(key->dst < key->src + rect->src_span && key->src < key->dst + rect->dst_span);
}

/* Spells the added copies out into batch->copies for planning; *count_out: how many (a
 * rectangle not kept whole becomes its runs, each with the rectangle's index). */
static int expand_added(ompbatch_batch *batch, const ob_plan_params *params, size_t *count_out)
{
    size_t needed = batch->count;
    for (size_t i = 0; i < batch->count; i++) /* the runs of the rectangles not kept whole */
        if (batch->added[i].rect != 0 &&
            !rect_stays_whole(params, &batch->added[i], &batch->rects[batch->added[i].rect - 1]))
            needed += (size_t)batch->rects[batch->added[i].rect - 1].runs;
    if (ob_grow((void **)&batch->copies, &batch->capacity, needed > 0 ? needed : 1,
                sizeof(*batch->copies)) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot plan %zu copies", needed);
    size_t n = 0;
    for (size_t i = 0; i < batch->count; i++) {
        const ob_copy_key *k = &batch->added[i];
        ob_copy *c = &batch->copies[n++];
        c->dst = k->dst;
        c->src = k->src;
        c->bytes = k->bytes;
        c->rect = NULL;
        c->map_type = k->map_type;
        c->dst_side = (ob_side)k->dst_side;
        c->src_side = (ob_side)k->src_side;
        c->index = i;
        c->merged = 1;
        if (k->rect == 0)
            continue;
        const ob_rect *rect = &batch->rects[k->rect - 1];
        if (rect_stays_whole(params, k, rect)) {
            c->rect = rect;
            continue;
        }
        ob_copy whole = *c;
        n--;
        ob_rect_cursor cursor;
        uint64_t dst_at, src_at, bytes;
        ob_rect_seek(rect, 0, &cursor);
        while (ob_rect_next(rect, &cursor, rect->bytes, &dst_at, &src_at, &bytes)) {
            c = &batch->copies[n++];
            *c = whole;
            c->rect = NULL;
            c->dst = whole.dst + (uintptr_t)dst_at;
            c->src = whole.src + (uintptr_t)src_at;
            c->bytes = (size_t)bytes;
        }
    }
    *count_out = n;
    return OMPBATCH_OK;
}

/* Plans the batch's copies; `take` hands the copies' array to the plan instead of copying it
 * (submit: nothing reads the added copies afterwards, only their count). */
static int plan_copies(ompbatch_batch *batch, int take)
{
    int status = settle_keys(batch);
    if (status != OMPBATCH_OK)
        return status;
    const ob_config *config = ob_config_get();
    ob_plan_params params;
    memset(&params, 0, sizeof(params));
    params.driver = batch->exec.driver;
    if (params.driver == NULL && !batch->hook_mode && ob_driver_get()->loaded)
        params.host_driver = ob_driver_get();
    params.cache = &batch->cache;
    params.attrs.device_ordinal = batch->device.ordinal;
    params.attrs.synchronous = batch->options.synchronous;
    params.attrs.prefer_overlap = batch->options.prefer_overlap;
    params.form = params.driver ? params.driver->form : OMPBATCH_FORM_NONE;
    params.disabled = config->disable;
    params.trust_device_sides = batch->hook_mode;
    params.host_in_place = !batch->hook_mode;
    params.bounce_lone_d2h = batch->hook_mode;
    params.max_copies = batch->options.max_copies ? batch->options.max_copies
                                                  : config->max_copies;
    switch (batch->options.strategy) {
    case OMPBATCH_STRATEGY_AUTO:
        params.strategy = OB_STRATEGY_AUTO;
        break;
    case OMPBATCH_STRATEGY_DIRECT:
        params.strategy = OB_STRATEGY_DIRECT;
        break;
    case OMPBATCH_STRATEGY_STAGED:
        params.strategy = OB_STRATEGY_STAGED;
        break;
    default:
        params.strategy = config->strategy;
        break;
    }
    /* The model is built (calibrated) on the first plan that could use it: two or more
     * device copies, or a large one, automatic strategy. */
    if (params.driver != NULL && params.strategy == OB_STRATEGY_AUTO && !params.disabled &&
        (batch->count > 1 || batch->rect_count > 0 ||
         (batch->count == 1 && batch->added[0].bytes >= OB_LONE_STAGED_MIN_BYTES)))
        params.cost = batch->cost_models != NULL ? batch->cost_models(batch->device.ordinal)
                                                 : NULL;
    size_t count = 0;
    if ((status = expand_added(batch, &params, &count)) != OMPBATCH_OK)
        return status;
    if (take)
        return ob_plan_build_from(&batch->current.plan, &batch->copies, &batch->capacity, count,
                                  &params);
    return ob_plan_build(&batch->current.plan, batch->copies, count, &params);
}

static int build_plan(ompbatch_batch *batch)
{
    return plan_copies(batch, 0);
}

/* memcmp below compares keys whole: they must have no padding. */
_Static_assert(sizeof(ob_copy_key) == 5 * sizeof(uint64_t), "ob_copy_key has padding");

static int rects_match(const ompbatch_batch *batch)
{
    if (batch->rect_count != batch->planned_rect_count ||
        (batch->rect_count > 0 && batch->rects != batch->planned_rects_at))
        return 0;
    for (size_t k = 0; k < batch->rect_count; k++)
        if (!ob_rect_same(&batch->rects[k], &batch->planned_rects[k]))
            return 0;
    return 1;
}

/* Notes the rectangles of the plan just built; 0 when they cannot be kept (the plan is then
 * not reused). */
static int remember_rects(ompbatch_batch *batch)
{
    batch->planned_rect_count = 0;
    if (batch->rect_count == 0)
        return 1;
    if (ob_grow((void **)&batch->planned_rects, &batch->planned_rect_capacity, batch->rect_count,
                sizeof(*batch->planned_rects)) != 0)
        return 0;
    memcpy(batch->planned_rects, batch->rects, batch->rect_count * sizeof(ob_rect));
    batch->planned_rect_count = batch->rect_count;
    batch->planned_rects_at = batch->rects;
    return 1;
}

static int keys_match(const ompbatch_batch *batch)
{
    if (!batch->current.valid || batch->current.count != batch->count ||
        batch->current.config != ob_config_generation() || !rects_match(batch))
        return 0;
    /* A refill still replaying compared every copy as it was added. */
    return batch->replaying || batch->count == 0 ||
           memcmp(batch->added, batch->current.keys, batch->count * sizeof(ob_copy_key)) == 0;
}

/* The added copies become the keys of the plan just built from them: the two arrays trade
 * places, and the next fill writes over the old keys. `hash`: theirs, when the search for a
 * kept plan worked it out already, else 0. */
static void remember_keys(ompbatch_batch *batch, uint64_t hash)
{
    ob_copy_key *keys = batch->current.keys;
    size_t capacity = batch->current.capacity;
    if (hash == 0 && ob_plan_cache_fits(batch->count))
        hash = ob_plan_keys_hash(batch->added, batch->count);
    batch->current.keys = batch->added;
    batch->current.capacity = batch->added_capacity;
    batch->current.count = batch->count;
    batch->current.hash = hash;
    batch->added = keys;
    batch->added_capacity = capacity;
    batch->replaying = 0; /* settled by the plan (or, after a failure, never to be reused) */
}

/* Runs fn with the batch device's context current (CUDA batches only). */
static int with_context(ompbatch_batch *batch, int (*fn)(ompbatch_batch *))
{
    if (!is_cuda(batch))
        return fn(batch);
    int pushed;
    int status = ob_driver_enter_context(batch->device.ordinal, &pushed);
    if (status != OMPBATCH_OK)
        return status;
    return ob_driver_leave_context(pushed, fn(batch));
}

static void update_stats(ompbatch_batch *batch)
{
    ompbatch_stats *stats = &batch->stats;
    const ob_plan *plan = &batch->current.plan;
    stats->copies_added = batch->count;
    stats->copies_zero = plan->zero_copies;
    stats->copies_planned = plan->count;
    stats->attr_groups = plan->attr_count;
    stats->sub_batches = plan->step_count;
    stats->driver_calls = batch->exec.driver_calls;
    stats->batch_calls = batch->exec.batch_calls;
    stats->bytes = plan->bytes;
    stats->copies_done = batch->exec.done;
    stats->staged_copies = batch->exec.staged.copies;
    stats->staged_bytes = batch->exec.staged.bytes;
    stats->kernel_launches = batch->exec.staged.kernel_launches;
    stats->staging_refused = batch->exec.staged.refused;
    stats->plan_reused = (uint64_t)batch->plan_reused;
    stats->batch_fallbacks = batch->exec.batch_fallbacks;
    stats->paths = batch->exec.staged.paths;
    for (size_t s = 0; s < plan->step_count; s++) {
        switch (plan->steps[s].route) {
        case OB_ROUTE_HOST:
            stats->paths |= OMPBATCH_PATH_HOST;
            break;
        case OB_ROUTE_BATCH:
            stats->paths |= OMPBATCH_PATH_BATCH;
            break;
        case OB_ROUTE_PER_COPY:
            stats->paths |= OMPBATCH_PATH_PER_COPY;
            break;
        case OB_ROUTE_PIPELINED:
        case OB_ROUTE_STAGED: /* the paths it took are in exec->staged */
        case OB_ROUTE_COUNT:
            break;
        }
    }
}

/* The batch's plan (with its keys) and the slot's trade places; the plan going into the slot
 * stays valid only if `keep` and the slot is of its size's class. */
static void swap_with_slot(ompbatch_batch *batch, ob_cached_plan *slot, int keep)
{
    ob_cached_plan kept = batch->current;
    batch->current = *slot;
    *slot = kept;
    if (!keep || !ob_plan_cache_slot_takes(batch->plans, slot, slot->count))
        slot->valid = 0; /* its arrays stay for reuse, not its plan */
    ob_plan_cache_placed(batch->plans, slot);
}

/* Finds the added copies' plan among the kept ones and makes it the batch's, keeping the
 * batch's own in its place. Returns whether it did; *hash: the copies' hash when it was
 * worked out, else 0. */
static int take_kept_plan(ompbatch_batch *batch, uint64_t *hash)
{
    *hash = 0;
    if (!ob_plan_cache_fits(batch->count) || settle_keys(batch) != OMPBATCH_OK)
        return 0;
    *hash = ob_plan_keys_hash(batch->added, batch->count);
    ob_cached_plan *slot = ob_plan_cache_find(batch->plans, batch->added, batch->count, *hash,
                                              ob_config_generation());
    if (slot == NULL)
        return 0;
    int keep = batch->current.valid && ob_plan_cache_fits(batch->current.count) &&
               batch->planned_rect_count == 0;
    if (keep && !ob_plan_cache_slot_takes(batch->plans, slot, batch->current.count)) {
        /* The batch's plan is of the other class: it goes to a slot of its own class, whose
         * occupant gives its arrays to the found plan's slot. */
        ob_cached_plan *own = ob_plan_cache_victim(batch->plans, batch->current.count);
        ob_cached_plan evicted = *own;
        *own = batch->current;
        ob_plan_cache_placed(batch->plans, own);
        batch->current = *slot;
        *slot = evicted;
        slot->valid = 0;
        ob_plan_cache_placed(batch->plans, slot);
    } else {
        swap_with_slot(batch, slot, keep);
    }
    batch->planned_rect_count = 0; /* kept plans have none */
    return 1;
}

static int plan_and_run(ompbatch_batch *batch)
{
    int status = OMPBATCH_OK;
    uint64_t hash = 0;
    batch->plan_reused = keys_match(batch) || take_kept_plan(batch, &hash);
    if (!batch->plan_reused) {
        /* The plan about to be replaced is kept; the slot's old one gives its arrays. A
         * refill still replaying reads its copies from the plan's keys: written out first. */
        if (batch->current.valid &&
            ob_plan_cache_worth_keeping(batch->plans, batch->current.count) &&
            batch->planned_rect_count == 0 && ob_plan_cache_get(&batch->plans) != NULL &&
            (status = settle_keys(batch)) == OMPBATCH_OK)
            swap_with_slot(batch, ob_plan_cache_victim(batch->plans, batch->current.count), 1);
        if (status == OMPBATCH_OK) {
            uint64_t started = ob_phase_start();
            batch->current.config = ob_config_generation();
            status = plan_copies(batch, 1);
            remember_keys(batch, hash);
            batch->current.valid = status == OMPBATCH_OK && remember_rects(batch);
            ob_phase_end(OB_PHASE_PLAN, started);
        }
    }
    if (status == OMPBATCH_OK) {
        ob_log(2, "device %d: %zu copies -> %zu planned, %zu step(s), %zu attribute group(s)",
               batch->device.number, batch->count, batch->current.plan.count,
               batch->current.plan.step_count, batch->current.plan.attr_count);
        uint64_t started = ob_phase_start();
        status = ob_exec_run(&batch->exec, &batch->current.plan);
        ob_phase_end(OB_PHASE_ENQUEUE, started);
    }
    if (status != OMPBATCH_OK)
        batch->current.valid = 0; /* plan again after any failure */
    return status;
}

/* "ompbatch update maps.c:42 (device 0): 12 copies": what a profiler shows for a submission. */
static void push_range(const ompbatch_batch *batch)
{
    char name[256];
    snprintf(name, sizeof(name), "ompbatch %s (device %d): %zu copies",
             batch->label != NULL ? batch->label : "batch", batch->device.number, batch->count);
    ob_nvtx_push(name);
}

int ompbatch_batch_submit(ompbatch_batch *batch)
{
    int status = check_open(batch);
    if (status != OMPBATCH_OK)
        return status;
    batch->state = BATCH_SUBMITTED;
    int ranged = ob_nvtx_active();
    if (ranged)
        push_range(batch);
    if (batch->multi_active) {
        status = batch->multi_ops->submit(batch->multi);
        batch->multi_ops->stats(batch->multi, &batch->stats);
    } else {
        status = with_context(batch, plan_and_run);
        update_stats(batch);
    }
    if (ranged)
        ob_nvtx_pop();
    return status;
}

static int wait_exec(ompbatch_batch *batch)
{
    return ob_exec_wait(&batch->exec);
}

int ompbatch_batch_wait(ompbatch_batch *batch)
{
    int checked = check_batch(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    if (batch->multi_active)
        return batch->multi_ops->wait(batch->multi);
    if (!ob_exec_pending(&batch->exec))
        return OMPBATCH_OK;
    return with_context(batch, wait_exec);
}

int ompbatch_batch_reset(ompbatch_batch *batch)
{
    int checked = check_batch(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    int status = ob_exec_pending(&batch->exec) ? with_context(batch, wait_exec) : OMPBATCH_OK;
    if (batch->multi_active) {
        int waited = batch->multi_ops->reset(batch->multi);
        status = status != OMPBATCH_OK ? status : waited;
        batch->multi_active = 0;
    }
    batch->count = 0;
    batch->rect_count = 0;
    /* The refill is compared with the plan's copies as it comes (settle_keys). */
    batch->replaying = batch->current.valid && batch->current.count > 0;
    batch->state = BATCH_OPEN;
    batch->exec.done = 0;
    batch->exec.driver_calls = 0;
    batch->exec.batch_calls = 0;
    batch->exec.batch_fallbacks = 0;
    memset(&batch->exec.staged, 0, sizeof(batch->exec.staged));
    /* The plan stays: the next submit may reuse it (plan_and_run). */
    memset(&batch->stats, 0, sizeof(batch->stats));
    batch->stats.struct_size = sizeof(batch->stats);
    return status;
}

void ob_batch_forget_memory_now(ompbatch_batch *batch)
{
    ob_mem_cache_clear(&batch->cache);
    batch->current.valid = 0;
    ob_plan_cache_invalidate(batch->plans);
}

int ompbatch_batch_forget_memory(ompbatch_batch *batch)
{
    int checked = check_batch(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    /* Copies naming other GPUs are held by the multi-device state, not counted in `count`. */
    size_t pending = batch->multi_active ? batch->multi_ops->count(batch->multi) : batch->count;
    if (batch->state == BATCH_OPEN && pending > 0)
        return ob_fail(OMPBATCH_ERR_BAD_STATE,
                       "the batch holds %zu copies not yet submitted; submit or reset it first",
                       pending);
    ob_batch_forget_memory_now(batch);
    if (batch->multi != NULL)
        batch->multi_ops->forget_memory(batch->multi);
    return OMPBATCH_OK;
}

void ob_batch_set_hook_mode(ompbatch_batch *batch)
{
    batch->hook_mode = 1;
}

void ob_batch_set_multi(ompbatch_batch *batch, const ob_multi_ops *ops)
{
    batch->multi_ops = ops;
}

void ob_batch_set_cost_models(ompbatch_batch *batch, ob_cost_models_fn models)
{
    batch->cost_models = models;
}

void ob_batch_set_label(ompbatch_batch *batch, const char *label)
{
    batch->label = label;
}

void ob_batch_forget_device_memory(ompbatch_batch *batch)
{
    ob_mem_cache_forget_device(&batch->cache);
    /* A hook batch's plan knows nothing of device memory but the addresses in its keys (device
     * sides are trusted, each its own range): the same copies at the same addresses plan the
     * same, whatever was freed in between. A loop's updates keep their plan across the
     * enter and exit constructs around them. */
    if (!batch->hook_mode) {
        batch->current.valid = 0;
        ob_plan_cache_invalidate(batch->plans);
    }
}

static int wait_and_drop_kept(ompbatch_batch *batch)
{
    int status = ob_exec_pending(&batch->exec) ? ob_exec_wait(&batch->exec) : OMPBATCH_OK;
    ob_exec_release(&batch->exec);
    return status;
}

static int destroy(ompbatch_batch *batch, int keep);

int ompbatch_batch_destroy(ompbatch_batch *batch)
{
    return destroy(batch, 1);
}

int ob_batch_destroy(ompbatch_batch *batch)
{
    return destroy(batch, 0);
}

int ob_batch_destroy_after(ompbatch_batch *batch, int status)
{
    if (status == OMPBATCH_OK)
        return ob_batch_destroy(batch);
    ob_error_saved failure;
    ob_error_save(&failure);
    (void)ob_batch_destroy(batch); /* logged; the first failure is the one reported */
    return ob_error_restore(status, &failure);
}

/* The structs of the last OB_DESTROYED_KEPT batches the program destroyed (check_batch); the
 * library's own batches, which it never uses again, are freed outright so that they do not
 * push the program's out of the window. */
static pthread_mutex_t destroyed_lock = PTHREAD_MUTEX_INITIALIZER;
static ompbatch_batch *destroyed[OB_DESTROYED_KEPT];
static size_t destroyed_next;

static void keep_destroyed(ompbatch_batch *batch)
{
    pthread_mutex_lock(&destroyed_lock);
    ompbatch_batch *oldest = destroyed[destroyed_next];
    destroyed[destroyed_next] = batch;
    destroyed_next = (destroyed_next + 1) % OB_DESTROYED_KEPT;
    pthread_mutex_unlock(&destroyed_lock);
    free(oldest);
}

static int destroy(ompbatch_batch *batch, int keep)
{
    if (batch == NULL)
        return OMPBATCH_OK;
    int status = check_batch(batch);
    if (status != OMPBATCH_OK)
        return status;
    status = ob_exec_pending(&batch->exec) || batch->exec.kept_table_bytes > 0
                 ? with_context(batch, wait_and_drop_kept)
                 : OMPBATCH_OK;
    int parts = batch->multi != NULL ? batch->multi_ops->destroy(batch->multi) : OMPBATCH_OK;
    status = status != OMPBATCH_OK ? status : parts;
    ob_plan_free(&batch->current.plan);
    free(batch->current.keys);
    ob_plan_cache_free(&batch->plans);
    free(batch->added);
    free(batch->rects);
    free(batch->planned_rects);
    ob_mem_cache_free(&batch->cache);
    ob_exec_free(&batch->exec);
    free(batch->copies);
    memset(batch, 0, sizeof(*batch));
    batch->magic = OB_BATCH_DESTROYED;
    if (keep)
        keep_destroyed(batch);
    else
        free(batch);
    return status;
}

int ompbatch_batch_get_stats(const ompbatch_batch *batch, ompbatch_stats *stats)
{
    int checked = check_batch(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    /* Copies added count as soon as they are added; the rest describes the last submit. */
    ompbatch_stats current = batch->stats;
    current.copies_added = batch->multi_active ? batch->multi_ops->count(batch->multi) : batch->count;
    return ob_struct_out(stats, &current, sizeof(current), "stats", "ompbatch_stats");
}

int ompbatch_batch_describe(ompbatch_batch *batch, char *buf, size_t size, size_t *needed)
{
    int checked = check_batch(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    if (buf == NULL && size > 0)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "buf is NULL but size is %zu", size);
    if (batch->multi_active) {
        int n = snprintf(buf, size, "multi-device batch of device %d: %zu copies, split at "
                                    "submit by the device that runs each (plans per device are "
                                    "not described)\n",
                         batch->device.number, batch->multi_ops->count(batch->multi));
        if (needed != NULL)
            *needed = n > 0 ? (size_t)n : 0;
        return OMPBATCH_OK;
    }
    if (batch->state == BATCH_OPEN) {
        batch->current.valid = 0; /* the plan is rebuilt from the copies added so far */
        int status = with_context(batch, build_plan);
        if (status != OMPBATCH_OK)
            return status;
    }
    size_t length = ob_plan_describe(&batch->current.plan, buf, size);
    if (needed != NULL)
        *needed = length;
    return OMPBATCH_OK;
}
