#include "plugin/core/sort.h"

#include <stdlib.h>
#include <string.h>

/* Up to this many elements of up to OB_SORT_SMALL_BYTES each are sorted by insertion: a
 * construct's 16 spans out of order cost glibc's qsort about 3000 instructions (it sets up a
 * merge sort), insertion about a fifth of that. */
#define OB_SORT_SMALL_COUNT 32
#define OB_SORT_SMALL_BYTES 64

/* Insertion sort from element `from` on, the elements before it in order. */
static void insertion_sort(char *items, size_t from, size_t count, size_t size,
                           int (*compare)(const void *, const void *))
{
    unsigned char held[OB_SORT_SMALL_BYTES];
    for (size_t i = from; i < count; i++) {
        size_t j = i;
        if (compare(items + (j - 1) * size, items + j * size) <= 0)
            continue;
        memcpy(held, items + i * size, size);
        do {
            memcpy(items + j * size, items + (j - 1) * size, size);
            j--;
        } while (j > 0 && compare(items + (j - 1) * size, held) > 0);
        memcpy(items + j * size, held, size);
    }
}

void ob_sort_unless_sorted(void *base, size_t count, size_t size,
                           int (*compare)(const void *, const void *))
{
    char *items = base;
    for (size_t i = 1; i < count; i++) {
        if (compare(items + (i - 1) * size, items + i * size) > 0) {
            if (count <= OB_SORT_SMALL_COUNT && size <= OB_SORT_SMALL_BYTES)
                insertion_sort(items, i, count, size, compare);
            else
                qsort(base, count, size, compare);
            return;
        }
    }
}
