#include "plugin/core/alloc.h"
#include "plugin/plan/plan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/error.h"
#include "plugin/core/sort.h"
#include "plugin/core/workers.h"
#include "plugin/plan/levels.h"
#include "plugin/plan/route.h"

static int reserve(void **items, size_t *capacity, size_t needed, size_t item_size)
{
    if (ob_grow(items, capacity, needed, item_size) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate a plan of %zu entries", needed);
    return OMPBATCH_OK;
}

static int ranges_overlap(uintptr_t a, size_t a_bytes, uintptr_t b, size_t b_bytes)
{
    return a < b + b_bytes && b < a + a_bytes;
}

/* ---- classification and validation ------------------------------------------------------ */

static int check_side(const ob_plan_params *params, const ob_copy *copy, const char *name,
                      uintptr_t ptr, size_t extent, ob_side side, const ob_mem_info *mem)
{
    int ordinal = params->attrs.device_ordinal;
    if (side == OB_SIDE_DEVICE && mem->kind != OB_MEM_MANAGED &&
        !(mem->kind == OB_MEM_DEVICE && mem->ordinal == ordinal))
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, copy->index,
                            "%s %#" PRIxPTR " is %s memory%s, not memory of device %d", name, ptr,
                            ob_mem_kind_name(mem->kind),
                            mem->kind == OB_MEM_DEVICE ? " of another device" : "", ordinal);
    if (side == OB_SIDE_HOST && mem->kind == OB_MEM_DEVICE)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, copy->index,
                            "%s %#" PRIxPTR " is device memory of device %d, but its device "
                            "number names the host",
                            name, ptr, mem->ordinal);
    if (mem->range_size > 0 && extent > mem->range_start + mem->range_size - ptr)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, copy->index,
                            "%s %#" PRIxPTR " + %zu bytes runs past the end of its "
                            "allocation (%#" PRIxPTR " + %zu bytes)",
                            name, ptr, extent, mem->range_start, mem->range_size);
    return OMPBATCH_OK;
}

/* A side of a batch whose copies run with memcpy (plan.h, host_driver). */
static int check_memcpy_side(const ob_copy *copy, const char *name, uintptr_t ptr, ob_side side,
                             const ob_mem_info *mem)
{
    if (mem->kind != OB_MEM_DEVICE)
        return OMPBATCH_OK;
    if (side == OB_SIDE_HOST)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, copy->index,
                            "%s %#" PRIxPTR " is device memory of device %d, but its device "
                            "number names the host",
                            name, ptr, mem->ordinal);
    return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, copy->index,
                        "%s %#" PRIxPTR " is device memory of CUDA device %d, but the "
                        "batch's device is not a CUDA device (its copies run with memcpy)",
                        name, ptr, mem->ordinal);
}

static int check_self_overlap(const ob_copy *copy)
{
    if (ranges_overlap(copy->dst, ob_copy_dst_extent(copy), copy->src, ob_copy_src_extent(copy)))
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, copy->index,
                            "source %#" PRIxPTR " and destination %#" PRIxPTR
                            " overlap (%zu bytes)",
                            copy->src, copy->dst, copy->bytes);
    return OMPBATCH_OK;
}

/* Whether [ptr, ptr + bytes) lies in the known allocation of mem. */
static int inside(const ob_mem_info *mem, uintptr_t ptr, size_t bytes)
{
    return mem->range_size > 0 && ptr >= mem->range_start &&
           ptr - mem->range_start < mem->range_size &&
           bytes <= mem->range_size - (ptr - mem->range_start);
}

/* A copy between the same two allocations as the previous one, with the same sides and map
 * type, is classified the same: its checks are the ones the previous copy passed, and its
 * attributes depend on nothing else. Copies usually come in such runs, and planning is per copy
 * on the hot path. */
