/* Batch objects: the public API that collects copies, plans and submits them -- their life:
 * create, submit, wait, reset, forget, destroy, statistics and description (batch_add.c adds
 * the copies, batch_plan.c plans them). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/api/batch.h"
#include "plugin/api/batch_add.h"
#include "plugin/api/batch_object.h"
#include "plugin/api/batch_plan.h"
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/struct_out.h"
#include "plugin/cuda/nvtx.h"
#include "plugin/cuda/omp_runtime.h"
#include "plugin/exec/backend.h"

/* A caller's stream must belong to the device's primary context, where the library enqueues
 * (a stream of another device or context fails every submit). Checked when the driver can
 * say (cuStreamGetCtx, CUDA 9.2 and later). */
static int check_stream_context(const ob_device *device, CUstream stream)
{
    const ob_driver *driver = ob_driver_get();
    if (driver->fn.cuStreamGetCtx == NULL)
        return OMPBATCH_OK;
    CUcontext mine = NULL, theirs = NULL;
    int status = ob_driver_primary_context(device->ordinal, &mine);
    if (status != OMPBATCH_OK || (status = ob_driver_push_context(device->ordinal)) != OMPBATCH_OK)
        return status;
    if ((status = OB_CU(driver, cuStreamGetCtx, stream, &theirs)) != OMPBATCH_OK)
        status = ob_fail_context(status, "stream %p: ", (void *)stream);
    else if (theirs != mine)
        status = ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                         "stream %p belongs to another context than device %d's (its primary "
                         "context, where ompbatch enqueues)",
                         (void *)stream, device->number);
    return ob_driver_pop_context_after(status);
}

int ob_batch_create_on(ompbatch_batch **out, const ob_device *resolved, void *stream,
                       const ompbatch_batch_options *options)
{
    int status;
    ob_device device = *resolved;
    ompbatch_batch_options opts = *options;
    *out = NULL;
    CUstream chosen = (CUstream)stream;
    if (chosen == CU_STREAM_LEGACY || chosen == CU_STREAM_PER_THREAD)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "stream %p is CUDA's %s stream, which cuMemcpyBatchAsync rejects; pass "
                       "a stream of your own or NULL for the library's",
                       stream, chosen == CU_STREAM_LEGACY ? "legacy default" : "per-thread");
    if (device.kind == OB_DEVICE_CUDA) {
        if (chosen == NULL && (status = ob_driver_own_stream(device.ordinal, &chosen)) !=
                                  OMPBATCH_OK)
            return status;
        if (stream != NULL && (status = check_stream_context(&device, chosen)) != OMPBATCH_OK)
            return status;
    } else if (chosen != NULL) {
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "stream must be NULL for device %d, which is not a CUDA device",
                       device.number);
    }
    ompbatch_batch *batch = ob_calloc(1, sizeof(*batch));
    if (batch == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate a batch");
    batch->magic = OB_BATCH_ALIVE;
    batch->device = device;
    const ob_omp_runtime *omp = ob_omp_runtime_get();
    const ob_driver *driver = ob_driver_get();
    batch->initial_device = omp->available ? omp->get_initial_device()
                                           : (driver->loaded ? driver->device_count : 0);
    batch->stream = chosen;
    batch->caller_stream = stream != NULL;
    batch->options = opts;
    batch->exec.stream = chosen;
    batch->exec.driver = ob_batch_is_cuda(batch) ? ob_driver_get() : NULL;
    batch->exec.ordinal = device.ordinal;
    batch->exec.max_copies = opts.max_copies ? opts.max_copies : ob_config_get()->max_copies;
    batch->stats.struct_size = sizeof(batch->stats);
    *out = batch;
    return OMPBATCH_OK;
}

int ob_batch_device_number(const ompbatch_batch *batch)
{
    return batch->device.number;
}

/* Runs fn with the batch device's context current (CUDA batches only). */
static int with_context(ompbatch_batch *batch, int (*fn)(ompbatch_batch *))
{
    if (!ob_batch_is_cuda(batch))
        return fn(batch);
    int pushed;
    int status = ob_driver_enter_context(batch->device.ordinal, &pushed);
    if (status != OMPBATCH_OK)
        return status;
    return ob_driver_leave_context(pushed, fn(batch));
}

