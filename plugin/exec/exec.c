#include "plugin/exec/exec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/exec/backend_staged.h"
#include "plugin/exec/staged_wait.h"
#include "plugin/plan/route.h"

static const ob_backend_ops *const backends[OB_ROUTE_COUNT] = {
    [OB_ROUTE_HOST] = &ob_backend_host,
    [OB_ROUTE_BATCH] = &ob_backend_cuda_batch,
    [OB_ROUTE_PER_COPY] = &ob_backend_cuda_per_copy,
    [OB_ROUTE_PIPELINED] = &ob_backend_cuda_pipelined,
    [OB_ROUTE_STAGED] = &ob_backend_staged,
};

static int check_step(const ob_exec *exec, const ob_plan *plan, size_t s)
{
    const ob_step *step = &plan->steps[s];
    if (step->route != OB_ROUTE_HOST && exec->driver == NULL)
        return ob_fail_copy(OMPBATCH_ERR_NO_DRIVER, plan->copies[step->begin].index,
                            "it needs the CUDA driver");
    ob_log(3, "step %zu: level %u, %s, %zu copies", s, step->level, ob_route_name(step->route),
           step->end - step->begin);
    return OMPBATCH_OK;
}

/* Steps of one level are independent. Device steps of a new level are ordered after the
 * previous level by the stream; host steps (sorted first) wait for the stream themselves, so
 * they run before the level's other steps are prepared. The staged step (sorted last) packs
 * in its prepare, so that its bulk copies join the level's batch call, and ends in its
 * finish, after every other step of the level ran. */
int ob_exec_run(ob_exec *exec, const ob_plan *plan)
{
    size_t begin = 0;
    while (begin < plan->step_count) {
        size_t end = begin;
        while (end < plan->step_count && plan->steps[end].level == plan->steps[begin].level)
            end++;
        int status = OMPBATCH_OK;
        size_t first = begin; /* the level's first step that is not a host step */
        for (; first < end && plan->steps[first].route == OB_ROUTE_HOST && status == OMPBATCH_OK;
             first++) {
            const ob_backend_ops *ops = backends[OB_ROUTE_HOST];
            if ((status = check_step(exec, plan, first)) == OMPBATCH_OK &&
                (status = ops->prepare(exec, plan, &plan->steps[first])) == OMPBATCH_OK)
                status = ops->run(exec, plan, &plan->steps[first]);
        }
        for (size_t s = first; s < end && status == OMPBATCH_OK; s++)
            if ((status = check_step(exec, plan, s)) == OMPBATCH_OK)
                status = backends[plan->steps[s].route]->prepare(exec, plan, &plan->steps[s]);
        for (size_t s = first; s < end && status == OMPBATCH_OK; s++)
            status = backends[plan->steps[s].route]->run(exec, plan, &plan->steps[s]);
        for (size_t s = first; s < end && status == OMPBATCH_OK; s++)
            status = backends[plan->steps[s].route]->finish(exec);
        exec->extra_count = 0;
        if (status != OMPBATCH_OK) {
            ob_staged_abandon(exec);
            return status;
        }
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
    /* The stream wait and the completion the staged backend owns (its staging, its unpacks);
     * the host backend waits the same way before it touches memory. */
    return ob_staged_wait(exec);
}

void ob_exec_release(ob_exec *exec)
{
    for (int r = 0; r < OB_ROUTE_COUNT; r++)
        if (backends[r] != NULL)
            backends[r]->release(exec);
}

void ob_exec_free(ob_exec *exec)
{
    ob_staging_release(exec->staging);
    free(exec->dsts);
    free(exec->srcs);
    free(exec->sizes);
    free(exec->moves);
    free(exec->rect_scatters);
    free(exec->progress);
    free(exec->attrs);
    free(exec->attr_idxs);
    memset(exec, 0, sizeof(*exec));
}
