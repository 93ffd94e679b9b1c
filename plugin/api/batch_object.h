/* The batch object as the API's files share it: batch.c its life (create, submit, wait,
 * reset, destroy, statistics), batch_add.c the copies added to it, batch_plan.c their plan
 * and its reuse. The rest of the library reaches batches through batch.h and batch_add.h. */
#ifndef OMPBATCH_PLUGIN_API_BATCH_OBJECT_H
#define OMPBATCH_PLUGIN_API_BATCH_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/api/batch_types.h"
#include "plugin/core/error.h"
#include "plugin/cuda/device.h"
#include "plugin/cuda/memkind.h"
#include "plugin/exec/exec.h"
#include "plugin/plan/copy.h"
#include "plugin/plan/plan.h"
#include "plugin/plan/plan_cache.h"
#include "plugin/plan/walk.h"
#include "ompbatch.h"

typedef enum batch_state { BATCH_OPEN = 0, BATCH_SUBMITTED } batch_state;

/* A batch's first field says whether it is alive. Destroyed batches keep their (emptied) struct
 * for the last OB_DESTROYED_KEPT destroys, so that a use after destroy or a second destroy in
 * that window is an error naming the batch instead of a crash. */
#define OB_BATCH_ALIVE 0x0b8a7c11u
#define OB_BATCH_DESTROYED 0xdeadba7cu
#define OB_DESTROYED_KEPT 256

struct ompbatch_batch {
    unsigned magic;
    ob_device device;
    int initial_device;       /* the number, besides OMPBATCH_HOST_DEVICE, naming the host */
    CUstream stream;
    ompbatch_batch_options options;
    /* The copies as added: only what the caller gave, 40 bytes each (add is the hot path).
     * While `replaying`, added[0, count) is not written: those copies are current.keys[0,
     * count), each compared as it was added (ob_batch_settle_keys writes them out when needed). */
    ob_copy_key *added;
    size_t count;
    size_t added_capacity;
    int replaying;
    /* Rectangles added whole, in the order added: a key's `rect` names one. Emptied at reset;
     * a plan with rectangles points into this array and is never reused. */
    ob_rect *rects;
    size_t rect_count;
    size_t rect_capacity;
    /* The rectangles the current plan was built from, and where `rects` lay then (the plan
     * points into it): a refill reuses the plan only with the very same rectangles there.
     * Plans with rectangles are not kept among the earlier plans. */
    ob_rect *planned_rects;
    size_t planned_rect_count;
    size_t planned_rect_capacity;
    const ob_rect *planned_rects_at;
    /* The added copies spelled out for planning; the plan takes this array over. */
    ob_copy *copies;
    size_t capacity;
    batch_state state;
    ob_mem_cache cache;
    ob_exec exec;
    ompbatch_stats stats;
    int hook_mode;            /* ob_batch_set_hook_mode */
    const char *label;        /* names its NVTX ranges (ob_batch_set_label); NULL: "batch" */
    int caller_stream;        /* created on the caller's stream, not the library's */
    /* Copies naming other GPUs (multi.h): once one is added, until reset, every copy of the
     * batch goes to `multi` instead of `added`. */
    ob_multi *multi;
    int multi_active;
    const ob_multi_ops *multi_ops; /* NULL: copies of other GPUs are refused */
    /* The plan and the copies it was built from (its keys): a submit of the very same copies
     * (an iteration of a solver refilling its batch) reuses the plan instead of building it
     * again. `valid`: the plan belongs to its keys and nothing made it stale. */
    ob_cached_plan current;
    int plan_reused;          /* the last submit reused it */
    ob_plan_cache *plans;     /* earlier plans, for submits that come back to their copies
                                 (NULL until one is kept) */
    /* Where the device's cost model comes from (cost_models.c for every batch but the
     * calibration's own, which force their strategy); NULL: planned without one. */
    ob_cost_models_fn cost_models;
};

static inline int ob_batch_is_cuda(const ompbatch_batch *batch)
{
    return batch->device.kind == OB_DEVICE_CUDA;
}

/* NULL, destroyed or not a batch: every public batch function asks first. */
static inline int ob_batch_live(const ompbatch_batch *batch)
{
    if (batch == NULL)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "batch is NULL");
    if (batch->magic == OB_BATCH_ALIVE)
        return OMPBATCH_OK;
    if (batch->magic == OB_BATCH_DESTROYED)
        return ob_fail(OMPBATCH_ERR_BAD_STATE, "batch %p was destroyed", (const void *)batch);
    return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "batch %p is not a batch made by ompbatch",
                   (const void *)batch);
}

#endif