static void update_stats(ompbatch_batch *batch)
{
    ompbatch_stats *stats = &batch->stats;
    const ob_plan *plan = &batch->current.plan;
    stats->copies_added = batch->count;
    stats->copies_zero = plan->zero_copies;
    stats->copies_planned = plan->count;
    stats->attr_groups = plan->attr_count;
    stats->sub_batches = plan->step_count;
    stats->driver_calls = batch->exec.driver_calls;
    stats->batch_calls = batch->exec.batch_calls;
    stats->bytes = plan->bytes;
    stats->copies_done = batch->exec.done;
    stats->staged_copies = batch->exec.staged.copies;
    stats->staged_bytes = batch->exec.staged.bytes;
    stats->kernel_launches = batch->exec.staged.kernel_launches;
    stats->staging_refused = batch->exec.staged.refused;
    stats->plan_reused = (uint64_t)batch->plan_reused;
    stats->batch_fallbacks = batch->exec.batch_fallbacks;
    stats->paths = batch->exec.staged.paths;
    for (size_t s = 0; s < plan->step_count; s++) {
        switch (plan->steps[s].route) {
        case OB_ROUTE_HOST:
            stats->paths |= OMPBATCH_PATH_HOST;
            break;
        case OB_ROUTE_BATCH:
            stats->paths |= OMPBATCH_PATH_BATCH;
            break;
        case OB_ROUTE_PER_COPY:
            stats->paths |= OMPBATCH_PATH_PER_COPY;
            break;
        case OB_ROUTE_PIPELINED:
        case OB_ROUTE_STAGED: /* the paths it took are in exec->staged */
        case OB_ROUTE_COUNT:
            break;
        }
    }
}

/* "ompbatch update maps.c:42 (device 0): 12 copies": what a profiler shows for a submission. */
static void push_range(const ompbatch_batch *batch)
{
    char name[256];
    snprintf(name, sizeof(name), "ompbatch %s (device %d): %zu copies",
             batch->label != NULL ? batch->label : "batch", batch->device.number, batch->count);
    ob_nvtx_push(name);
}

int ompbatch_batch_submit(ompbatch_batch *batch)
{
    int status = ob_batch_check_open(batch);
    if (status != OMPBATCH_OK)
        return status;
    batch->state = BATCH_SUBMITTED;
    int ranged = ob_nvtx_active();
    if (ranged)
        push_range(batch);
    if (batch->multi_active) {
        status = batch->multi_ops->submit(batch->multi);
        batch->multi_ops->stats(batch->multi, &batch->stats);
    } else {
        status = with_context(batch, ob_batch_plan_and_run);
        update_stats(batch);
    }
    if (ranged)
        ob_nvtx_pop();
    return status;
}

static int wait_exec(ompbatch_batch *batch)
{
    return ob_exec_wait(&batch->exec);
}

