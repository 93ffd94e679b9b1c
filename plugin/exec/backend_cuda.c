#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/core/phase_time.h"
#include "plugin/cuda/stream_wait.h"
#include "plugin/exec/backend.h"

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

static int reserve_attrs(ob_exec *exec, size_t needed)
{
    if (needed <= exec->attr_capacity)
        return OMPBATCH_OK;
    CUmemcpyAttributes *attrs = ob_realloc(exec->attrs, needed * sizeof(*attrs));
    if (attrs != NULL)
        exec->attrs = attrs;
    size_t *idxs = ob_realloc(exec->attr_idxs, needed * sizeof(*idxs));
    if (idxs != NULL)
        exec->attr_idxs = idxs;
    if (attrs == NULL || idxs == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate %zu attribute entries", needed);
    exec->attr_capacity = needed;
    return OMPBATCH_OK;
}

/* Appends the staged strategy's bulk copies, waiting in exec, to this call's n entries: the
 * copy engine's part of a submit stays one cuMemcpyBatchAsync. */
static int take_extras(ob_exec *exec, const ob_plan *plan, const ob_step *step, size_t *n,
                       CUmemcpyAttributes **attrs, size_t **idxs, size_t *attr_count)
{
    size_t extra = exec->extra_count;
    if (extra == 0 || (exec->max_copies > 0 && *n + extra > exec->max_copies))
        return OMPBATCH_OK;
    int status = reserve_scratch(exec, *n + extra);
    if (status == OMPBATCH_OK)
        status = reserve_attrs(exec, step->attr_count + 1);
    if (status != OMPBATCH_OK)
        return status;
    memcpy(exec->attrs, &plan->attrs[step->attr_begin], step->attr_count * sizeof(*exec->attrs));
    memcpy(exec->attr_idxs, &plan->attr_idxs[step->attr_begin],
           step->attr_count * sizeof(*exec->attr_idxs));
    /* Staging is written by the CPU before the call or by the kernel before it on the
     * stream: read in stream order. */
    memset(&exec->attrs[step->attr_count], 0, sizeof(*exec->attrs));
    exec->attrs[step->attr_count].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    exec->attr_idxs[step->attr_count] = *n;
    for (size_t e = 0; e < extra; e++) {
        exec->dsts[*n + e] = exec->extra_dsts[e];
        exec->srcs[*n + e] = exec->extra_srcs[e];
        exec->sizes[*n + e] = exec->extra_sizes[e];
    }
    *n += extra;
    *attrs = exec->attrs;
    *idxs = exec->attr_idxs;
    *attr_count = step->attr_count + 1;
    exec->extra_count = 0;
    return OMPBATCH_OK;
}

static int describe_failure(int status, const ob_plan *plan, const ob_step *step, size_t fail)
{
    size_t n = step->end - step->begin;
    if (fail < n) {
        const ob_copy *copy = &plan->copies[step->begin + fail];
        if (copy->merged > 1)
            return ob_fail_copy_context(status, copy->index, " (merged with %zu neighbours)",
                                        copy->merged - 1);
        return ob_fail_in_copy(status, copy->index);
    }
    return ob_fail_context(status, "batch of %zu copies (copy %zu first): ", n,
                           plan->copies[step->begin].index);
}

/* The batch call failed (logged, and left as the thread's message): the step's entries -- its
 * copies, then any staged bulk copies it carried -- go again one cuMemcpyAsync each. The
 * copies of a step are independent (dependent ones are in later levels), so any the failed
 * call did enqueue are only done twice. A source that must be read during the call (LITERAL,
 * PRIVATE) is waited for before returning, as the batch call would have read it. If a copy
 * fails here too, that failure is reported, naming the copy. */
static int fall_back(ob_exec *exec, const ob_plan *plan, const ob_step *step, size_t entries,
                     size_t n, int batch_status, size_t batch_fail)
{
    const ob_driver *driver = exec->driver;
    describe_failure(batch_status, plan, step, batch_fail);
    ob_log(1, "%s; sending its %zu entries one by one", ompbatch_last_error(), entries);
    int read_now = 0;
    for (size_t i = 0; i < n; i++)
        if (plan->copies[step->begin + i].attr.srcAccessOrder ==
            CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL)
            read_now = 1;
    for (size_t i = 0; i < entries; i++) {
        exec->driver_calls++;
        int status = OB_CU(driver, cuMemcpyAsync, exec->dsts[i], exec->srcs[i], exec->sizes[i],
                           exec->stream);
        if (status != OMPBATCH_OK)
            return describe_failure(status, plan, step, i);
        ob_exec_enqueued(exec);
    }
    exec->done += n;
    exec->staged.paths |= OMPBATCH_PATH_PER_COPY;
    exec->batch_fallbacks++;
    if (read_now) {
        int status = ob_stream_wait(driver, exec->stream);
        if (status != OMPBATCH_OK)
            return ob_fail_context(status, "after sending a failed batch's copies one by one: ");
    }
    return OMPBATCH_OK;
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
    size_t attr_count = step->attr_count, entries = n;
    if ((status = take_extras(exec, plan, step, &entries, &attrs, &idxs, &attr_count)) !=
        OMPBATCH_OK)
        return status;
    size_t fail = SIZE_MAX;
    exec->driver_calls++;
    exec->batch_calls++;
    uint64_t started = ob_phase_start();
    if (driver->form == OMPBATCH_FORM_V12080)
        status = OB_CU(driver, cuMemcpyBatchAsync_v12080, exec->dsts, exec->srcs, exec->sizes,
                       entries, attrs, idxs, attr_count, &fail, exec->stream);
    else
        status = OB_CU(driver, cuMemcpyBatchAsync_v13000, exec->dsts, exec->srcs, exec->sizes,
                       entries, attrs, idxs, attr_count, exec->stream);
    ob_phase_end(OB_PHASE_COPY_CALL, started);
    if (status != OMPBATCH_OK)
        return fall_back(exec, plan, step, entries, n, status, fail);
    ob_exec_enqueued(exec);
    exec->done += n;
    return OMPBATCH_OK;
}

static int copy_async(ob_exec *exec, uintptr_t dst, uintptr_t src, size_t bytes)
{
    exec->driver_calls++;
    uint64_t started = ob_phase_start();
    int status = OB_CU(exec->driver, cuMemcpyAsync, (CUdeviceptr)dst, (CUdeviceptr)src, bytes,
                       exec->stream);
    ob_phase_end(OB_PHASE_COPY_CALL, started);
    if (status == OMPBATCH_OK)
        ob_exec_enqueued(exec);
    return status;
}

/* A rectangle comes here only when its staged step could not stage: run by run. */
static int copy_rect_async(ob_exec *exec, const ob_copy *copy)
{
    ob_rect_cursor cursor;
    uint64_t dst_at, src_at, bytes;
    int status = OMPBATCH_OK;
    ob_rect_seek(copy->rect, 0, &cursor);
    while (status == OMPBATCH_OK &&
           ob_rect_next(copy->rect, &cursor, copy->bytes, &dst_at, &src_at, &bytes))
        status = copy_async(exec, copy->dst + (uintptr_t)dst_at, copy->src + (uintptr_t)src_at,
                            (size_t)bytes);
    return status;
}

static int per_copy_run(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    for (size_t i = step->begin; i < step->end; i++) {
        const ob_copy *copy = &plan->copies[i];
        int status = copy->rect != NULL ? copy_rect_async(exec, copy)
                                        : copy_async(exec, copy->dst, copy->src, copy->bytes);
        if (status != OMPBATCH_OK)
            return describe_failure(status, plan, step, i - step->begin);
        exec->done++;
    }
    return OMPBATCH_OK;
}

const ob_backend_ops ob_backend_cuda_batch = OB_BACKEND_RUN_ONLY("cuda-batch", batch_run);

const ob_backend_ops ob_backend_cuda_per_copy = OB_BACKEND_RUN_ONLY("cuda-per-copy",
                                                                    per_copy_run);
