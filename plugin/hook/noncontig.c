#include "plugin/hook/noncontig.h"

#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/core/sort.h"

/* a * b + c, or -1 when it does not fit. */
static int mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    if (b != 0 && a > (UINT64_MAX - c) / b)
        return -1;
    *out = a * b + c;
    return 0;
}

/* The product of counts[0..n), or -1 when it passes limit. */
static int count_pieces(const uint64_t *counts, int n, size_t limit, size_t *out)
{
    uint64_t total = 1;
    for (int k = 0; k < n; k++) {
        if (counts[k] == 0) {
            *out = 0;
            return 0;
        }
        if (total > (uint64_t)limit / counts[k])
            return -1;
        total *= counts[k];
    }
    if (total > (uint64_t)limit)
        return -1;
    *out = (size_t)total;
    return 0;
}

/* One dimension as the enumeration walks it: index i runs over [0, count); its byte offset is
 * first + i * step. */
typedef struct walk_dim {
    uint64_t first, step, count;
} walk_dim;

/* Every combination of the dimensions' indices, outermost slowest, each piece at the sum of
 * the dimensions' offsets plus `extra`, of `size` bytes. The caller has checked the count;
 * offsets are checked here. */
static ob_pieces_status walk(const walk_dim *w, int n, uint64_t extra, uint64_t size,
                             size_t total, ob_strided_pieces *out)
{
    out->at = NULL;
    out->count = 0;
    if (total == 0)
        return OB_PIECES_OK;
    /* The largest offset bounds every other: check it once. */
    uint64_t last = extra, end;
    for (int k = 0; k < n; k++) {
        uint64_t reach;
        if (mul_add(w[k].count - 1, w[k].step, w[k].first, &reach) != 0 ||
            mul_add(1, last, reach, &last) != 0)
            return OB_PIECES_OVERFLOW;
    }
    if (mul_add(1, last, size, &end) != 0)
        return OB_PIECES_OVERFLOW;
    out->at = ob_malloc(total * sizeof(*out->at));
    if (out->at == NULL)
        return OB_PIECES_NO_MEMORY;
    uint64_t index[OB_PIECES_MAX_DIMS] = {0};
    for (size_t p = 0; p < total; p++) {
        uint64_t offset = extra;
        for (int k = 0; k < n; k++)
            offset += w[k].first + index[k] * w[k].step;
        out->at[p] = (ob_strided_piece){offset, size};
        for (int k = n - 1; k >= 0; k--) {
            if (++index[k] < w[k].count)
                break;
            index[k] = 0;
        }
    }
    out->count = total;
    return OB_PIECES_OK;
}

ob_pieces_status ob_pieces_runtime(const ob_non_contig *d, int64_t dims, size_t limit,
                                   ob_strided_pieces *out)
{
    out->at = NULL;
    out->count = 0;
    if (d == NULL || dims <= 0 || dims > OB_PIECES_MAX_DIMS)
        return OB_PIECES_FORMAT;
    int n = (int)dims;
    /* libomptarget computes these with wrapping 64-bit arithmetic; a size that wrapped is not
     * one the hook copies. */
    uint64_t size;
    if (mul_add(d[n - 1].count, d[n - 1].stride, 0, &size) != 0)
        return OB_PIECES_OVERFLOW;
    int merged = 0;
    for (int k = n - 1; k > 0; k--)
        if (d[k].count * d[k].stride == d[k - 1].stride)
            merged++;
    int levels = n - merged; /* dimensions walked; the last one only at index 0 */
    walk_dim w[OB_PIECES_MAX_DIMS] = {{0, 0, 0}};
    uint64_t counts[OB_PIECES_MAX_DIMS] = {0};
    for (int k = 0; k < levels; k++) {
        uint64_t first;
        if (mul_add(d[k].offset, d[k].stride, 0, &first) != 0)
            return OB_PIECES_OVERFLOW;
        w[k] = (walk_dim){first, d[k].stride, d[k].count};
        counts[k] = d[k].count;
    }
    if (counts[levels - 1] != 0)
        counts[levels - 1] = w[levels - 1].count = 1;
    size_t total;
    if (count_pieces(counts, levels, limit, &total) != 0)
        return OB_PIECES_TOO_MANY;
    return walk(w, levels, 0, size, total, out);
}

