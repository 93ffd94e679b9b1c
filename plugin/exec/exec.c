#include "plugin/exec/exec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/exec/backend_staged.h"
#include "plugin/plan/route.h"

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

int ob_exec_wait(ob_exec *exec)
{
    return ob_staged_wait(exec);
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
