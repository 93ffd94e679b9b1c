#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "config.h"
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

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Polls the stream for OMPBATCH_WAIT_POLL_US (config.c says why). Returns 1 when it
 * finished, 0 when it is still busy (or the driver has no cuStreamQuery), and a negative
 * status on an error. */
static int poll_stream(const ob_driver *driver, CUstream stream)
{
    uint64_t budget = (uint64_t)ob_config_get()->wait_poll_us * 1000u;
    if (driver->fn.cuStreamQuery == NULL || budget == 0)
        return 0;
    uint64_t start = now_ns();
    do {
        CUresult r = driver->fn.cuStreamQuery(stream);
        if (r == CUDA_SUCCESS)
            return 1;
        if (r != CUDA_ERROR_NOT_READY)
            return ob_cu_check(driver, r, "cuStreamQuery");
    } while (now_ns() - start < budget);
    return 0;
}

int ob_stream_wait(const ob_driver *driver, CUstream stream)
{
    int polled = poll_stream(driver, stream);
    return polled < 0 ? polled : polled == 1 ? OMPBATCH_OK
                                              : OB_CU(driver, cuStreamSynchronize, stream);
}

int ob_exec_wait(ob_exec *exec)
{
    if (!exec->stream_busy)
        return OMPBATCH_OK;
    int status = ob_stream_wait(exec->driver, exec->stream);
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
