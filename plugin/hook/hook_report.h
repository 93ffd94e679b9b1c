/* What the hook says and counts of a construct: its line at OMPBATCH_VERBOSE=1 (and its items
 * at 3), the statistics of its items' verdicts, and its NVTX range's label. */
#ifndef OMPBATCH_PLUGIN_HOOK_REPORT_H
#define OMPBATCH_PLUGIN_HOOK_REPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/hook/hook_forward.h"
#include "plugin/hook/hook_items.h"
#include "plugin/hook/hook_reasons.h"

ob_hook_kind ob_hook_kind_of(const ob_construct *c);

/* "update maps.c:42" for the NVTX range of the construct's batch, in buf. Built only while a
 * profiler listens; NULL otherwise. */
const char *ob_hook_range_label(const ob_construct *c, char *buf, size_t size);

/* Counts the construct and its items, `batched` of them moved by the hook (added to
 * batched_counter); a split region's halves count as the region's. */
void ob_hook_count_construct(const ob_construct *c, int32_t count,
                             atomic_uint_fast64_t *batched_counter, size_t batched);

/* What became of the construct's items, `batched` of them moved by the hook: said at
 * OMPBATCH_VERBOSE=1 and counted. */
void ob_hook_report_construct(const ob_construct *c, const ob_hook_item *items, int32_t count,
                              atomic_uint_fast64_t *batched_counter, size_t batched);

/* The items the hook moved itself: those with no reason to be forwarded. */
size_t ob_hook_batched_items(const ob_hook_item *items, int32_t count);

#endif
