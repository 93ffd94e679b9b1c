#include <string.h>

#include "plugin/exec/backend.h"
#include "plugin/exec/staged_wait.h"

static void copy_plain(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

/* Host copies run on the calling thread at submit. Device work of earlier levels, or an
 * earlier asynchronous copy into pinned memory on this stream (perhaps from another batch),
 * must land first, so a device batch always synchronises its stream here. */
static int host_run(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    if (exec->driver != NULL && exec->stream != NULL)
        exec->stream_busy = 1;
    int status = ob_staged_wait(exec);
    if (status != OMPBATCH_OK)
        return status;
    for (size_t i = step->begin; i < step->end; i++) {
        const ob_copy *copy = &plan->copies[i];
        if (copy->rect != NULL)
            ob_walk_copy((void *)copy->dst, &copy->rect->dst, (const void *)copy->src,
                         &copy->rect->src, 0, copy->bytes, copy_plain);
        else
            memcpy((void *)copy->dst, (const void *)copy->src, copy->bytes);
        exec->done++;
    }
    return OMPBATCH_OK;
}

const ob_backend_ops ob_backend_host = OB_BACKEND_RUN_ONLY("host", host_run);
