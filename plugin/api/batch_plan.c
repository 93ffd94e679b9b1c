/* A batch's plan: the added copies spelled out for the planner (rectangles whole or as their
 * runs), the plan built, and reused for a refill of the very same copies or taken from the
 * earlier plans kept for copies that come back. */
#include <stdlib.h>
#include <string.h>

#include "plugin/api/batch_add.h"
#include "plugin/api/batch_object.h"
#include "plugin/api/batch_plan.h"
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/core/phase_time.h"
#include "plugin/cuda/memkind.h"
#include "plugin/exec/exec.h"
#include "plugin/plan/cost.h"

/* What a plan was made under: the configuration's reading and the library's own
 * registrations of host memory (memkind.h). Both only grow, so their sum changes whenever
 * either does. */
static unsigned long plan_generation(void)
{
    return ob_config_generation() + ob_mem_host_generation();
}

/* Whether a rectangle stays one copy: only the host and staged backends take one whole, so
 * a batch that cannot stage (planning disabled, the direct strategy, no batch call) sends its
 * runs; so does a rectangle whose sides' spans overlap, for the planner checks a copy's
 * sides for overlap by their spans. */
static int rect_stays_whole(const ob_plan_params *params, const ob_copy_key *key,
                            const ob_rect *rect)
{
    if (params->driver != NULL && (params->disabled || params->strategy == OB_STRATEGY_DIRECT ||
                                   params->form == OMPBATCH_FORM_NONE))
        return 0;
    return !(key->dst < key->src + rect->src_span && key->src < key->dst + rect->dst_span);
}

/* Spells the added copies out into batch->copies for planning; *count_out: how many (a
 * rectangle not kept whole becomes its runs, each with the rectangle's index). */
