/* Rectangles as one copy: each side's geometry as a walk (kernels.h), built from the
 * dimensions of omp_target_memcpy_rect, and what the host and the planner need of it: the
 * bytes a side spans, its contiguous runs in order, and host copies along two walks. */
#ifndef OMPBATCH_PLUGIN_WALK_H
#define OMPBATCH_PLUGIN_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/cuda/kernels.h"

typedef struct ob_rect {
    ob_walk dst;
    ob_walk src;
    uint64_t bytes;      /* compact bytes of the rectangle */
    uint64_t dst_span;   /* bytes from each side's first byte to just past its last */
    uint64_t src_span;
    uint64_t runs;       /* pieces contiguous on both sides */
    unsigned unit;       /* the widest unit the walks allow (16 at most), before the bases */
} ob_rect;

/* One side of a rectangle, innermost dimension last as in omp_target_memcpy_rect: how many
 * elements are copied along each dimension and how many bytes apart consecutive indices
 * lie. Dimensions of count 1 and dimensions that continue each other are folded together. */
void ob_walk_build(uint64_t element_size, int dims, const uint64_t *count,
                   const uint64_t *stride_bytes, ob_walk *out);

/* Whether two rectangles copy alike: compared field by field, the walks' unused dimensions
 * and the structure's padding left out (they hold whatever the memory held). */
int ob_rect_same(const ob_rect *a, const ob_rect *b);

/* Completes a rectangle whose walks are built: `bytes` compact bytes in `runs` pieces. */
void ob_rect_finish(ob_rect *rect, uint64_t bytes, uint64_t runs);

/* The unit the kernel moves the rectangle in between these two first bytes. */
unsigned ob_rect_unit(const ob_rect *rect, uint64_t dst, uint64_t src);

/* Where a side's byte lies, from its first byte, for compact offset x. */
uint64_t ob_walk_at(const ob_walk *walk, uint64_t x);

/* A position in the runs of both sides, for visiting a rectangle piece by piece. */
typedef struct ob_rect_cursor {
    uint64_t x;                      /* compact offset */
    uint64_t at[2];                  /* dst, src: where x lies from the side's first byte */
    uint64_t in_run[2];              /* bytes of the current run before x */
    uint64_t index[2][OB_WALK_MAX_DIMS];
} ob_rect_cursor;

void ob_rect_seek(const ob_rect *rect, uint64_t x, ob_rect_cursor *cursor);

/* The next piece contiguous on both sides, no further than compact offset `end`: its offsets
 * from each side's first byte and its length; returns 0 at `end`. */
int ob_rect_next(const ob_rect *rect, ob_rect_cursor *cursor, uint64_t end, uint64_t *dst_at,
                 uint64_t *src_at, uint64_t *bytes);

/* Copies compact bytes [begin, end) of the rectangle from src to dst with copy() per piece
 * (either walk may be NULL: that side is compact). */
void ob_walk_copy(void *dst, const ob_walk *dst_walk, const void *src, const ob_walk *src_walk,
                  uint64_t begin, uint64_t end, void (*copy)(void *, const void *, size_t));

#endif
