/* Rectangular copies in the manner of omp_target_memcpy_rect. A rectangle of many small
 * contiguous runs goes into the batch as one copy with each side's geometry (walk.h), which
 * the staged strategy moves with one kernel launch and one bulk copy; any other rectangle is
 * added as one copy per contiguous run (the innermost dimension, and with it every inner
 * dimension copied whole on both sides), which the planner merges, stages or batches like any
 * copies. The one-shot form is in memcpy_api.c. */
#include "plugin/api/rect.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "plugin/api/batch.h"
#include "plugin/api/batch_add.h"
#include "plugin/core/error.h"
#include "plugin/plan/plan.h"
#include "plugin/plan/walk.h"
#include "ompbatch.h"

/* A rectangle goes whole from this many runs, of at most OB_RECT_WHOLE_MAX_RUN bytes each:
 * fewer runs cost little as copies of their own, and longer ones the copy engine moves as
 * fast as a kernel. */
#define OB_RECT_WHOLE_MIN_RUNS 64
#define OB_RECT_WHOLE_MAX_RUN ((uint64_t)16 << 10)

/* One side's geometry, in elements: where the sub-volume starts in each dimension and how far
 * apart consecutive indices of each dimension lie. */
typedef struct side {
    uintptr_t base;
    uint64_t stride[OMPBATCH_RECT_MAX_DIMS];
} side;

/* Checks a side's offsets and dimensions against the volume, and that its array fits the
 * address space from base. rect names the rectangle in messages. */
static int check_side(const char *rect, const char *name, uintptr_t base, size_t element_size,
                      int num_dims, const size_t *volume, const size_t *offsets,
                      const size_t *dimensions, side *out)
{
    uint64_t extent = element_size; /* bytes of the array from dimension d inwards */
    for (int d = num_dims - 1; d >= 0; d--) {
        if (dimensions[d] == 0)
            return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: dimension %d: the %s dimension "
                           "is 0", rect, d, name);
        if (offsets[d] > dimensions[d] || volume[d] > dimensions[d] - offsets[d])
            return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                           "%s: dimension %d: %s offset %zu + volume %zu exceeds the %s "
                           "dimension %zu",
                           rect, d, name, offsets[d], volume[d], name, dimensions[d]);
        out->stride[d] = extent / element_size;
        if (extent > UINT64_MAX / dimensions[d])
            return ob_fail(OMPBATCH_ERR_OVERFLOW, "%s: dimension %d: the %s array's size "
                           "overflows 64 bits", rect, d, name);
        extent *= dimensions[d];
    }
    if (base == 0)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "%s: %s is NULL", rect, name);
    if (extent > UINTPTR_MAX - base)
        return ob_fail(OMPBATCH_ERR_OVERFLOW, "%s: the %s array (%" PRIu64 " bytes) wraps the "
                       "address space", rect, name, extent);
    out->base = base;
    return OMPBATCH_OK;
}

int ob_batch_rect_goes_whole(uint64_t runs, uint64_t run_bytes, uint64_t bytes)
{
    return runs >= OB_RECT_WHOLE_MIN_RUNS && run_bytes <= OB_RECT_WHOLE_MAX_RUN &&
           bytes <= OB_STAGED_LEVEL_BYTES;
}

static uintptr_t address(const side *s, int dims, const size_t *offsets, const uint64_t *index,
                         size_t element_size)
{
    uint64_t element = 0;
    for (int d = 0; d < dims; d++)
        element += (offsets[d] + index[d]) * s->stride[d];
    return s->base + (uintptr_t)(element * element_size);
}

