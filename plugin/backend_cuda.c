#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"
#include "backend.h"
#include "error.h"

static int reserve_scratch(ob_exec *exec, size_t needed)
{
    if (needed <= exec->scratch_capacity)
        return OMPBATCH_OK;
    CUdeviceptr *dsts = ob_realloc(exec->dsts, needed * sizeof(*dsts));
    if (dsts != NULL)
        exec->dsts = dsts;
    CUdeviceptr *srcs = ob_realloc(exec->srcs, needed * sizeof(*srcs));
    if (srcs != NULL)
        exec->srcs = srcs;
    size_t *sizes = ob_realloc(exec->sizes, needed * sizeof(*sizes));
    if (sizes != NULL)
        exec->sizes = sizes;
    if (dsts == NULL || srcs == NULL || sizes == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate a batch of %zu copies", needed);
    exec->scratch_capacity = needed;
    return OMPBATCH_OK;
}

static int describe_failure(int status, const ob_plan *plan, const ob_step *step, size_t fail)
{
    size_t n = step->end - step->begin;
    if (fail < n) {
        const ob_copy *copy = &plan->copies[step->begin + fail];
        if (copy->merged > 1)
            return ob_fail_context(status, "copy %zu (merged with %zu neighbours): ", copy->index,
                                   copy->merged - 1);
        return ob_fail_context(status, "copy %zu: ", copy->index);
    }
    return ob_fail_context(status, "batch of %zu copies (copy %zu first): ", n,
                           plan->copies[step->begin].index);
}

static int batch_run(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    const ob_driver *driver = exec->driver;
    size_t n = step->end - step->begin;
    int status = reserve_scratch(exec, n);
    if (status != OMPBATCH_OK)
        return status;
    for (size_t i = 0; i < n; i++) {
        const ob_copy *copy = &plan->copies[step->begin + i];
        exec->dsts[i] = (CUdeviceptr)copy->dst;
        exec->srcs[i] = (CUdeviceptr)copy->src;
        exec->sizes[i] = copy->bytes;
    }
    CUmemcpyAttributes *attrs = &plan->attrs[step->attr_begin];
    size_t *idxs = &plan->attr_idxs[step->attr_begin];
    size_t fail = SIZE_MAX;
    exec->driver_calls++;
    exec->batch_calls++;
    if (driver->form == OMPBATCH_FORM_V12080)
        status = OB_CU(driver, cuMemcpyBatchAsync_v12080, exec->dsts, exec->srcs, exec->sizes, n,
                       attrs, idxs, step->attr_count, &fail, exec->stream);
    else
        status = OB_CU(driver, cuMemcpyBatchAsync_v13000, exec->dsts, exec->srcs, exec->sizes, n,
                       attrs, idxs, step->attr_count, exec->stream);
    if (status != OMPBATCH_OK)
        return describe_failure(status, plan, step, fail);
    exec->stream_busy = 1;
    exec->done += n;
    return OMPBATCH_OK;
}

static int per_copy_run(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    const ob_driver *driver = exec->driver;
    for (size_t i = step->begin; i < step->end; i++) {
        const ob_copy *copy = &plan->copies[i];
        exec->driver_calls++;
        int status = OB_CU(driver, cuMemcpyAsync, (CUdeviceptr)copy->dst,
                           (CUdeviceptr)copy->src, copy->bytes, exec->stream);
        if (status != OMPBATCH_OK)
            return describe_failure(status, plan, step, i - step->begin);
        exec->stream_busy = 1;
        exec->done++;
    }
    return OMPBATCH_OK;
}

const ob_backend_ops ob_backend_cuda_batch = {
    .name = "cuda-batch",
    .run = batch_run,
};

const ob_backend_ops ob_backend_cuda_per_copy = {
    .name = "cuda-per-copy",
    .run = per_copy_run,
};