static int classify_like(const ob_copy *prev, ob_copy *copy)
{
    if (prev == NULL || prev->map_type != copy->map_type || prev->dst_side != copy->dst_side ||
        prev->src_side != copy->src_side ||
        !inside(&prev->dst_mem, copy->dst, ob_copy_dst_extent(copy)) ||
        !inside(&prev->src_mem, copy->src, ob_copy_src_extent(copy)))
        return 0;
    copy->dst_mem = prev->dst_mem;
    copy->src_mem = prev->src_mem;
    copy->category = prev->category;
    copy->attr = prev->attr;
    return 1;
}

/* Device memory the caller vouches for: its extent is unknown, so it is given the copy's own
 * range, which no other copy shares (nothing merges with it). */
static void trusted_device(const ob_plan_params *params, uintptr_t ptr, size_t bytes,
                           ob_mem_info *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = OB_MEM_DEVICE;
    out->ordinal = params->attrs.device_ordinal;
    out->range_start = ptr;
    out->range_size = bytes;
}

static int classify_side(const ob_plan_params *params, uintptr_t ptr, size_t extent,
                         ob_side side, ob_mem_info *out)
{
    if (params->trust_device_sides && params->driver != NULL && side == OB_SIDE_DEVICE) {
        trusted_device(params, ptr, extent, out);
        return OMPBATCH_OK;
    }
    return ob_mem_classify(params->driver != NULL ? params->driver : params->host_driver,
                           params->cache, ptr, out);
}

static int classify(const ob_plan_params *params, ob_copy *copy)
{
    size_t dst_extent = ob_copy_dst_extent(copy), src_extent = ob_copy_src_extent(copy);
    int status = classify_side(params, copy->dst, dst_extent, copy->dst_side, &copy->dst_mem);
    if (status == OMPBATCH_OK)
        status = classify_side(params, copy->src, src_extent, copy->src_side, &copy->src_mem);
    if (status != OMPBATCH_OK)
        return ob_fail_in_copy(status, copy->index);
    if (params->driver != NULL) {
        if ((status = check_side(params, copy, "dst", copy->dst, dst_extent, copy->dst_side,
                                 &copy->dst_mem)) != OMPBATCH_OK ||
            (status = check_side(params, copy, "src", copy->src, src_extent, copy->src_side,
                                 &copy->src_mem)) != OMPBATCH_OK)
            return status;
    } else if (params->host_driver != NULL) {
        if ((status = check_memcpy_side(copy, "dst", copy->dst, copy->dst_side,
                                        &copy->dst_mem)) != OMPBATCH_OK ||
            (status = check_memcpy_side(copy, "src", copy->src, copy->src_side,
                                        &copy->src_mem)) != OMPBATCH_OK)
            return status;
    }
    copy->category = ob_route_category(copy);
    if (params->driver != NULL && copy->category != OB_CAT_H2H)
        ob_attrs_infer(&params->attrs, copy);
    else
        memset(&copy->attr, 0, sizeof(copy->attr));
    return OMPBATCH_OK;
}

/* ---- dependency levels -------------------------------------------------------------------- */

int ob_plan_levels(ob_copy *copies, size_t count, unsigned *levels_out)
{
    return ob_levels_compute(copies, count, levels_out);
}

/* ---- ordering and merging ---------------------------------------------------------------- */

static int compare_uint(uintmax_t a, uintmax_t b)
{
    return (a > b) - (a < b);
}

/* Level, then category, then address: contiguous neighbours of one group end up adjacent. */
static int compare_for_merge(const void *a, const void *b)
{
    const ob_copy *x = a, *y = b;
    int c = compare_uint(x->level, y->level);
    if (c == 0)
        c = compare_uint(x->category, y->category);
    if (c == 0)
        c = ob_attrs_compare(&x->attr, &y->attr);
    if (c == 0)
        c = compare_uint(x->dst, y->dst);
    if (c == 0)
        c = compare_uint(x->index, y->index);
    return c;
}

