#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "config.h"
#include "error.h"
#include "log.h"
#include "phase_time.h"
#include "route.h"

static const ob_backend_ops *const backends[OB_ROUTE_COUNT] = {
    [OB_ROUTE_HOST] = &ob_backend_host,
    [OB_ROUTE_BATCH] = &ob_backend_cuda_batch,
    [OB_ROUTE_PER_COPY] = &ob_backend_cuda_per_copy,
    [OB_ROUTE_PIPELINED] = &ob_backend_cuda_pipelined,
};

static int run_step(ob_exec *exec, const ob_plan *plan, size_t s)
{
    const ob_step *step = &plan->steps[s];
    if (step->route != OB_ROUTE_HOST && exec->driver == NULL)
        return ob_fail_copy(OMPBATCH_ERR_NO_DRIVER, plan->copies[step->begin].index,
                            "it needs the CUDA driver");
    ob_log(3, "step %zu: level %u, %s, %zu copies", s, step->level, ob_route_name(step->route),
           step->end - step->begin);
    if (step->route == OB_ROUTE_STAGED)
        return ob_staged_prepare(exec, plan, step);
    return backends[step->route]->run(exec, plan, step);
}

/* Steps of one level are independent. Device steps of a new level are ordered after the
 * previous level by the stream; host steps (sorted first) wait for the stream themselves, so
 * they run before the level's staged work starts. The staged step (sorted last) is prepared
 * next, so that its bulk copies join the level's batch call, and finished last. */
int ob_exec_run(ob_exec *exec, const ob_plan *plan)
{
    size_t begin = 0;
    while (begin < plan->step_count) {
        size_t end = begin;
        while (end < plan->step_count && plan->steps[end].level == plan->steps[begin].level)
            end++;
        int staged = plan->steps[end - 1].route == OB_ROUTE_STAGED;
        size_t s = begin;
        int status = OMPBATCH_OK;
        for (; s < end && plan->steps[s].route == OB_ROUTE_HOST && status == OMPBATCH_OK; s++)
            status = run_step(exec, plan, s);
        if (status == OMPBATCH_OK && staged)
            status = run_step(exec, plan, end - 1);
        for (; s < end - (size_t)staged && status == OMPBATCH_OK; s++)
            status = run_step(exec, plan, s);
        if (status == OMPBATCH_OK && staged)
            status = ob_staged_finish(exec);
        exec->extra_count = 0;
        if (status != OMPBATCH_OK)
            return status;
        /* A later level may read what this level's unpacks write. */
        if (end < plan->step_count && exec->move_count > exec->unpack_begin &&
            (status = ob_exec_wait(exec)) != OMPBATCH_OK)
            return status;
        begin = end;
    }
    return OMPBATCH_OK;
}

int ob_exec_pending(const ob_exec *exec)
{
    return exec->stream_busy || exec->staging != NULL || exec->move_count > 0;
}

/* Polls the stream for OMPBATCH_WAIT_POLL_US (config.c says why). Returns 1 when it
 * finished, 0 when it is still busy (or the driver has no cuStreamQuery), and a negative
 * status on an error. */
static int poll_stream(const ob_driver *driver, CUstream stream)
{
    uint64_t budget = (uint64_t)ob_config_get()->wait_poll_us * 1000u;
    if (driver->fn.cuStreamQuery == NULL || budget == 0)
        return 0;
    uint64_t start = ob_clock_ns();
    do {
        CUresult r = driver->fn.cuStreamQuery(stream);
        if (r == CUDA_SUCCESS)
            return 1;
        if (r != CUDA_ERROR_NOT_READY)
            return ob_cu_check(driver, r, "cuStreamQuery");
    } while (ob_clock_ns() - start < budget);
    return 0;
}

int ob_stream_wait(const ob_driver *driver, CUstream stream)
{
    uint64_t started = ob_phase_start();
    int polled = poll_stream(driver, stream);
    ob_phase_end(OB_PHASE_POLL, started);
    if (polled != 0)
        return polled < 0 ? polled : OMPBATCH_OK;
    started = ob_phase_start();
    int status = OB_CU(driver, cuStreamSynchronize, stream);
    ob_phase_end(OB_PHASE_BLOCK, started);
    return status;
}

int ob_exec_wait(ob_exec *exec)
{
    int status = OMPBATCH_OK;
    if (exec->stream_busy)
        status = ob_stream_wait(exec->driver, exec->stream);
    /* A failed synchronisation leaves the stream in an unknown state; asking again would
     * report the same error, so the batch stops treating it as busy either way. */
    exec->stream_busy = 0;
    /* Staged bytes gathered for pageable destinations are only theirs after a good wait. */
    if (status != OMPBATCH_OK)
        exec->move_count = exec->unpack_begin;
    if (exec->staging != NULL || exec->move_count > 0) {
        uint64_t started = ob_phase_start();
        ob_staged_complete(exec);
        ob_phase_end(OB_PHASE_UNPACK, started);
    }
    return status;
}

void ob_exec_free(ob_exec *exec)
{
    ob_staging_release(exec->staging);
    free(exec->dsts);
    free(exec->srcs);
    free(exec->sizes);
    free(exec->moves);
    free(exec->attrs);
    free(exec->attr_idxs);
    memset(exec, 0, sizeof(*exec));
}
