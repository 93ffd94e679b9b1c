/* The planner: validates and classifies the copies of a batch, orders dependent copies into
 * levels, merges contiguous neighbours, routes each group and cuts the result into steps that
 * the backends execute in order. */
#ifndef OMPBATCH_PLUGIN_PLAN_H
#define OMPBATCH_PLUGIN_PLAN_H

#include <stddef.h>

#include "plugin/core/config.h"
#include "plugin/cuda/memkind.h"
#include "plugin/plan/attrs.h"
#include "plugin/plan/copy.h"
#include "plugin/plan/cost.h"

typedef struct ob_step {
    ob_route route;
    unsigned level;
    size_t begin;        /* plan->copies[begin, end) */
    size_t end;
    size_t attr_begin;   /* plan->attrs / attr_idxs[attr_begin, +attr_count): batch steps */
    size_t attr_count;
} ob_step;

/* What the planner decided for one group of copies (a level and category) that the staged
 * strategy could take: kept for ompbatch_batch_describe. */
typedef struct ob_decision {
    unsigned level;
    ob_category category;
    size_t copies;            /* in the group */
    size_t staged;            /* of them, staged */
    size_t pipelined;         /* of them, pipelined through staging (OB_PIPELINE_MIN_BYTES) */
    double direct_us;         /* predicted for the staged candidates, moved directly */
    double staged_us;         /* predicted for them, staged */
    int forced;               /* OMPBATCH_STRATEGY or the batch option decided, not the model */
    int lone_bounce;          /* the lone copy of a bouncing plan (ob_plan_params) */
} ob_decision;

typedef struct ob_plan {
    ob_copy *copies;     /* planned copies in execution order */
    size_t count;
    size_t capacity;
    ob_step *steps;
    size_t step_count;
    size_t step_capacity;
    CUmemcpyAttributes *attrs;
    size_t *attr_idxs;   /* relative to the step's first copy, as the driver wants them */
    size_t attr_count;
    size_t attr_capacity;
    size_t attr_idx_capacity;
    size_t added;        /* copies given to the planner */
    size_t zero_copies;  /* zero-byte copies dropped */
    size_t merged_away;  /* copies folded into a neighbour */
    unsigned levels;
    size_t bytes;
    ob_decision *decisions;
    size_t decision_count;
    size_t decision_capacity;
    const char *cost_source;  /* the model's source, when one was asked */
    unsigned long generation; /* new, process-wide, whenever the plan is (re)built */
} ob_plan;

/* A lone copy smaller than this is not classified (plan.c, plan_lone_copy): never staged. On
 * the H200 (the four grids of benchmarks/2026-12-02-h200-strategies-*) a lone pageable 1 MiB
 * copy was 5-20% slower staged in both directions, while a lone 4 MiB one was faster staged
 * in 7 of 8 measurements (D2H 270-355 us against 341-412 direct). */
#define OB_LONE_STAGED_MIN_BYTES ((size_t)2 << 20)

/* A pageable copy to or from a device of this size or more goes pipelined through pinned
 * staging (backend_pipelined.c) rather than to the driver, whose own staging moves a 64 MiB
 * pageable copy at 6-11 GB/s on the H200; two chunks at least, so that they overlap. */
#define OB_PIPELINE_MIN_BYTES ((size_t)8 << 20)

/* Staged pieces that need staging memory (pack and gather), per level and submit. */
#define OB_STAGED_LEVEL_BYTES ((size_t)64 << 20)

typedef struct ob_plan_params {
    const ob_driver *driver;   /* NULL: host backend only, nothing classified */
    /* A batch that is not a CUDA device's (the host's, a host-offload device's) runs its
     * copies with memcpy, which cannot touch CUDA device memory: where a driver is loaded,
     * its sides are classified through this driver to refuse such memory. NULL: they are
     * not (no driver, or the hook's batches, whose sides come from the runtime's tables). */
    const ob_driver *host_driver;
    ob_mem_cache *cache;       /* required when driver is set */
    ob_attr_context attrs;     /* device_ordinal is the batch's CUDA device */
    ompbatch_batch_form form;
    int disabled;              /* OMPBATCH_DISABLE: per-copy, no merging */
    size_t max_copies;         /* per driver batch call, >= 1 */
    ob_strategy_choice strategy;
    const ob_cost_model *cost; /* required for OB_STRATEGY_AUTO with a driver */
    int trust_device_sides;    /* sides named the device are its memory: not classified */
    int host_in_place;         /* the copy kernel may access pinned host memory in place */
    /* A lone device -> pageable host copy under OB_LONE_STAGED_MIN_BYTES goes through pinned
     * staging (one copy-engine copy into staging, the unpack at the wait) instead of straight
     * into pageable memory: the driver waits inside such a copy, and in a context whose waits
     * block (libomptarget sets CU_CTX_SCHED_BLOCKING_SYNC) that wait costs tens of
     * microseconds. Set for the hook's batches. */
    int bounce_lone_d2h;
} ob_plan_params;

/* Builds the plan for `count` added copies (the array is not modified). On failure the
 * thread's message names the copy at fault by its index as added. */
int ob_plan_build(ob_plan *plan, const ob_copy *added, size_t count,
                  const ob_plan_params *params);

/* The same, taking the caller's array instead of copying it: *added and *capacity are swapped
 * with the plan's own array (for submit, after which the added copies are not needed). */
int ob_plan_build_from(ob_plan *plan, ob_copy **added, size_t *capacity, size_t count,
                       const ob_plan_params *params);

/* Computes the dependency level of each copy: copy j gets one level more than every earlier
 * copy i whose ranges it conflicts with (a destination of one overlapping the source or the
 * destination of the other). Returns the number of levels (0 for no copies). */
int ob_plan_levels(ob_copy *copies, size_t count, unsigned *levels_out);

void ob_plan_clear(ob_plan *plan);
void ob_plan_free(ob_plan *plan);

/* A text description of the plan; see ompbatch_batch_describe. */
size_t ob_plan_describe(const ob_plan *plan, char *buf, size_t size);

#endif
