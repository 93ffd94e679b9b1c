#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "error.h"
#include "log.h"

static const ob_backend_ops *const backends[OB_ROUTE_COUNT] = {
    [OB_ROUTE_HOST] = &ob_backend_host,
    [OB_ROUTE_BATCH] = &ob_backend_cuda_batch,
    [OB_ROUTE_PER_COPY] = &ob_backend_cuda_per_copy,
};

int ob_exec_run(ob_exec *exec, const ob_plan *plan)
{
    for (size_t s = 0; s < plan->step_count; s++) {
        const ob_step *step = &plan->steps[s];
        if (step->route != OB_ROUTE_HOST && exec->driver == NULL)
            return ob_fail(OMPBATCH_ERR_NO_DRIVER, "copy %zu needs the CUDA driver",
                           plan->copies[step->begin].index);
        /* Steps of one level are independent. Device steps of a new level are ordered after
         * the previous level by the stream; host steps wait for the stream themselves. */
        ob_log(3, "step %zu: level %u, %s, %zu copies", s, step->level, backends[step->route]->name,
               step->end - step->begin);
        int status = backends[step->route]->run(exec, plan, step);
        if (status != OMPBATCH_OK)
            return status;
    }
    return OMPBATCH_OK;
}

int ob_exec_wait(ob_exec *exec)
{
    if (!exec->stream_busy)
        return OMPBATCH_OK;
    int status = OB_CU(exec->driver, cuStreamSynchronize, exec->stream);
    /* A failed synchronisation leaves the stream in an unknown state; asking again would
     * report the same error, so the batch stops treating it as busy either way. */
    exec->stream_busy = 0;
    return status;
}

void ob_exec_free(ob_exec *exec)
{
    free(exec->dsts);
    free(exec->srcs);
    free(exec->sizes);
    memset(exec, 0, sizeof(*exec));
}
