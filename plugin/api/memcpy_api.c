/* The one-shot calls: shaped like omp_target_memcpy for arrays of copies, and like
 * omp_target_memcpy_rect for one rectangle. Each is one batch, filled, submitted and destroyed. */
#include <stdint.h>

#include "plugin/api/batch.h"
#include "plugin/core/error.h"
#include "plugin/cuda/device.h"
#include "ompbatch.h"

static int batch_device(int dst_device_num, int src_device_num, int *out)
{
    ob_device dst, src;
    int status = ob_device_resolve(dst_device_num, "dst_device_num", &dst);
    if (status == OMPBATCH_OK)
        status = ob_device_resolve(src_device_num, "src_device_num", &src);
    if (status != OMPBATCH_OK)
        return status;
    if (dst.kind != OB_DEVICE_HOST && src.kind != OB_DEVICE_HOST &&
        dst_device_num != src_device_num) {
        /* Between two GPUs: a batch of the source's, whose copies go as peer copies on its
         * stream in index order (multi.h). */
        if (dst.kind != OB_DEVICE_CUDA || src.kind != OB_DEVICE_CUDA)
            return ob_fail(OMPBATCH_ERR_UNSUPPORTED,
                           "copies between two devices (%d and %d) are supported between CUDA "
                           "devices only",
                           dst_device_num, src_device_num);
        *out = src_device_num;
        return OMPBATCH_OK;
    }
    *out = dst.kind != OB_DEVICE_HOST ? dst_device_num : src_device_num;
    return OMPBATCH_OK;
}

static int add_all(ompbatch_batch *batch, void *const *dst, const void *const *src,
                   const size_t *length, const size_t *dst_offset, const size_t *src_offset,
                   size_t count, int dst_device_num, int src_device_num)
{
    for (size_t i = 0; i < count; i++) {
        if (length[i] == 0) {
            int status = ompbatch_batch_add(batch, NULL, dst_device_num, NULL, src_device_num,
                                            0, 0);
            if (status != OMPBATCH_OK)
                return status;
            continue;
        }
        /* Offsets are added as integers and checked before a pointer is formed: a pointer
         * moved outside its object (or off NULL) is undefined even when never used. */
        uintptr_t d = (uintptr_t)dst[i], s = (uintptr_t)src[i];
        size_t doff = dst_offset ? dst_offset[i] : 0, soff = src_offset ? src_offset[i] : 0;
        if (d == 0 || s == 0)
            return ob_fail_copy(OMPBATCH_ERR_NULL_POINTER, i, "%s is NULL", d == 0 ? "dst" : "src");
        if (d + doff < d || s + soff < s)
            return ob_fail_copy(OMPBATCH_ERR_OVERFLOW, i, "pointer plus offset overflows");
        int status = ompbatch_batch_add(batch, (void *)(d + doff), dst_device_num,
                                        (const void *)(s + soff), src_device_num, length[i], 0);
        if (status != OMPBATCH_OK)
            return status;
    }
    return OMPBATCH_OK;
}

/* What a one-shot call adds to its batch. */
typedef struct fill {
    void *const *dst;
    const void *const *src;
    const size_t *length, *dst_offset, *src_offset;
    size_t count;
    int rect; /* 1: the rectangle below instead of the arrays above */
    void *rect_dst;
    const void *rect_src;
    size_t element_size;
    int num_dims;
    const size_t *volume, *dst_offsets, *src_offsets, *dst_dimensions, *src_dimensions;
} fill;

/* Creates the batch the two device numbers call for, fills it (rectangle or arrays), submits
 * it and destroys it, which waits. */
static int one_shot(const char *label, const fill *f, int dst_device_num, int src_device_num)
{
    int device_num = OMPBATCH_HOST_DEVICE;
    int status = batch_device(dst_device_num, src_device_num, &device_num);
    if (status != OMPBATCH_OK)
        return status;
    ompbatch_batch_options options = {.struct_size = sizeof(options), .synchronous = 1};
    ompbatch_batch *batch;
    if ((status = ompbatch_batch_create(&batch, device_num, NULL, &options)) != OMPBATCH_OK)
        return status;
    if (f->rect)
        status = ompbatch_batch_add_rect(batch, f->rect_dst, dst_device_num, f->rect_src,
                                         src_device_num, f->element_size, f->num_dims, f->volume,
                                         f->dst_offsets, f->src_offsets, f->dst_dimensions,
                                         f->src_dimensions, 0);
    else
        status = add_all(batch, f->dst, f->src, f->length, f->dst_offset, f->src_offset,
                         f->count, dst_device_num, src_device_num);
    if (status == OMPBATCH_OK) {
        ob_batch_set_label(batch, label);
        status = ompbatch_batch_submit(batch);
    }
    return ob_batch_destroy_after(batch, status); /* destroy waits */
}

int ompbatch_target_memcpy_batch(void *const *dst, const void *const *src, const size_t *length,
                                 const size_t *dst_offset, const size_t *src_offset, size_t count,
                                 int dst_device_num, int src_device_num)
{
    if (count == 0)
        return OMPBATCH_OK;
    if (dst == NULL || src == NULL || length == NULL)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "%s is NULL with count %zu",
                       dst == NULL ? "dst" : src == NULL ? "src" : "length", count);
    fill f = {.dst = dst, .src = src, .length = length, .dst_offset = dst_offset,
              .src_offset = src_offset, .count = count};
    return one_shot("target_memcpy_batch", &f, dst_device_num, src_device_num);
}

int ompbatch_target_memcpy_rect(void *dst, const void *src, size_t element_size, int num_dims,
                                const size_t *volume, const size_t *dst_offsets,
                                const size_t *src_offsets, const size_t *dst_dimensions,
                                const size_t *src_dimensions, int dst_device_num,
                                int src_device_num)
{
    fill f = {.rect = 1, .rect_dst = dst, .rect_src = src, .element_size = element_size,
              .num_dims = num_dims, .volume = volume, .dst_offsets = dst_offsets,
              .src_offsets = src_offsets, .dst_dimensions = dst_dimensions,
              .src_dimensions = src_dimensions};
    return one_shot("target_memcpy_rect", &f, dst_device_num, src_device_num);
}