int ompbatch_batch_add_rect(ompbatch_batch *batch, void *dst, int dst_device_num,
                            const void *src, int src_device_num, size_t element_size,
                            int num_dims, const size_t *volume, const size_t *dst_offsets,
                            const size_t *src_offsets, const size_t *dst_dimensions,
                            const size_t *src_dimensions, uint64_t map_type)
{
    int status = ob_batch_check_open(batch);
    if (status != OMPBATCH_OK)
        return status;
    char rect[48];
    snprintf(rect, sizeof(rect), "rect at copy %zu", ob_batch_added(batch));
    if (element_size == 0)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: element_size is 0", rect);
    if (num_dims < 1 || num_dims > OMPBATCH_RECT_MAX_DIMS)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: num_dims %d is not from 1 to %d",
                       rect, num_dims, OMPBATCH_RECT_MAX_DIMS);
    const size_t *arrays[] = {volume, dst_offsets, src_offsets, dst_dimensions, src_dimensions};
    static const char *const names[] = {"volume", "dst_offsets", "src_offsets",
                                        "dst_dimensions", "src_dimensions"};
    for (int k = 0; k < 5; k++)
        if (arrays[k] == NULL)
            return ob_fail(OMPBATCH_ERR_NULL_POINTER, "%s: %s is NULL", rect, names[k]);
    uint64_t runs = 1;
    for (int d = 0; d < num_dims; d++)
        if (volume[d] == 0)
            runs = 0;
    side to, from;
    if ((status = check_side(rect, "dst", (uintptr_t)dst, element_size, num_dims, volume,
                             dst_offsets, dst_dimensions, &to)) != OMPBATCH_OK ||
        (status = check_side(rect, "src", (uintptr_t)src, element_size, num_dims, volume,
                             src_offsets, src_dimensions, &from)) != OMPBATCH_OK)
        return status;
    if (runs == 0)
        return OMPBATCH_OK; /* an empty volume copies nothing */
    /* The run: the innermost dimension, widened over every dimension copied whole on both
     * sides (its next-outer dimension then continues it in memory). */
    int walked = num_dims - 1;
    uint64_t run = volume[walked];
    while (walked > 0 && volume[walked] == dst_dimensions[walked] &&
           volume[walked] == src_dimensions[walked]) {
        walked--;
        run *= volume[walked];
    }
    uint64_t count = 1;
    for (int d = 0; d < walked; d++) {
        count *= volume[d]; /* each volume[d] <= its dimension, whose product fits */
        if (count > OMPBATCH_RECT_MAX_RUNS)
            return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                           "%s: more than %d contiguous runs (dimensions 0 to %d); add the "
                           "rectangle in parts",
                           rect, OMPBATCH_RECT_MAX_RUNS, walked - 1);
    }
    uint64_t run_bytes = run * element_size, total = count * run_bytes;
    if (ob_batch_rect_goes_whole(count, run_bytes, total)) {
        ob_rect whole;
        uint64_t counts[OMPBATCH_RECT_MAX_DIMS], dst_strides[OMPBATCH_RECT_MAX_DIMS],
            src_strides[OMPBATCH_RECT_MAX_DIMS];
        for (int d = 0; d < num_dims; d++) {
            counts[d] = volume[d];
            dst_strides[d] = to.stride[d] * element_size;
            src_strides[d] = from.stride[d] * element_size;
        }
        ob_walk_build(element_size, num_dims, counts, dst_strides, &whole.dst);
        ob_walk_build(element_size, num_dims, counts, src_strides, &whole.src);
        ob_rect_finish(&whole, total, count);
        uint64_t zero[OMPBATCH_RECT_MAX_DIMS] = {0};
        status = ob_batch_add_rect_or_runs(
            batch, (void *)address(&to, num_dims, dst_offsets, zero, element_size),
            dst_device_num, (const void *)address(&from, num_dims, src_offsets, zero, element_size),
            src_device_num, &whole, map_type);
        return status == OMPBATCH_OK ? OMPBATCH_OK : ob_fail_context(status, "%s: ", rect);
    }
    /* Dimensions [0, walked) are walked index by index, dimension `walked` starts each run. */
    uint64_t index[OMPBATCH_RECT_MAX_DIMS] = {0};
    for (;;) {
        uintptr_t d = address(&to, num_dims, dst_offsets, index, element_size);
        uintptr_t s = address(&from, num_dims, src_offsets, index, element_size);
        status = ompbatch_batch_add(batch, (void *)d, dst_device_num, (const void *)s,
                                    src_device_num, (size_t)(run * element_size), map_type);
        if (status != OMPBATCH_OK)
            return ob_fail_context(status, "%s: ", rect);
        int k = walked - 1;
        while (k >= 0 && ++index[k] == volume[k])
            index[k--] = 0;
        if (k < 0)
            return OMPBATCH_OK;
    }
}
