#include "plugin/plan/levels.h"

#include <stdint.h>
#include <stdlib.h>

#include "plugin/core/alloc.h"
#include "plugin/core/error.h"
#include "plugin/core/sort.h"

/* Memory a destination and a source could share: device, managed, or host (pageable and
 * pinned together: a pageable range is not known to end where a pinned one starts). */
static unsigned memory_class(const ob_mem_info *mem)
{
    return mem->kind == OB_MEM_DEVICE ? 1u : mem->kind == OB_MEM_MANAGED ? 2u : 4u;
}

/* The common batch, all in one direction, in address order, none overlapping, has one level:
 * when no source can lie in memory of a destination's class and the destinations are in
 * address order without overlap, this is known in one pass. */
static int obviously_one_level(const ob_copy *copies, size_t count)
{
    unsigned dst_classes = 0, src_classes = 0;
    for (size_t i = 0; i < count; i++) {
        dst_classes |= memory_class(&copies[i].dst_mem);
        src_classes |= memory_class(&copies[i].src_mem);
        if (i > 0 && copies[i].dst < copies[i - 1].dst + ob_copy_dst_extent(&copies[i - 1]))
            return 0;
    }
    return (dst_classes & src_classes) == 0;
}

/* ---- the endpoints of one side's ranges, sorted and unique --------------------------------- */

static int compare_address(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* Sorts (when not sorted already: copies usually come in address order) and drops repeats;
 * returns the count kept. */
static size_t sort_unique(uintptr_t *a, size_t n)
{
    ob_sort_unless_sorted(a, n, sizeof(*a), compare_address);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || a[kept - 1] != a[i])
            a[kept++] = a[i];
    return kept;
}

typedef struct endpoints {
    uintptr_t *at;
    size_t count;
    size_t allocated; /* entries of at, for ob_scratch_free */
} endpoints;

/* The starts and the ends of one side's ranges ([start, start + bytes) of dst or of src),
 * collected in `buffer` (2 * count words), sorted apart (each is in order when the copies
 * are) and merged into out. */
