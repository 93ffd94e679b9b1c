/* Adding copies to a batch, for the batch's other files and the library's callers of the
 * rectangle adds (batch_add.c). */
#ifndef OMPBATCH_PLUGIN_API_BATCH_ADD_H
#define OMPBATCH_PLUGIN_API_BATCH_ADD_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/plan/walk.h"
#include "ompbatch.h"

/* OMPBATCH_OK for a live batch open for adds; otherwise the error ompbatch_batch_add gives. */
int ob_batch_check_open(const ompbatch_batch *batch);

/* How many copies were added since the batch was created or reset: the index the next one
 * takes. The batch must be alive. */
size_t ob_batch_added(const ompbatch_batch *batch);

/* Adds a rectangle as one copy (walk.h): dst and src are its sides' first bytes. With every
 * check of ompbatch_batch_add, on the bytes each side spans. *taken is 0 when the batch takes
 * no rectangle whole (it copies across GPUs): the caller adds its runs one by one. */
int ob_batch_add_rect_copy(ompbatch_batch *batch, void *dst, int dst_device_num, const void *src,
                           int src_device_num, const ob_rect *rect, uint64_t map_type,
                           int *taken);

/* Adds a rectangle whole where the batch takes it (ob_batch_add_rect_copy), else its runs one
 * by one, outermost index slowest, with ompbatch_batch_add. */
int ob_batch_add_rect_or_runs(ompbatch_batch *batch, void *dst, int dst_device_num,
                              const void *src, int src_device_num, const ob_rect *rect,
                              uint64_t map_type);

/* A refill that matched the plan's keys so far becomes an ordinary fill: the copies matched
 * are written out to the batch's added copies (batch_plan.c asks before it reads them). */
int ob_batch_settle_keys(ompbatch_batch *batch);

#endif