/* Level, then route, then attributes: each batch step's attribute runs are as long as they
 * can be, so attrs/attrsIdxs get the fewest entries. */
static int compare_for_steps(const void *a, const void *b)
{
    const ob_copy *x = a, *y = b;
    int c = compare_uint(x->level, y->level);
    if (c == 0)
        c = compare_uint(x->route, y->route);
    if (c == 0)
        c = ob_attrs_compare(&x->attr, &y->attr);
    if (c == 0)
        c = compare_uint(x->category, y->category);
    if (c == 0)
        c = compare_uint(x->dst, y->dst);
    if (c == 0)
        c = compare_uint(x->index, y->index);
    return c;
}

static int same_allocation(const ob_mem_info *a, const ob_mem_info *b)
{
    return a->kind == b->kind && a->ordinal == b->ordinal && a->range_start == b->range_start &&
           a->range_size == b->range_size;
}

/* Two copies of one level never conflict, so running them as one copy of the union is the
 * same; merged copies must stay inside one allocation per side for the driver. */
static int can_merge(const ob_copy *a, const ob_copy *b)
{
    return a->rect == NULL && b->rect == NULL && a->level == b->level &&
           a->category == b->category && a->dst_side == b->dst_side && a->src_side == b->src_side &&
           ob_attrs_equal(&a->attr, &b->attr) && a->dst + a->bytes == b->dst &&
           a->src + a->bytes == b->src && same_allocation(&a->dst_mem, &b->dst_mem) &&
           same_allocation(&a->src_mem, &b->src_mem);
}

static size_t merge_neighbours(ob_copy *copies, size_t count)
{
    if (count == 0)
        return 0;
    size_t out = 0;
    for (size_t i = 1; i < count; i++) {
        if (can_merge(&copies[out], &copies[i])) {
            copies[out].bytes += copies[i].bytes;
            copies[out].merged += copies[i].merged;
            if (copies[i].index < copies[out].index)
                copies[out].index = copies[i].index;
        } else if (++out != i) {
            copies[out] = copies[i];
        }
    }
    return out + 1;
}

/* ---- routing and steps ------------------------------------------------------------------- */

static void route_groups(ob_copy *copies, size_t count, const ob_plan_params *params)
{
    size_t begin = 0;
    while (begin < count) {
        size_t end = begin;
        size_t bytes = 0;
        while (end < count && copies[end].level == copies[begin].level &&
               copies[end].category == copies[begin].category)
            bytes += copies[end++].bytes;
        ob_route route = ob_route_choose(copies[begin].category, end - begin, bytes,
                                         params->form, params->disabled);
        if (params->driver == NULL)
            route = OB_ROUTE_HOST;
        for (size_t i = begin; i < end; i++)
            copies[i].route = route;
        begin = end;
    }
}

/* ---- strategies ---------------------------------------------------------------------------- */

/* Whether a lone copy classified as device -> pageable host bounces (ob_plan_params). Only
 * choose_group asks, and choose_strategies has ruled out a disabled planner and the direct
 * strategy before it. */
static int lone_bounces(const ob_plan_params *params, const ob_copy *copy)
{
    return params->bounce_lone_d2h && copy->category == OB_CAT_D2H_PAGEABLE &&
           copy->bytes < OB_LONE_STAGED_MIN_BYTES;
}

/* Whether a lone small copy may bounce: named device -> host, and its host side is pageable
 * memory (classified here, so that nothing else about the copy can fail the plan: anything
 * else goes to the driver unclassified, as before). */
static int lone_may_bounce(const ob_plan_params *params, const ob_copy *copy)
{
    if (!params->bounce_lone_d2h || params->disabled || params->strategy == OB_STRATEGY_DIRECT ||
        params->form == OMPBATCH_FORM_NONE || copy->src_side != OB_SIDE_DEVICE ||
        copy->dst_side != OB_SIDE_HOST)
        return 0;
    ob_mem_info dst;
    return ob_mem_classify(params->driver, params->cache, copy->dst, &dst) == OMPBATCH_OK &&
           dst.kind == OB_MEM_PAGEABLE;
}