static int collect(const ob_copy *copies, size_t count, int dst, uintptr_t *buffer,
                   endpoints *out)
{
    uintptr_t *starts = buffer, *ends = buffer + count;
    for (size_t i = 0; i < count; i++) {
        starts[i] = dst ? copies[i].dst : copies[i].src;
        ends[i] = starts[i] +
                  (dst ? ob_copy_dst_extent(&copies[i]) : ob_copy_src_extent(&copies[i]));
    }
    size_t s = sort_unique(starts, count), e = sort_unique(ends, count);
    out->allocated = s + e;
    out->at = ob_scratch_alloc(out->allocated * sizeof(*out->at));
    if (out->at == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot order %zu copies by their ranges", count);
    size_t n = 0;
    for (size_t a = 0, b = 0; a < s || b < e;) {
        uintptr_t next = b == e || (a < s && starts[a] <= ends[b]) ? starts[a] : ends[b];
        a += a < s && starts[a] == next;
        b += b < e && ends[b] == next;
        out->at[n++] = next;
    }
    out->count = n;
    return OMPBATCH_OK;
}

/* How far a search gallops from its hint before it searches the rest of the array halving:
 * copies in address order land within a step or two of the previous answer; copies at random
 * places are better served by one plain binary search. */
#define OB_GALLOP_STEPS 4

/* The first index i in at[0, count) with at[i] >= x. The search starts at *hint, the answer
 * of the previous search of the same kind, and widens from there. */
static size_t lower_bound_near(const endpoints *e, uintptr_t x, size_t *hint)
{
    const uintptr_t *at = e->at;
    size_t h = *hint < e->count ? *hint : e->count, lo, hi;
    if (h < e->count && at[h] < x) {
        lo = h + 1;
        hi = e->count;
        size_t step = 1;
        for (int k = 0; k < OB_GALLOP_STEPS && h + step < e->count; k++, step *= 2) {
            if (at[h + step] >= x) {
                hi = h + step;
                break;
            }
            lo = h + step + 1;
        }
    } else if (h == 0 || at[h - 1] < x) {
        *hint = h;
        return h;
    } else {
        lo = 0;
        hi = h - 1;
        size_t step = 1;
        for (int k = 0; k < OB_GALLOP_STEPS && step < h; k++, step *= 2) {
            if (at[h - 1 - step] < x) {
                lo = h - step;
                break;
            }
            hi = h - 1 - step;
        }
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hint = lo;
    return lo;
}

/* ---- the latest level over each stretch of memory ------------------------------------------ */

/* A segment tree over the elementary segments [at[k], at[k + 1]) between one side's
 * endpoints, holding for each segment the highest level + 1 of the ranges of that side that
 * cover it (0: none). A range raises the canonical nodes covering it (tag: the whole node is
 * covered) and the maximum of every node above them; a query takes the maximum of its
 * canonical nodes and the tags above them. Tags are never pushed down: values only grow. */
typedef struct tree_node {
    uint32_t max; /* of the segments below, counting tags at and below this node */
    uint32_t tag; /* every segment below is covered at least this high */
} tree_node;

typedef struct tree {
    endpoints points;
    tree_node *nodes; /* 2 * leaves; node 1 is the root, leaf k is node leaves + k */
    size_t leaves;    /* a power of two >= the segments */
} tree;

static int tree_init(tree *t, const endpoints *points)
{
    t->points = *points;
    size_t segments = points->count > 1 ? points->count - 1 : 1;
    t->leaves = 1;
    while (t->leaves < segments)
        t->leaves *= 2;
    t->nodes = ob_scratch_calloc(2 * t->leaves, sizeof(*t->nodes));
    if (t->nodes == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate the dependency tree of %zu "
                       "segments", segments);
    return OMPBATCH_OK;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* The segments [*first, *last) that [x, y) overlaps (x < y); hint holds the two searches'. */
static int segments_of(const tree *t, uintptr_t x, uintptr_t y, size_t hint[2], size_t *first,
                       size_t *last)
{
    size_t segments = t->points.count - 1;
    size_t a = lower_bound_near(&t->points, x, &hint[0]);
    if (a < t->points.count && t->points.at[a] == x)
        a++; /* now the first endpoint above x: the segment ending there is the first */
    size_t b = lower_bound_near(&t->points, y, &hint[1]);
    *first = a > 0 ? a - 1 : 0;
    *last = b < segments ? b : segments;
    return *first < *last;
}

static uint32_t tree_max(const tree *t, size_t first, size_t last)
{
    const tree_node *n = t->nodes;
    uint32_t best = 0;
    for (size_t p = (first + t->leaves) >> 1, q = (last - 1 + t->leaves) >> 1; p > 0;
         p >>= 1, q >>= 1)
        best = max_u32(best, max_u32(n[p].tag, n[q].tag));
    for (size_t l = first + t->leaves, r = last + t->leaves; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            best = max_u32(best, n[l++].max);
        if (r & 1)
            best = max_u32(best, n[--r].max);
    }
    return best;
}

static void tree_raise(tree *t, size_t first, size_t last, uint32_t value)
{
    tree_node *n = t->nodes;
    for (size_t l = first + t->leaves, r = last + t->leaves; l < r; l >>= 1, r >>= 1) {
        if (l & 1) {
            n[l].max = max_u32(n[l].max, value);
            n[l].tag = max_u32(n[l].tag, value);
            l++;
        }
        if (r & 1) {
            --r;
            n[r].max = max_u32(n[r].max, value);
            n[r].tag = max_u32(n[r].tag, value);
        }
    }
    /* Every node above a raised one is above the first or the last segment. */
    for (size_t p = (first + t->leaves) >> 1, q = (last - 1 + t->leaves) >> 1; p > 0;
         p >>= 1, q >>= 1) {
        n[p].max = max_u32(n[p].max, value);
        n[q].max = max_u32(n[q].max, value);
    }
}

/* ---- levels ---------------------------------------------------------------------------------- */

/* Copy j's level is the highest level + 1 among the earlier destinations overlapping its
 * destination or its source and the earlier sources overlapping its destination; reads of
 * the same bytes do not order each other. */
static void tree_sweep(ob_copy *copies, size_t count, tree *dsts, tree *srcs,
                       unsigned *levels_out)
{
    size_t dst_in_dsts[2] = {0, 0}, src_in_dsts[2] = {0, 0};
    size_t dst_in_srcs[2] = {0, 0}, src_in_srcs[2] = {0, 0};
    uint32_t levels = 0;
    for (size_t j = 0; j < count; j++) {
        ob_copy *c = &copies[j];
        uintptr_t dst_end = c->dst + ob_copy_dst_extent(c);
        uintptr_t src_end = c->src + ob_copy_src_extent(c);
        size_t d0 = 0, d1 = 0, s0 = 0, s1 = 0, x0 = 0, x1 = 0, y0 = 0, y1 = 0;
        int own_dst = segments_of(dsts, c->dst, dst_end, dst_in_dsts, &d0, &d1);
        int own_src = segments_of(srcs, c->src, src_end, src_in_srcs, &s0, &s1);
        uint32_t level = 0;
        if (own_dst)
            level = tree_max(dsts, d0, d1);
        if (segments_of(dsts, c->src, src_end, src_in_dsts, &x0, &x1))
            level = max_u32(level, tree_max(dsts, x0, x1));
        if (segments_of(srcs, c->dst, dst_end, dst_in_srcs, &y0, &y1))
            level = max_u32(level, tree_max(srcs, y0, y1));
        c->level = level;
        if (own_dst)
            tree_raise(dsts, d0, d1, level + 1);
        if (own_src)
            tree_raise(srcs, s0, s1, level + 1);
        if (level + 1 > levels)
            levels = level + 1;
    }
    *levels_out = levels;
}

/* ---- few overlaps: the conflicting pairs themselves -------------------------------------- */

/* Most batches that overlap at all do so sparsely: then sweeping the ranges in address order
 * and relaxing the few conflicting pairs is cheaper than the trees (sequential passes instead
 * of searches). The sweep gives up, leaving the batch to the trees, as soon as more ranges than
 * this are open at one address (many copies on the same bytes) or the pairs found outgrow
 * this multiple of the ranges swept so far: its time and memory stay linear beside the sort,
 * and a dense batch is given up early. */
#define OB_SWEEP_MAX_OPEN 64
#define OB_SWEEP_PAIRS_PER_RANGE 2
#define OB_SWEEP_SLACK 1024
#define OB_SWEEP_GAVE_UP 1

/* A range of the sweep, sorted by start: its end is read from the copy when it opens. */
typedef struct span {
    uintptr_t start;
    uint32_t copy;
    uint32_t is_dst;
} span;

typedef struct open_span {
    uintptr_t end;
    uint32_t copy;
    uint32_t is_dst;
} open_span;

typedef struct pair {
    uint32_t earlier;
    uint32_t later;
} pair;

static int compare_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->copy > y->copy) - (x->copy < y->copy);
}

static int compare_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->later != y->later)
        return x->later < y->later ? -1 : 1;
    return (x->earlier > y->earlier) - (x->earlier < y->earlier);
}

