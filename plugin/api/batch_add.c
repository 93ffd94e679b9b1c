/* The copies added to a batch: checked, their device numbers resolved to sides, kept as
 * 40-byte keys (the hot path), rectangles, mapped transfers and copies naming other GPUs. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/api/batch_add.h"
#include "plugin/api/batch_object.h"
#include "plugin/core/alloc.h"
#include "plugin/core/error.h"
#include "plugin/cuda/omp_runtime.h"

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
int ob_batch_settle_keys(ompbatch_batch *batch)
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
    if (ob_batch_settle_keys(batch) != OMPBATCH_OK)
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
    return ob_batch_is_cuda(batch) && device->kind == OB_DEVICE_CUDA &&
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

int ob_batch_check_open(const ompbatch_batch *batch)
{
    int status = ob_batch_live(batch);
    if (status != OMPBATCH_OK)
        return status;
    if (batch->state != BATCH_OPEN)
        return ob_fail(OMPBATCH_ERR_BAD_STATE,
                       "the batch was submitted; reset it before adding copies");
    return OMPBATCH_OK;
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
    int status = ob_batch_check_open(batch);
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
        if ((status = ob_batch_settle_keys(batch)) != OMPBATCH_OK) /* add_multi reads them */
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
    int status = ob_batch_check_open(batch);
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
                int status = ob_batch_settle_keys(batch);
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
    int status = ob_batch_check_open(batch);
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