static ob_stage_how stage_how(const ob_plan_params *params, const ob_copy *copy)
{
    switch (copy->category) {
    case OB_CAT_H2D_PINNED:
        /* The runtime's temporaries must be read during the call: those are packed. */
        return params->host_in_place && copy->src_mem.mapped &&
                       !(copy->map_type & (OMPBATCH_MAP_LITERAL | OMPBATCH_MAP_PRIVATE))
                   ? OB_STAGE_IN_PLACE
                   : OB_STAGE_PACK;
    case OB_CAT_H2D_PAGEABLE:
        return OB_STAGE_PACK;
    case OB_CAT_D2H_PINNED:
        return params->host_in_place && copy->dst_mem.mapped ? OB_STAGE_IN_PLACE
                                                              : OB_STAGE_GATHER;
    case OB_CAT_D2H_PAGEABLE:
        return OB_STAGE_GATHER;
    default:
        return OB_STAGE_IN_PLACE; /* D2D */
    }
}

/* Whether a copy goes pipelined through staging: pageable host memory on one side, the device
 * on the other, large (OB_PIPELINE_MIN_BYTES), a driver that has events, and pack threads that
 * get processors (under contention one thread packs no faster than the driver's staging). */
static int pipelines(const ob_plan_params *params, const ob_copy *copy)
{
    const ob_driver *driver = params->driver;
    return copy->rect == NULL &&
           (copy->category == OB_CAT_H2D_PAGEABLE || copy->category == OB_CAT_D2H_PAGEABLE) &&
           copy->bytes >= OB_PIPELINE_MIN_BYTES && driver->fn.cuEventCreate != NULL &&
           driver->fn.cuEventRecord != NULL && driver->fn.cuEventQuery != NULL &&
           driver->fn.cuEventDestroy != NULL && !ob_workers_late();
}

static int add_decision(ob_plan *plan, const ob_decision *decision)
{
    int status = reserve((void **)&plan->decisions, &plan->decision_capacity,
                         plan->decision_count + 1, sizeof(*plan->decisions));
    if (status == OMPBATCH_OK)
        plan->decisions[plan->decision_count++] = *decision;
    return status;
}

/* Decides which copies of one group [begin, end) go staged. *level_bytes counts the staging
 * the level's pack and gather pieces take so far. */
