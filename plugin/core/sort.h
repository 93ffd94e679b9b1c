/* Sorting for the planner and the hook, whose arrays usually arrive sorted already. */
#ifndef OMPBATCH_PLUGIN_SORT_H
#define OMPBATCH_PLUGIN_SORT_H

#include <stddef.h>

/* qsort (insertion for a few small elements), after a linear check that returns at once when
 * base is sorted: glibc's qsort allocates and copies even then, tens of microseconds for a
 * thousand elements, and the copies of a construct, the pieces of a strided item and their
 * spans come in address order. */
void ob_sort_unless_sorted(void *base, size_t count, size_t size,
                           int (*compare)(const void *, const void *));

#endif
