#include "plugin/core/sort.h"

#include <stdlib.h>

void ob_sort_unless_sorted(void *base, size_t count, size_t size,
                           int (*compare)(const void *, const void *))
{
    const char *items = base;
    for (size_t i = 1; i < count; i++) {
        if (compare(items + (i - 1) * size, items + i * size) > 0) {
            qsort(base, count, size, compare);
            return;
        }
    }
}