static int choose_group(ob_plan *plan, size_t begin, size_t end, const ob_plan_params *params,
                        size_t *level_bytes)
{
    ob_copy *copies = plan->copies;
    ob_lane lane = ob_cost_lane(copies[begin].category);
    if (lane == OB_LANE_NONE)
        return OMPBATCH_OK;
    ob_route direct_route = copies[begin].route; /* route_groups gave the group one route */
    ob_decision decision = {.level = copies[begin].level, .category = copies[begin].category,
                            .copies = end - begin,
                            .forced = params->strategy == OB_STRATEGY_STAGED,
                            .lone_bounce = plan->count == 1 &&
                                           lone_bounces(params, &copies[begin])};
    const ob_cost_curve *direct = params->cost ? &params->cost->curve[lane][OB_WAY_DIRECT] : NULL;
    const ob_cost_curve *staged = params->cost ? &params->cost->curve[lane][OB_WAY_STAGED] : NULL;
    /* Candidates: pieces the model says are cheaper staged (every piece when forced), while
     * the level's staging lasts. */
    size_t budget = OB_STAGED_LEVEL_BYTES - *level_bytes, used = 0;
    size_t priced = 0; /* pieces usually share a size: price each size once */
    double d = 0.0, s = 0.0;
    for (size_t i = begin; i < end; i++) {
        ob_copy *c = &copies[i];
        if (c->rect != NULL)
            continue; /* staged already (choose_strategies) */
        c->stage_how = stage_how(params, c);
        if (!decision.forced && pipelines(params, c)) {
            c->route = OB_ROUTE_PIPELINED;
            decision.pipelined++;
            continue;
        }
        int candidate = decision.forced || decision.lone_bounce;
        if (direct != NULL) {
            if (c->bytes != priced) {
                d = ob_cost_piece(direct, c->bytes);
                s = ob_cost_piece(staged, c->bytes);
                priced = c->bytes;
            }
            candidate = candidate || s < d;
        }
        size_t need = c->stage_how == OB_STAGE_IN_PLACE ? 0 : c->bytes + 64;
        if (!candidate || need > budget - used)
            continue;
        used += need;
        c->route = OB_ROUTE_STAGED;
        decision.staged++;
        decision.direct_us += d;
        decision.staged_us += s;
    }
    if (direct != NULL && decision.staged > 0) {
        decision.staged_us += staged->fixed_us;
        /* Moving the whole group saves the direct part's own submit. */
        if (decision.staged == decision.copies)
            decision.direct_us += direct->fixed_us;
    }
    int go = decision.staged > 0 && (decision.forced || decision.lone_bounce ||
                                     decision.staged_us < decision.direct_us);
    if (!go) {
        for (size_t i = begin; i < end; i++)
            if (copies[i].route == OB_ROUTE_STAGED && copies[i].rect == NULL)
                copies[i].route = direct_route;
        decision.staged = 0;
    } else {
        *level_bytes += used;
    }
    return add_decision(plan, &decision);
}

/* Runs after route_groups, on copies sorted by level and category. */
static int choose_strategies(ob_plan *plan, const ob_plan_params *params)
{
    if (params->driver == NULL || params->disabled || params->strategy == OB_STRATEGY_DIRECT ||
        params->form == OMPBATCH_FORM_NONE)
        return OMPBATCH_OK;
    if (params->cost != NULL)
        plan->cost_source = params->cost->source;
    /* A rectangle kept whole is staged, whatever its memory: one kernel walks it, where the
     * other backends would need a copy per run (the host's own copies walk it on the host). */
    for (size_t i = 0; i < plan->count; i++) {
        ob_copy *c = &plan->copies[i];
        if (c->rect != NULL && c->route != OB_ROUTE_HOST) {
            c->route = OB_ROUTE_STAGED;
            c->stage_how = stage_how(params, c);
        }
    }
    size_t begin = 0, level_bytes = 0;
    while (begin < plan->count) {
        size_t end = begin;
        while (end < plan->count && plan->copies[end].level == plan->copies[begin].level &&
               plan->copies[end].category == plan->copies[begin].category)
            end++;
        if (begin > 0 && plan->copies[begin].level != plan->copies[begin - 1].level)
            level_bytes = 0;
        int status = choose_group(plan, begin, end, params, &level_bytes);
        if (status != OMPBATCH_OK)
            return status;
        begin = end;
    }
    return OMPBATCH_OK;
}

static int add_step(ob_plan *plan, ob_route route, unsigned level, size_t begin, size_t end)
{
    int status = reserve((void **)&plan->steps, &plan->step_capacity, plan->step_count + 1,
                         sizeof(*plan->steps));
    if (status != OMPBATCH_OK)
        return status;
    ob_step *step = &plan->steps[plan->step_count++];
    memset(step, 0, sizeof(*step));
    step->route = route;
    step->level = level;
    step->begin = begin;
    step->end = end;
    if (route != OB_ROUTE_BATCH)
        return OMPBATCH_OK;
    step->attr_begin = plan->attr_count;
    for (size_t i = begin; i < end; i++) {
        if (i > begin && ob_attrs_equal(&plan->copies[i].attr, &plan->copies[i - 1].attr))
            continue;
        size_t n = plan->attr_count + 1;
        if ((status = reserve((void **)&plan->attrs, &plan->attr_capacity, n,
                              sizeof(*plan->attrs))) != OMPBATCH_OK ||
            (status = reserve((void **)&plan->attr_idxs, &plan->attr_idx_capacity, n,
                              sizeof(*plan->attr_idxs))) != OMPBATCH_OK)
            return status;
        plan->attrs[plan->attr_count] = plan->copies[i].attr;
        plan->attr_idxs[plan->attr_count] = i - begin;
        plan->attr_count++;
        step->attr_count++;
    }
    return OMPBATCH_OK;
}

