/* Dependency levels of a batch's copies: copy j runs one level after every earlier copy i it
 * conflicts with (a destination of one overlapping the source or the destination of the
 * other). O(n log n) time and O(n) memory whatever the overlap: no pair of conflicting copies
 * is ever stored. */
#ifndef OMPBATCH_PLUGIN_LEVELS_H
#define OMPBATCH_PLUGIN_LEVELS_H

#include <stddef.h>

#include "plugin/plan/copy.h"

/* How the levels are found: the conflicting pairs swept in address order (linear in the
 * pairs: for batches that overlap sparsely), segment trees over the ranges' endpoints
 * (O(n log n) whatever the overlap), or the pairs until they outgrow a linear budget, then
 * the trees (what planning uses). */
typedef enum ob_levels_way { OB_LEVELS_AUTO = 0, OB_LEVELS_PAIRS, OB_LEVELS_TREES } ob_levels_way;

/* Sets copies[i].level for copies[0, count) (bytes > 0 each, in the order they were added,
 * dst_mem and src_mem classified) and *levels_out to the number of levels (0 for no copies). */
int ob_levels_compute(ob_copy *copies, size_t count, unsigned *levels_out);

/* The same, one way forced (OB_LEVELS_PAIRS without its budget): for tests. */
int ob_levels_compute_way(ob_copy *copies, size_t count, unsigned *levels_out,
                          ob_levels_way way);

#endif