static void sort_spans(span *spans, size_t n)
{
    ob_sort_unless_sorted(spans, n, sizeof(*spans), compare_span);
}

/* Room for one more item in a growing array. */
static int room_for_one(void **items, size_t *capacity, size_t count, size_t item_size)
{
    if (ob_grow(items, capacity, count + 1, item_size) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot grow the dependency sweep past %zu "
                       "entries", count);
    return OMPBATCH_OK;
}

typedef struct pairs {
    pair *at;
    size_t count, capacity;
} pairs;

/* Finds the conflicting pairs by sweeping destinations and sources (each sorted by start)
 * merged, keeping the ranges still open at each start. */
static int find_pairs(const ob_copy *copies, const span *dsts, const span *srcs, size_t count,
                      int budgeted, pairs *found)
{
    open_span *open = NULL;
    size_t open_count = 0, open_capacity = 0, swept = 0;
    int status = OMPBATCH_OK;
    for (size_t d = 0, s = 0; status == OMPBATCH_OK && (d < count || s < count); swept++) {
        const span *cur = s == count || (d < count && compare_span(&dsts[d], &srcs[s]) <= 0)
                              ? &dsts[d++]
                              : &srcs[s++];
        size_t kept = 0;
        for (size_t o = 0; o < open_count && status == OMPBATCH_OK; o++) {
            const open_span *prev = &open[o];
            if (prev->end <= cur->start)
                continue; /* closed: drop it */
            open[kept++] = *prev;
            if (prev->copy == cur->copy || !(prev->is_dst || cur->is_dst))
                continue;
            status = room_for_one((void **)&found->at, &found->capacity, found->count,
                                  sizeof(*found->at));
            if (status == OMPBATCH_OK)
                found->at[found->count++] = prev->copy < cur->copy
                                                ? (pair){prev->copy, cur->copy}
                                                : (pair){cur->copy, prev->copy};
        }
        open_count = kept;
        if (status == OMPBATCH_OK && budgeted &&
            (open_count >= OB_SWEEP_MAX_OPEN ||
             found->count > OB_SWEEP_PAIRS_PER_RANGE * swept + OB_SWEEP_SLACK))
            status = OB_SWEEP_GAVE_UP;
        if (status == OMPBATCH_OK)
            status = room_for_one((void **)&open, &open_capacity, open_count, sizeof(*open));
        if (status == OMPBATCH_OK)
            open[open_count++] = (open_span){
                cur->start + (cur->is_dst ? ob_copy_dst_extent(&copies[cur->copy])
                                          : ob_copy_src_extent(&copies[cur->copy])),
                cur->copy, cur->is_dst};
    }
    free(open);
    return status;
}