static int build_steps(ob_plan *plan, const ob_plan_params *params)
{
    /* Every level has a step at least: one allocation for them, not a doubling run (whose
     * last step holds both arrays, with a level per copy 60 MB at 10^6 copies). */
    int status = reserve((void **)&plan->steps, &plan->step_capacity, plan->levels,
                         sizeof(*plan->steps));
    if (status != OMPBATCH_OK)
        return status;
    size_t begin = 0;
    while (begin < plan->count) {
        const ob_copy *first = &plan->copies[begin];
        size_t end = begin;
        while (end < plan->count && plan->copies[end].level == first->level &&
               plan->copies[end].route == first->route)
            end++;
        /* Staged copies of a level go as one step: one staging region, two launches. */
        size_t chunk = first->route == OB_ROUTE_BATCH ? params->max_copies : end - begin;
        /* Stepped by what is left, not `at += chunk`: a chunk of SIZE_MAX ("no limit") would
         * wrap around to copies of this level already stepped. */
        for (size_t at = begin, stop; at < end; at = stop) {
            stop = end - at > chunk ? at + chunk : end;
            if ((status = add_step(plan, first->route, first->level, at, stop)) != OMPBATCH_OK)
                return status;
        }
        begin = end;
    }
    return OMPBATCH_OK;
}

/* A lone small device copy goes to cuMemcpyAsync whatever its memory is, so classifying it
 * would only add two driver queries to the cheapest and most common case (one small item). The
 * driver still checks its pointers; only ompbatch's own kind-versus-device-number check is
 * skipped. A lone large copy is classified: from or into pageable memory the staged strategy
 * can move it faster than the driver's own bounce buffers (plan.h says from what size). */

static void plan_lone_copy(ob_plan *plan)
{
    ob_copy *copy = &plan->copies[0];
    memset(&copy->dst_mem, 0, sizeof(copy->dst_mem));
    memset(&copy->src_mem, 0, sizeof(copy->src_mem));
    copy->dst_mem.ordinal = copy->src_mem.ordinal = -1;
    memset(&copy->attr, 0, sizeof(copy->attr));
    copy->level = 0;
    /* Even when both sides are named the host, an unclassified pointer may be device memory:
     * only the driver may touch it. */
    copy->category = OB_CAT_LONE;
    copy->route = OB_ROUTE_PER_COPY;
    plan->levels = 1;
    plan->bytes = copy->bytes;
}

static int plan_added(ob_plan *plan, size_t count, const ob_plan_params *params);

int ob_plan_build(ob_plan *plan, const ob_copy *added, size_t count,
                  const ob_plan_params *params)
{
    ob_plan_clear(plan);
    int status = reserve((void **)&plan->copies, &plan->capacity, count ? count : 1,
                         sizeof(*plan->copies));
    if (status != OMPBATCH_OK)
        return status;
    memcpy(plan->copies, added, count * sizeof(*added));
    return plan_added(plan, count, params);
}