static int expand_added(ompbatch_batch *batch, const ob_plan_params *params, size_t *count_out)
{
    size_t needed = batch->count;
    for (size_t i = 0; i < batch->count; i++) /* the runs of the rectangles not kept whole */
        if (batch->added[i].rect != 0 &&
            !rect_stays_whole(params, &batch->added[i], &batch->rects[batch->added[i].rect - 1]))
            needed += (size_t)batch->rects[batch->added[i].rect - 1].runs;
    if (ob_grow((void **)&batch->copies, &batch->capacity, needed > 0 ? needed : 1,
                sizeof(*batch->copies)) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot plan %zu copies", needed);
    size_t n = 0;
    for (size_t i = 0; i < batch->count; i++) {
        const ob_copy_key *k = &batch->added[i];
        ob_copy *c = &batch->copies[n++];
        c->dst = k->dst;
        c->src = k->src;
        c->bytes = k->bytes;
        c->rect = NULL;
        c->map_type = k->map_type;
        c->dst_side = (ob_side)k->dst_side;
        c->src_side = (ob_side)k->src_side;
        c->index = i;
        c->merged = 1;
        if (k->rect == 0)
            continue;
        const ob_rect *rect = &batch->rects[k->rect - 1];
        if (rect_stays_whole(params, k, rect)) {
            c->rect = rect;
            continue;
        }
        ob_copy whole = *c;
        n--;
        ob_rect_cursor cursor;
        uint64_t dst_at, src_at, bytes;
        ob_rect_seek(rect, 0, &cursor);
        while (ob_rect_next(rect, &cursor, rect->bytes, &dst_at, &src_at, &bytes)) {
            c = &batch->copies[n++];
            *c = whole;
            c->rect = NULL;
            c->dst = whole.dst + (uintptr_t)dst_at;
            c->src = whole.src + (uintptr_t)src_at;
            c->bytes = (size_t)bytes;
        }
    }
    *count_out = n;
    return OMPBATCH_OK;
}

/* Plans the batch's copies; `take` hands the copies' array to the plan instead of copying it
 * (submit: nothing reads the added copies afterwards, only their count). */
static int plan_copies(ompbatch_batch *batch, int take)
{
    int status = ob_batch_settle_keys(batch);
    if (status != OMPBATCH_OK)
        return status;
    const ob_config *config = ob_config_get();
    ob_plan_params params;
    memset(&params, 0, sizeof(params));
    params.driver = batch->exec.driver;
    if (params.driver == NULL && !batch->hook_mode && ob_driver_get()->loaded)
        params.host_driver = ob_driver_get();
    params.cache = &batch->cache;
    params.attrs.device_ordinal = batch->device.ordinal;
    params.attrs.synchronous = batch->options.synchronous;
    params.attrs.prefer_overlap = batch->options.prefer_overlap;
    params.form = params.driver ? params.driver->form : OMPBATCH_FORM_NONE;
    params.disabled = config->disable;
    params.trust_device_sides = batch->hook_mode;
    params.host_in_place = !batch->hook_mode;
    params.bounce_lone_d2h = batch->hook_mode;
    params.max_copies = batch->options.max_copies ? batch->options.max_copies
                                                  : config->max_copies;
    switch (batch->options.strategy) {
    case OMPBATCH_STRATEGY_AUTO:
        params.strategy = OB_STRATEGY_AUTO;
        break;
    case OMPBATCH_STRATEGY_DIRECT:
        params.strategy = OB_STRATEGY_DIRECT;
        break;
    case OMPBATCH_STRATEGY_STAGED:
        params.strategy = OB_STRATEGY_STAGED;
        break;
    default:
        params.strategy = config->strategy;
        break;
    }
    /* The model is built (calibrated) on the first plan that could use it: two or more
     * device copies, or a large one, automatic strategy. */
    if (params.driver != NULL && params.strategy == OB_STRATEGY_AUTO && !params.disabled &&
        (batch->count > 1 || batch->rect_count > 0 ||
         (batch->count == 1 && batch->added[0].bytes >= OB_LONE_STAGED_MIN_BYTES)))
        params.cost = batch->cost_models != NULL ? batch->cost_models(batch->device.ordinal)
                                                 : NULL;
    size_t count = 0;
    if ((status = expand_added(batch, &params, &count)) != OMPBATCH_OK)
        return status;
    if (take)
        return ob_plan_build_from(&batch->current.plan, &batch->copies, &batch->capacity, count,
                                  &params);
    return ob_plan_build(&batch->current.plan, batch->copies, count, &params);
}

int ob_batch_build_plan(ompbatch_batch *batch)
{
    return plan_copies(batch, 0);
}

/* memcmp below compares keys whole: they must have no padding. */
_Static_assert(sizeof(ob_copy_key) == 5 * sizeof(uint64_t), "ob_copy_key has padding");

static int rects_match(const ompbatch_batch *batch)
{
    if (batch->rect_count != batch->planned_rect_count ||
        (batch->rect_count > 0 && batch->rects != batch->planned_rects_at))
        return 0;
    for (size_t k = 0; k < batch->rect_count; k++)
        if (!ob_rect_same(&batch->rects[k], &batch->planned_rects[k]))
            return 0;
    return 1;
}

/* Notes the rectangles of the plan just built; 0 when they cannot be kept (the plan is then
 * not reused). */
static int remember_rects(ompbatch_batch *batch)
{
    batch->planned_rect_count = 0;
    if (batch->rect_count == 0)
        return 1;
    if (ob_grow((void **)&batch->planned_rects, &batch->planned_rect_capacity, batch->rect_count,
                sizeof(*batch->planned_rects)) != 0)
        return 0;
    memcpy(batch->planned_rects, batch->rects, batch->rect_count * sizeof(ob_rect));
    batch->planned_rect_count = batch->rect_count;
    batch->planned_rects_at = batch->rects;
    return 1;
}

static int keys_match(const ompbatch_batch *batch)
{
    if (!batch->current.valid || batch->current.count != batch->count ||
        batch->current.config != plan_generation() || !rects_match(batch))
        return 0;
    /* A refill still replaying compared every copy as it was added. */
    return batch->replaying || batch->count == 0 ||
           memcmp(batch->added, batch->current.keys, batch->count * sizeof(ob_copy_key)) == 0;
}

/* The added copies become the keys of the plan just built from them: the two arrays trade
 * places, and the next fill writes over the old keys. `hash`: theirs, when the search for a
 * kept plan worked it out already, else 0. */
static void remember_keys(ompbatch_batch *batch, uint64_t hash)
{
    ob_copy_key *keys = batch->current.keys;
    size_t capacity = batch->current.capacity;
    if (hash == 0 && ob_plan_cache_fits(batch->count))
        hash = ob_plan_keys_hash(batch->added, batch->count);
    batch->current.keys = batch->added;
    batch->current.capacity = batch->added_capacity;
    batch->current.count = batch->count;
    batch->current.hash = hash;
    batch->added = keys;
    batch->added_capacity = capacity;
    batch->replaying = 0; /* settled by the plan (or, after a failure, never to be reused) */
}

/* The batch's plan (with its keys) and the slot's trade places; the plan going into the slot
 * stays valid only if `keep` and the slot is of its size's class. */
static void swap_with_slot(ompbatch_batch *batch, ob_cached_plan *slot, int keep)
{
    ob_cached_plan kept = batch->current;
    batch->current = *slot;
    *slot = kept;
    if (!keep || !ob_plan_cache_slot_takes(batch->plans, slot, slot->count))
        slot->valid = 0; /* its arrays stay for reuse, not its plan */
    ob_plan_cache_placed(batch->plans, slot);
}

/* Finds the added copies' plan among the kept ones and makes it the batch's, keeping the
 * batch's own in its place. Returns whether it did; *hash: the copies' hash when it was
 * worked out, else 0. */
static int take_kept_plan(ompbatch_batch *batch, uint64_t *hash)
{
    *hash = 0;
    if (!ob_plan_cache_fits(batch->count) || ob_batch_settle_keys(batch) != OMPBATCH_OK)
        return 0;
    *hash = ob_plan_keys_hash(batch->added, batch->count);
    ob_cached_plan *slot = ob_plan_cache_find(batch->plans, batch->added, batch->count, *hash,
                                              plan_generation());
    if (slot == NULL)
        return 0;
    int keep = batch->current.valid && ob_plan_cache_fits(batch->current.count) &&
               batch->planned_rect_count == 0;
    if (keep && !ob_plan_cache_slot_takes(batch->plans, slot, batch->current.count)) {
        /* The batch's plan is of the other class: it goes to a slot of its own class, whose
         * occupant gives its arrays to the found plan's slot. */
        ob_cached_plan *own = ob_plan_cache_victim(batch->plans, batch->current.count);
        ob_cached_plan evicted = *own;
        *own = batch->current;
        ob_plan_cache_placed(batch->plans, own);
        batch->current = *slot;
        *slot = evicted;
        slot->valid = 0;
        ob_plan_cache_placed(batch->plans, slot);
    } else {
        swap_with_slot(batch, slot, keep);
    }
    batch->planned_rect_count = 0; /* kept plans have none */
    return 1;
}

int ob_batch_plan_and_run(ompbatch_batch *batch)
{
    int status = OMPBATCH_OK;
    uint64_t hash = 0;
    batch->plan_reused = keys_match(batch) || take_kept_plan(batch, &hash);
    if (!batch->plan_reused) {
        /* The plan about to be replaced is kept; the slot's old one gives its arrays. A
         * refill still replaying reads its copies from the plan's keys: written out first. */
        if (batch->current.valid &&
            ob_plan_cache_worth_keeping(batch->plans, batch->current.count) &&
            batch->planned_rect_count == 0 && ob_plan_cache_get(&batch->plans) != NULL &&
            (status = ob_batch_settle_keys(batch)) == OMPBATCH_OK)
            swap_with_slot(batch, ob_plan_cache_victim(batch->plans, batch->current.count), 1);
        if (status == OMPBATCH_OK) {
            uint64_t started = ob_phase_start();
            batch->current.config = plan_generation();
            status = plan_copies(batch, 1);
            remember_keys(batch, hash);
            batch->current.valid = status == OMPBATCH_OK && remember_rects(batch);
            ob_phase_end(OB_PHASE_PLAN, started);
        }
    }
    if (status == OMPBATCH_OK) {
        ob_log(2, "device %d: %zu copies -> %zu planned, %zu step(s), %zu attribute group(s)",
               batch->device.number, batch->count, batch->current.plan.count,
               batch->current.plan.step_count, batch->current.plan.attr_count);
        uint64_t started = ob_phase_start();
        status = ob_exec_run(&batch->exec, &batch->current.plan);
        ob_phase_end(OB_PHASE_ENQUEUE, started);
    }
    if (status != OMPBATCH_OK)
        batch->current.valid = 0; /* plan again after any failure */
    return status;
}