int ompbatch_batch_wait(ompbatch_batch *batch)
{
    int checked = ob_batch_live(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    if (batch->multi_active)
        return batch->multi_ops->wait(batch->multi);
    if (!ob_exec_pending(&batch->exec))
        return OMPBATCH_OK;
    return with_context(batch, wait_exec);
}

int ompbatch_batch_reset(ompbatch_batch *batch)
{
    int checked = ob_batch_live(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    int status = ob_exec_pending(&batch->exec) ? with_context(batch, wait_exec) : OMPBATCH_OK;
    if (batch->multi_active) {
        int waited = batch->multi_ops->reset(batch->multi);
        status = status != OMPBATCH_OK ? status : waited;
        batch->multi_active = 0;
    }
    batch->count = 0;
    batch->rect_count = 0;
    /* The refill is compared with the plan's copies as it comes (ob_batch_settle_keys). */
    batch->replaying = batch->current.valid && batch->current.count > 0;
    batch->state = BATCH_OPEN;
    batch->exec.done = 0;
    batch->exec.driver_calls = 0;
    batch->exec.batch_calls = 0;
    batch->exec.batch_fallbacks = 0;
    memset(&batch->exec.staged, 0, sizeof(batch->exec.staged));
    /* The plan stays: the next submit may reuse it (ob_batch_plan_and_run). */
    memset(&batch->stats, 0, sizeof(batch->stats));
    batch->stats.struct_size = sizeof(batch->stats);
    return status;
}

void ob_batch_forget_memory_now(ompbatch_batch *batch)
{
    ob_mem_cache_clear(&batch->cache);
    batch->current.valid = 0;
    ob_plan_cache_invalidate(batch->plans);
}

int ompbatch_batch_forget_memory(ompbatch_batch *batch)
{
    int checked = ob_batch_live(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    /* Copies naming other GPUs are held by the multi-device state, not counted in `count`. */
    size_t pending = batch->multi_active ? batch->multi_ops->count(batch->multi) : batch->count;
    if (batch->state == BATCH_OPEN && pending > 0)
        return ob_fail(OMPBATCH_ERR_BAD_STATE,
                       "the batch holds %zu copies not yet submitted; submit or reset it first",
                       pending);
    ob_batch_forget_memory_now(batch);
    if (batch->multi != NULL)
        batch->multi_ops->forget_memory(batch->multi);
    return OMPBATCH_OK;
}

void ob_batch_set_hook_mode(ompbatch_batch *batch)
{
    batch->hook_mode = 1;
}

void ob_batch_set_multi(ompbatch_batch *batch, const ob_multi_ops *ops)
{
    batch->multi_ops = ops;
}

void ob_batch_set_cost_models(ompbatch_batch *batch, ob_cost_models_fn models)
{
    batch->cost_models = models;
}

void ob_batch_set_label(ompbatch_batch *batch, const char *label)
{
    batch->label = label;
}

void ob_batch_forget_device_memory(ompbatch_batch *batch)
{
    ob_mem_cache_forget_device(&batch->cache);
    /* A hook batch's plan knows nothing of device memory but the addresses in its keys (device
     * sides are trusted, each its own range): the same copies at the same addresses plan the
     * same, whatever was freed in between. A loop's updates keep their plan across the
     * enter and exit constructs around them. */
    if (!batch->hook_mode) {
        batch->current.valid = 0;
        ob_plan_cache_invalidate(batch->plans);
    }
}

static int wait_and_drop_kept(ompbatch_batch *batch)
{
    int status = ob_exec_pending(&batch->exec) ? ob_exec_wait(&batch->exec) : OMPBATCH_OK;
    ob_exec_release(&batch->exec);
    return status;
}

static int destroy(ompbatch_batch *batch, int keep);

int ompbatch_batch_destroy(ompbatch_batch *batch)
{
    return destroy(batch, 1);
}

int ob_batch_destroy(ompbatch_batch *batch)
{
    return destroy(batch, 0);
}

int ob_batch_destroy_after(ompbatch_batch *batch, int status)
{
    if (status == OMPBATCH_OK)
        return ob_batch_destroy(batch);
    ob_error_saved failure;
    ob_error_save(&failure);
    (void)ob_batch_destroy(batch); /* logged; the first failure is the one reported */
    return ob_error_restore(status, &failure);
}

/* The structs of the last OB_DESTROYED_KEPT batches the program destroyed (ob_batch_live); the
 * library's own batches, which it never uses again, are freed outright so that they do not
 * push the program's out of the window. */
static pthread_mutex_t destroyed_lock = PTHREAD_MUTEX_INITIALIZER;
static ompbatch_batch *destroyed[OB_DESTROYED_KEPT];
static size_t destroyed_next;

static void keep_destroyed(ompbatch_batch *batch)
{
    pthread_mutex_lock(&destroyed_lock);
    ompbatch_batch *oldest = destroyed[destroyed_next];
    destroyed[destroyed_next] = batch;
    destroyed_next = (destroyed_next + 1) % OB_DESTROYED_KEPT;
    pthread_mutex_unlock(&destroyed_lock);
    free(oldest);
}

static int destroy(ompbatch_batch *batch, int keep)
{
    if (batch == NULL)
        return OMPBATCH_OK;
    int status = ob_batch_live(batch);
    if (status != OMPBATCH_OK)
        return status;
    status = ob_exec_pending(&batch->exec) || batch->exec.kept_table_bytes > 0
                 ? with_context(batch, wait_and_drop_kept)
                 : OMPBATCH_OK;
    int parts = batch->multi != NULL ? batch->multi_ops->destroy(batch->multi) : OMPBATCH_OK;
    status = status != OMPBATCH_OK ? status : parts;
    ob_plan_free(&batch->current.plan);
    free(batch->current.keys);
    ob_plan_cache_free(&batch->plans);
    free(batch->added);
    free(batch->rects);
    free(batch->planned_rects);
    ob_mem_cache_free(&batch->cache);
    ob_exec_free(&batch->exec);
    free(batch->copies);
    memset(batch, 0, sizeof(*batch));
    batch->magic = OB_BATCH_DESTROYED;
    if (keep)
        keep_destroyed(batch);
    else
        free(batch);
    return status;
}

int ompbatch_batch_get_stats(const ompbatch_batch *batch, ompbatch_stats *stats)
{
    int checked = ob_batch_live(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    /* Copies added count as soon as they are added; the rest describes the last submit. */
    ompbatch_stats current = batch->stats;
    current.copies_added =
        batch->multi_active ? batch->multi_ops->count(batch->multi) : batch->count;
    return ob_struct_out(stats, &current, sizeof(current), "stats", "ompbatch_stats");
}

int ompbatch_batch_describe(ompbatch_batch *batch, char *buf, size_t size, size_t *needed)
{
    int checked = ob_batch_live(batch);
    if (checked != OMPBATCH_OK)
        return checked;
    if (buf == NULL && size > 0)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "buf is NULL but size is %zu", size);
    if (batch->multi_active) {
        int n = snprintf(buf, size, "multi-device batch of device %d: %zu copies, split at "
                                    "submit by the device that runs each (plans per device are "
                                    "not described)\n",
                         batch->device.number, batch->multi_ops->count(batch->multi));
        if (needed != NULL)
            *needed = n > 0 ? (size_t)n : 0;
        return OMPBATCH_OK;
    }
    if (batch->state == BATCH_OPEN) {
        batch->current.valid = 0; /* the plan is rebuilt from the copies added so far */
        int status = with_context(batch, ob_batch_build_plan);
        if (status != OMPBATCH_OK)
            return status;
    }
    size_t length = ob_plan_describe(&batch->current.plan, buf, size);
    if (needed != NULL)
        *needed = length;
    return OMPBATCH_OK;
}