/* Levels from the pairs, or OB_SWEEP_GAVE_UP. */
static int pair_sweep(ob_copy *copies, size_t count, int budgeted, unsigned *levels_out)
{
    span *spans = ob_scratch_alloc(2 * count * sizeof(*spans));
    if (spans == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot sweep %zu copies", count);
    span *dsts = spans, *srcs = spans + count;
    for (size_t i = 0; i < count; i++) {
        dsts[i] = (span){copies[i].dst, (uint32_t)i, 1};
        srcs[i] = (span){copies[i].src, (uint32_t)i, 0};
    }
    sort_spans(dsts, count);
    sort_spans(srcs, count);
    pairs found = {NULL, 0, 0};
    int status = find_pairs(copies, dsts, srcs, count, budgeted, &found);
    ob_scratch_free(spans, 2 * count * sizeof(*spans));
    if (status != OMPBATCH_OK) {
        free(found.at);
        return status;
    }
    /* Sorted by the later copy, every pair's earlier copy has its final level when read. */
    ob_sort_unless_sorted(found.at, found.count, sizeof(*found.at), compare_pair);
    unsigned levels = 1;
    for (size_t p = 0; p < found.count; p++) {
        unsigned need = copies[found.at[p].earlier].level + 1;
        ob_copy *later = &copies[found.at[p].later];
        if (later->level < need)
            later->level = need;
        if (later->level + 1 > levels)
            levels = later->level + 1;
    }
    free(found.at);
    *levels_out = levels;
    return OMPBATCH_OK;
}

/* Levels from the segment trees of both sides. */
static int tree_levels(ob_copy *copies, size_t count, unsigned *levels_out)
{
    endpoints dst_points = {NULL, 0, 0}, src_points = {NULL, 0, 0};
    tree dsts = {{NULL, 0, 0}, NULL, 0}, srcs = {{NULL, 0, 0}, NULL, 0};
    uintptr_t *buffer = ob_scratch_alloc(2 * count * sizeof(*buffer));
    int status = buffer != NULL ? OMPBATCH_OK
                                : ob_fail(OMPBATCH_ERR_NO_MEMORY,
                                          "cannot order %zu copies by their ranges", count);
    if (status == OMPBATCH_OK)
        status = collect(copies, count, 1, buffer, &dst_points);
    if (status == OMPBATCH_OK)
        status = collect(copies, count, 0, buffer, &src_points);
    ob_scratch_free(buffer, 2 * count * sizeof(*buffer));
    if (status == OMPBATCH_OK && (status = tree_init(&dsts, &dst_points)) == OMPBATCH_OK &&
        (status = tree_init(&srcs, &src_points)) == OMPBATCH_OK)
        tree_sweep(copies, count, &dsts, &srcs, levels_out);
    ob_scratch_free(dsts.nodes, 2 * dsts.leaves * sizeof(*dsts.nodes));
    ob_scratch_free(srcs.nodes, 2 * srcs.leaves * sizeof(*srcs.nodes));
    ob_scratch_free(dst_points.at, dst_points.allocated * sizeof(*dst_points.at));
    ob_scratch_free(src_points.at, src_points.allocated * sizeof(*src_points.at));
    return status;
}

int ob_levels_compute(ob_copy *copies, size_t count, unsigned *levels_out)
{
    return ob_levels_compute_way(copies, count, levels_out, OB_LEVELS_AUTO);
}

int ob_levels_compute_way(ob_copy *copies, size_t count, unsigned *levels_out,
                          ob_levels_way way)
{
    *levels_out = count ? 1 : 0;
    for (size_t i = 0; i < count; i++)
        copies[i].level = 0;
    if (count == 0 || (way == OB_LEVELS_AUTO && obviously_one_level(copies, count)))
        return OMPBATCH_OK;
    /* The sweeps name copies by 32-bit indices. */
    if (count > UINT32_MAX - 1)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "%zu copies are more than one batch can order (at most %u)", count,
                       UINT32_MAX - 1);
    if (way != OB_LEVELS_TREES) {
        int status = pair_sweep(copies, count, way == OB_LEVELS_AUTO, levels_out);
        if (status != OB_SWEEP_GAVE_UP)
            return status;
        for (size_t i = 0; i < count; i++)
            copies[i].level = 0;
    }
    return tree_levels(copies, count, levels_out);
}