int ob_plan_build_from(ob_plan *plan, ob_copy **added, size_t *capacity, size_t count,
                       const ob_plan_params *params)
{
    ob_plan_clear(plan);
    ob_copy *copies = plan->copies;
    size_t copies_capacity = plan->capacity;
    plan->copies = *added;
    plan->capacity = *capacity;
    *added = copies;
    *capacity = copies_capacity;
    if (plan->copies == NULL) {
        int status = reserve((void **)&plan->copies, &plan->capacity, 1, sizeof(*plan->copies));
        if (status != OMPBATCH_OK)
            return status;
    }
    return plan_added(plan, count, params);
}

/* Plans plan->copies[0, count), the copies as added. */

static int plan_added(ob_plan *plan, size_t count, const ob_plan_params *params)
{
    int status = OMPBATCH_OK;
    plan->added = count;
    for (size_t i = 0; i < count; i++) {
        if (plan->copies[i].bytes == 0) {
            plan->zero_copies++;
            continue;
        }
        if (plan->count != i)
            plan->copies[plan->count] = plan->copies[i];
        plan->copies[plan->count].merged = 1;
        plan->bytes += plan->copies[i].bytes; /* merging keeps the total */
        if ((status = check_self_overlap(&plan->copies[plan->count++])) != OMPBATCH_OK)
            goto fail;
    }
    if (params->driver != NULL && plan->count == 1 && plan->copies[0].rect == NULL &&
        (plan->copies[0].bytes < OB_LONE_STAGED_MIN_BYTES || params->disabled ||
         params->strategy == OB_STRATEGY_DIRECT) &&
        !lone_may_bounce(params, &plan->copies[0])) {
        plan_lone_copy(plan);
        return build_steps(plan, params);
    }
    for (size_t i = 0; i < plan->count; i++) {
        const ob_copy *prev = i > 0 && (params->driver != NULL || params->host_driver != NULL)
                                  ? &plan->copies[i - 1]
                                  : NULL;
        if (!classify_like(prev, &plan->copies[i]) &&
            (status = classify(params, &plan->copies[i])) != OMPBATCH_OK)
            goto fail;
    }
    if ((status = ob_levels_compute(plan->copies, plan->count, &plan->levels)) != OMPBATCH_OK)
        goto fail;
    /* A source an earlier copy of this batch writes must be read in stream order, whatever
     * its map type or memory kind allowed on its own. */
    for (size_t i = 0; i < plan->count && plan->levels > 1; i++) {
        if (plan->copies[i].level > 0 && plan->copies[i].category != OB_CAT_H2H)
            plan->copies[i].attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    }
    ob_sort_unless_sorted(plan->copies, plan->count, sizeof(*plan->copies), compare_for_merge);
    if (!params->disabled) {
        size_t merged = merge_neighbours(plan->copies, plan->count);
        plan->merged_away = plan->count - merged;
        plan->count = merged;
    }
    route_groups(plan->copies, plan->count, params);
    if ((status = choose_strategies(plan, params)) != OMPBATCH_OK)
        goto fail;
    ob_sort_unless_sorted(plan->copies, plan->count, sizeof(*plan->copies), compare_for_steps);
    if ((status = build_steps(plan, params)) != OMPBATCH_OK)
        goto fail;
    return OMPBATCH_OK;
fail:
    ob_plan_clear(plan);
    plan->added = count;
    return status;
}

void ob_plan_clear(ob_plan *plan)
{
    static _Atomic unsigned long generations;
    plan->generation = ++generations;
    plan->count = 0;
    plan->step_count = 0;
    plan->attr_count = 0;
    plan->added = 0;
    plan->zero_copies = 0;
    plan->merged_away = 0;
    plan->levels = 0;
    plan->bytes = 0;
    plan->decision_count = 0;
    plan->cost_source = NULL;
}

void ob_plan_free(ob_plan *plan)
{
    free(plan->copies);
    free(plan->steps);
    free(plan->attrs);
    free(plan->attr_idxs);
    free(plan->decisions);
    memset(plan, 0, sizeof(*plan));
}

/* ---- description ------------------------------------------------------------------------- */

