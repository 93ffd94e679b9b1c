/* The one-shot call shaped like omp_target_memcpy, for arrays of copies. */
#include <stdint.h>

#include "batch.h"
#include "device.h"
#include "error.h"
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
            return ob_fail(OMPBATCH_ERR_NULL_POINTER, "copy %zu: %s is NULL", i,
                           d == 0 ? "dst" : "src");
        if (d + doff < d || s + soff < s)
            return ob_fail(OMPBATCH_ERR_OVERFLOW, "copy %zu: pointer plus offset overflows", i);
        int status = ompbatch_batch_add(batch, (void *)(d + doff), dst_device_num,
                                        (const void *)(s + soff), src_device_num, length[i], 0);
        if (status != OMPBATCH_OK)
            return status;
    }
    return OMPBATCH_OK;
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
    int device_num = OMPBATCH_HOST_DEVICE;
    int status = batch_device(dst_device_num, src_device_num, &device_num);
    if (status != OMPBATCH_OK)
        return status;
    ompbatch_batch_options options = {.struct_size = sizeof(options), .synchronous = 1};
    ompbatch_batch *batch;
    if ((status = ompbatch_batch_create(&batch, device_num, NULL, &options)) != OMPBATCH_OK)
        return status;
    status = add_all(batch, dst, src, length, dst_offset, src_offset, count, dst_device_num,
                     src_device_num);
    if (status == OMPBATCH_OK) {
        ob_batch_set_label(batch, "target_memcpy_batch");
        status = ompbatch_batch_submit(batch);
    }
    /* Destroy waits; its status matters only when everything before succeeded, and otherwise
     * must not overwrite the message of the first failure. */
    if (status == OMPBATCH_OK)
        return ompbatch_batch_destroy(batch);
    (void)ob_batch_destroy(batch);
    return status;
}
