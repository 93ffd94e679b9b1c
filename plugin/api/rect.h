/* Rectangles in the manner of omp_target_memcpy_rect (rect.c; ompbatch_batch_add_rect is the
 * public face): when a rectangle goes into a batch whole. */
#ifndef OMPBATCH_PLUGIN_RECT_H
#define OMPBATCH_PLUGIN_RECT_H

#include <stdint.h>

/* Whether a rectangle of `runs` contiguous runs of `run_bytes` each, `bytes` in all, is worth
 * adding whole (ob_batch_add_rect_copy) rather than run by run: many small runs, which the
 * staged strategy moves with one launch, within what one level stages. */
int ob_batch_rect_goes_whole(uint64_t runs, uint64_t run_bytes, uint64_t bytes);

#endif