ob_pieces_status ob_pieces_spec(const ob_non_contig *d, int64_t dims, size_t limit,
                                ob_strided_pieces *out)
{
    out->at = NULL;
    out->count = 0;
    if (d == NULL || dims < 2 || dims > OB_PIECES_MAX_DIMS)
        return OB_PIECES_FORMAT;
    int n = (int)dims;
    uint64_t element = d[n - 1].stride;
    if (d[n - 1].offset != 0 || d[n - 1].count != 1 || element == 0)
        return OB_PIECES_FORMAT;
    int inner = n - 2;
    uint64_t stride = d[inner].stride;
    if (stride == 0 || stride % element != 0)
        return OB_PIECES_FORMAT;
    walk_dim w[OB_PIECES_MAX_DIMS] = {{0, 0, 0}};
    uint64_t counts[OB_PIECES_MAX_DIMS] = {0};
    for (int k = 0; k < inner; k++) {
        uint64_t first;
        if (mul_add(d[k].offset, d[k].stride, 0, &first) != 0)
            return OB_PIECES_OVERFLOW;
        w[k] = (walk_dim){first, d[k].stride, d[k].count};
        counts[k] = d[k].count;
    }
    /* The innermost dimension starts at its offset in elements and steps by its stride; with
     * a user stride of 1 its elements form one run. */
    uint64_t first, size = element;
    if (mul_add(d[inner].offset, element, 0, &first) != 0)
        return OB_PIECES_OVERFLOW;
    int levels = inner;
    if (stride == element) {
        if (d[inner].count == 0)
            return OB_PIECES_OK;
        if (mul_add(d[inner].count, element, 0, &size) != 0)
            return OB_PIECES_OVERFLOW;
    } else {
        w[levels] = (walk_dim){0, stride, d[inner].count};
        counts[levels++] = d[inner].count;
    }
    size_t total;
    if (count_pieces(counts, levels, limit, &total) != 0)
        return OB_PIECES_TOO_MANY;
    return walk(w, levels, first, size, total, out);
}

static int by_offset(const void *x, const void *y)
{
    const ob_strided_piece *a = x, *b = y;
    return (a->offset > b->offset) - (a->offset < b->offset);
}

void ob_pieces_normalize(ob_strided_pieces *p)
{
    if (p->count == 0)
        return;
    ob_sort_unless_sorted(p->at, p->count, sizeof(*p->at), by_offset);
    size_t n = 0;
    for (size_t k = 0; k < p->count; k++) {
        const ob_strided_piece *c = &p->at[k];
        if (c->size == 0)
            continue;
        if (n > 0 && c->offset <= p->at[n - 1].offset + p->at[n - 1].size) {
            uint64_t end = c->offset + c->size;
            if (end > p->at[n - 1].offset + p->at[n - 1].size)
                p->at[n - 1].size = end - p->at[n - 1].offset;
            continue;
        }
        p->at[n++] = *c;
    }
    p->count = n;
}

int ob_pieces_same_bytes(ob_strided_pieces *a, ob_strided_pieces *b)
{
    ob_pieces_normalize(a);
    ob_pieces_normalize(b);
    return a->count == b->count &&
           (a->count == 0 || memcmp(a->at, b->at, a->count * sizeof(*a->at)) == 0);
}

void ob_pieces_free(ob_strided_pieces *p)
{
    free(p->at);
    p->at = NULL;
    p->count = 0;
}

int ob_pieces_rect(const ob_strided_pieces *p, ob_rect *out, uint64_t *first)
{
    size_t n = p->count;
    if (n < 2 || p->at[0].size == 0)
        return 0;
    uint64_t size = p->at[0].size, base = p->at[0].offset;
    /* Innermost level first: a level repeats the block of all inner levels count times. */
    uint64_t count[OB_WALK_MAX_DIMS], stride[OB_WALK_MAX_DIMS];
    int dims = 0;
    size_t block = 1; /* pieces in one repetition of the levels found so far */
    while (block < n) {
        if (dims == OB_WALK_MAX_DIMS || p->at[block].offset <= base)
            return 0;
        uint64_t step = p->at[block].offset - base;
        /* No overlap: a step clears the whole block below it. */
        uint64_t below = dims == 0 ? size : stride[dims - 1] * count[dims - 1];
        if (step < below)
            return 0;
        size_t reps = 1;
        while (block * (reps + 1) <= n && p->at[block * reps].offset - base == reps * step)
            reps++;
        count[dims] = reps;
        stride[dims] = step;
        dims++;
        if (n % (block * reps) != 0)
            return 0;
        block *= reps;
    }
    /* Every piece where the levels put it. */
    for (size_t k = 0; k < n; k++) {
        uint64_t at = base;
        size_t rest = k;
        for (int d = 0; d < dims; d++) {
            at += (rest % count[d]) * stride[d];
            rest /= count[d];
        }
        if (p->at[k].offset != at || p->at[k].size != size)
            return 0;
    }
    uint64_t outer_count[OB_WALK_MAX_DIMS], outer_stride[OB_WALK_MAX_DIMS];
    for (int d = 0; d < dims; d++) { /* ob_walk_build takes the outermost first */
        outer_count[d] = count[dims - 1 - d];
        outer_stride[d] = stride[dims - 1 - d];
    }
    memset(out, 0, sizeof(*out));
    ob_walk_build(size, dims, outer_count, outer_stride, &out->src);
    out->dst = out->src;
    uint64_t bytes = (uint64_t)n * size;
    ob_rect_finish(out, bytes, out->src.dims > 0 ? bytes / out->src.run : 1);
    *first = base;
    return 1;
}