typedef struct text {
    char *buf;
    size_t size;
    size_t length; /* as if buf were large enough */
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->length < t->size ? t->size - t->length : 0;
    int n = vsnprintf(room ? t->buf + t->length : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->length += (size_t)n;
}

static const char *hint_name(const CUmemLocation *location)
{
    switch (location->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return "device";
    case CU_MEM_LOCATION_TYPE_HOST:
        return "host";
    default:
        return "none";
    }
}

size_t ob_plan_describe(const ob_plan *plan, char *buf, size_t size)
{
    text t = {buf, size, 0};
    if (size > 0)
        buf[0] = '\0';
    put(&t, "plan: %zu copies added, %zu zero-byte skipped, %zu merged into neighbours, "
            "%zu planned (%zu bytes) in %u level(s), %zu step(s)\n",
        plan->added, plan->zero_copies, plan->merged_away, plan->count, plan->bytes,
        plan->levels, plan->step_count);
    for (size_t d = 0; d < plan->decision_count; d++) {
        const ob_decision *dec = &plan->decisions[d];
        put(&t, "strategy: level %u, %s, %zu cop%s: %zu staged", dec->level,
            ob_category_name(dec->category), dec->copies, dec->copies == 1 ? "y" : "ies",
            dec->staged);
        if (dec->pipelined > 0)
            put(&t, ", %zu pipelined (%zu MiB and up)", dec->pipelined,
                OB_PIPELINE_MIN_BYTES >> 20);
        if (dec->forced)
            put(&t, " (forced)\n");
        else if (dec->lone_bounce)
            put(&t, " (a lone copy into pageable memory: through pinned staging)\n");
        else
            put(&t, " (predicted for the candidates: direct %.1f us, staged %.1f us; model %s)\n",
                dec->direct_us, dec->staged_us, plan->cost_source ? plan->cost_source : "none");
    }
    for (size_t s = 0; s < plan->step_count; s++) {
        const ob_step *step = &plan->steps[s];
        size_t n = step->end - step->begin;
        put(&t, "step %zu: level %u, %s, %zu cop%s", s, step->level, ob_route_name(step->route),
            n, n == 1 ? "y" : "ies");
        if (step->route == OB_ROUTE_BATCH)
            put(&t, ", %zu attribute group(s)", step->attr_count);
        put(&t, "\n");
        for (size_t a = 0; a < step->attr_count; a++) {
            const CUmemcpyAttributes *attr = &plan->attrs[step->attr_begin + a];
            put(&t, "  attrs[%zu] from copy %zu: srcAccessOrder=%s srcLocHint=%s dstLocHint=%s "
                    "flags=%u\n",
                a, plan->attr_idxs[step->attr_begin + a],
                ob_access_order_name(attr->srcAccessOrder), hint_name(&attr->srcLocHint),
                hint_name(&attr->dstLocHint), attr->flags);
        }
        for (size_t i = step->begin; i < step->end; i++) {
            const ob_copy *c = &plan->copies[i];
            put(&t, "  copy %zu (added #%zu", i - step->begin, c->index);
            if (c->merged > 1)
                put(&t, ", %zu merged", c->merged);
            put(&t, "): %s, %zu bytes, %#" PRIxPTR " (%s) -> %#" PRIxPTR " (%s)",
                ob_category_name(c->category), c->bytes, c->src, ob_mem_kind_name(c->src_mem.kind),
                c->dst, ob_mem_kind_name(c->dst_mem.kind));
            if (c->route == OB_ROUTE_STAGED)
                put(&t, ", %s", ob_stage_how_name(c->stage_how));
            if (c->rect != NULL)
                put(&t, ", rectangle of %" PRIu64 " runs (spans %" PRIu64 " -> %" PRIu64
                        " bytes)",
                    c->rect->runs, c->rect->src_span, c->rect->dst_span);
            put(&t, "\n");
        }
    }
    return t.length;
}
