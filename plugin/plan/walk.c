#include "plugin/plan/walk.h"

#include <string.h>

/* One walked dimension while a walk is built. */
typedef struct dim {
    uint64_t count;
    uint64_t stride;
} dim;

void ob_walk_build(uint64_t element_size, int dims, const uint64_t *count,
                   const uint64_t *stride_bytes, ob_walk *out)
{
    dim list[OB_WALK_MAX_DIMS];
    size_t n = 0;
    uint64_t total = element_size;
    for (int d = dims - 1; d >= 0; d--) { /* innermost first */
        total *= count[d];
        if (count[d] != 1)
            list[n++] = (dim){count[d], stride_bytes[d]};
    }
    /* A dimension whose stride is the whole of the next-inner one continues it. */
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        if (kept > 0 && list[k].stride == list[kept - 1].count * list[kept - 1].stride)
            list[kept - 1].count *= list[k].count;
        else
            list[kept++] = list[k];
    }
    /* The innermost dimensions laid end to end are the run. */
    uint64_t run = element_size;
    size_t first = 0;
    while (first < kept && list[first].stride == run)
        run *= list[first++].count;
    memset(out, 0, sizeof(*out));
    if (first == kept) {
        out->run = total;
        return;
    }
    out->run = run;
    out->dims = kept - first;
    for (size_t d = 0; d < out->dims; d++) {
        out->count[d] = list[first + d].count;
        out->stride[d] = list[first + d].stride;
    }
}

static uint64_t span_of(const ob_walk *w, uint64_t bytes)
{
    if (w->dims == 0)
        return bytes;
    uint64_t span = w->run;
    for (uint64_t d = 0; d < w->dims; d++)
        span += (w->count[d] - 1) * w->stride[d];
    return span;
}

static uint64_t walk_bits(const ob_walk *w)
{
    if (w->dims == 0)
        return 0;
    uint64_t bits = w->run;
    for (uint64_t d = 0; d < w->dims; d++)
        bits |= w->stride[d];
    return bits;
}

static unsigned unit_of(uint64_t bits)
{
    unsigned unit = 1;
    while (unit < 16 && (bits & unit) == 0)
        unit <<= 1;
    return unit;
}

static int walk_same(const ob_walk *a, const ob_walk *b)
{
    if (a->run != b->run || a->dims != b->dims)
        return 0;
    for (uint64_t d = 0; d < a->dims && d < OB_WALK_MAX_DIMS; d++)
        if (a->count[d] != b->count[d] || a->stride[d] != b->stride[d])
            return 0;
    return 1;
}

int ob_rect_same(const ob_rect *a, const ob_rect *b)
{
    return walk_same(&a->dst, &b->dst) && walk_same(&a->src, &b->src) && a->bytes == b->bytes &&
           a->dst_span == b->dst_span && a->src_span == b->src_span && a->runs == b->runs &&
           a->unit == b->unit;
}

void ob_rect_finish(ob_rect *rect, uint64_t bytes, uint64_t runs)
{
    rect->bytes = bytes;
    rect->runs = runs;
    rect->dst_span = span_of(&rect->dst, bytes);
    rect->src_span = span_of(&rect->src, bytes);
    rect->unit = unit_of(bytes | walk_bits(&rect->dst) | walk_bits(&rect->src));
}

unsigned ob_rect_unit(const ob_rect *rect, uint64_t dst, uint64_t src)
{
    return unit_of(rect->unit | dst | src);
}

uint64_t ob_walk_at(const ob_walk *w, uint64_t x)
{
    if (w->dims == 0)
        return x;
    uint64_t q = x / w->run, at = x - q * w->run;
    for (uint64_t d = 0; d < w->dims; d++) {
        at += (q % w->count[d]) * w->stride[d];
        q /= w->count[d];
    }
    return at;
}

/* ---- visiting the pieces ---------------------------------------------------------------- */

static void side_seek(const ob_walk *w, uint64_t x, uint64_t *at, uint64_t *in_run,
                      uint64_t *index)
{
    *at = x;
    *in_run = 0;
    if (w->dims == 0)
        return;
    uint64_t q = x / w->run;
    *in_run = *at = x - q * w->run;
    for (uint64_t d = 0; d < w->dims; d++) {
        index[d] = q % w->count[d];
        q /= w->count[d];
        *at += index[d] * w->stride[d];
    }
}

static uint64_t side_left(const ob_walk *w, uint64_t in_run)
{
    return w->dims == 0 ? UINT64_MAX : w->run - in_run;
}

/* n is at most what is left of the run. */
static void side_advance(const ob_walk *w, uint64_t n, uint64_t *at, uint64_t *in_run,
                         uint64_t *index)
{
    *at += n;
    if (w->dims == 0 || (*in_run += n) < w->run)
        return;
    *at -= w->run;
    *in_run = 0;
    for (uint64_t d = 0; d < w->dims; d++) {
        if (++index[d] < w->count[d]) {
            *at += w->stride[d];
            return;
        }
        *at -= (w->count[d] - 1) * w->stride[d];
        index[d] = 0;
    }
}

static void seek2(const ob_walk *const w[2], uint64_t x, ob_rect_cursor *c)
{
    c->x = x;
    for (int s = 0; s < 2; s++)
        side_seek(w[s], x, &c->at[s], &c->in_run[s], c->index[s]);
}

static int next2(const ob_walk *const w[2], ob_rect_cursor *c, uint64_t end, uint64_t *dst_at,
                 uint64_t *src_at, uint64_t *bytes)
{
    if (c->x >= end)
        return 0;
    uint64_t n = end - c->x;
    for (int s = 0; s < 2; s++) {
        uint64_t left = side_left(w[s], c->in_run[s]);
        if (left < n)
            n = left;
    }
    *dst_at = c->at[0];
    *src_at = c->at[1];
    *bytes = n;
    c->x += n;
    for (int s = 0; s < 2; s++)
        side_advance(w[s], n, &c->at[s], &c->in_run[s], c->index[s]);
    return 1;
}

void ob_rect_seek(const ob_rect *rect, uint64_t x, ob_rect_cursor *cursor)
{
    const ob_walk *const w[2] = {&rect->dst, &rect->src};
    seek2(w, x, cursor);
}

int ob_rect_next(const ob_rect *rect, ob_rect_cursor *cursor, uint64_t end, uint64_t *dst_at,
                 uint64_t *src_at, uint64_t *bytes)
{
    const ob_walk *const w[2] = {&rect->dst, &rect->src};
    return next2(w, cursor, end, dst_at, src_at, bytes);
}

void ob_walk_copy(void *dst, const ob_walk *dst_walk, const void *src, const ob_walk *src_walk,
                  uint64_t begin, uint64_t end, void (*copy)(void *, const void *, size_t))
{
    static const ob_walk compact = {0};
    const ob_walk *const w[2] = {dst_walk != NULL ? dst_walk : &compact,
                                 src_walk != NULL ? src_walk : &compact};
    ob_rect_cursor c;
    seek2(w, begin, &c);
    uint64_t d, s, n;
    while (next2(w, &c, end, &d, &s, &n)) {
        unsigned char *to = (unsigned char *)dst + d;
        const unsigned char *from = (const unsigned char *)src + s;
        /* Small pieces are a halo's elements: a call per piece would cost more than them. */
        switch (n) {
        case 8:
            memcpy(to, from, 8);
            break;
        case 16:
            memcpy(to, from, 16);
            break;
        case 4:
            memcpy(to, from, 4);
            break;
        default:
            copy(to, from, (size_t)n);
            break;
        }
    }
}
