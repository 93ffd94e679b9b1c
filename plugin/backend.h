/* Backends execute the steps of a plan. Each is a const operations table; the executor picks
 * one per step by the step's route. */
#ifndef OMPBATCH_PLUGIN_BACKEND_H
#define OMPBATCH_PLUGIN_BACKEND_H

#include <stddef.h>

#include "driver.h"
#include "plan.h"

typedef struct ob_exec {
    const ob_driver *driver;   /* NULL for host-only batches */
    CUstream stream;
    size_t done;               /* planned copies enqueued (or performed) successfully */
    size_t driver_calls;
    size_t batch_calls;        /* the cuMemcpyBatchAsync calls among driver_calls */
    int stream_busy;           /* device work enqueued since the last synchronisation */
    /* Scratch arrays for one driver batch call, grown as needed. */
    CUdeviceptr *dsts;
    CUdeviceptr *srcs;
    size_t *sizes;
    size_t scratch_capacity;
} ob_exec;

typedef struct ob_backend_ops {
    const char *name;
    /* Runs one step; on failure the thread's message names the copy (as added) at fault. */
    int (*run)(ob_exec *exec, const ob_plan *plan, const ob_step *step);
} ob_backend_ops;

extern const ob_backend_ops ob_backend_host;
extern const ob_backend_ops ob_backend_cuda_batch;
extern const ob_backend_ops ob_backend_cuda_per_copy;

/* Runs every step of a plan in order. The caller has made the device's context current when
 * exec->driver is set. */
int ob_exec_run(ob_exec *exec, const ob_plan *plan);

/* Waits for the device work of the batch (no-op when none is outstanding). */
int ob_exec_wait(ob_exec *exec);

/* Waits for everything enqueued on stream: polls for OMPBATCH_WAIT_POLL_US, then blocks. */
int ob_stream_wait(const ob_driver *driver, CUstream stream);

void ob_exec_free(ob_exec *exec);

#endif
