/* Heap allocation for the library, with a seam that makes the Nth allocation fail so tests can
 * reach every out-of-memory path. */
#ifndef OMPBATCH_PLUGIN_ALLOC_H
#define OMPBATCH_PLUGIN_ALLOC_H

#include <stddef.h>

void *ob_malloc(size_t size);
void *ob_calloc(size_t count, size_t size);
void *ob_realloc(void *ptr, size_t size);

/* A growable array: makes *items (of *capacity items of item_size bytes) hold at least needed
 * items, doubling from OB_GROW_FIRST. Returns 0, or -1 when the memory cannot be had (or the
 * size overflows), with *items and *capacity as they were; the caller words the error. */
int ob_grow(void **items, size_t *capacity, size_t needed, size_t item_size);

/* Small, because small arrays are kept by the hundred: a batch's plan cache holds 512 plans
 * of up to 63 copies, each in six arrays. Doubling from 64 items, a plan of 16 copies held
 * 22 KiB, and every plan kept into an empty slot left the batch to plan into fresh memory,
 * about six page faults a construct: a loop whose constructs map new device memory every pass
 * planned 15 us a construct on an H100 host, against 6 while the slots were full. From 8,
 * such a plan holds 5 KiB. */
#define OB_GROW_FIRST 8

/* Scratch that lives for one call: large blocks are mapped from the kernel and given back
 * whole when freed (alloc.c says why). ob_scratch_free takes the size asked for. */
void *ob_scratch_alloc(size_t size);
void *ob_scratch_calloc(size_t count, size_t size);
void ob_scratch_free(void *ptr, size_t size);

/* After `successes` more successful allocations, every allocation fails (returns NULL) until
 * the seam is reset with a negative value. For tests only; not thread-safe with concurrent
 * library use. */
void ob_alloc_fail_after_for_testing(long successes);

/* The successful allocations left before the seam fails: 0 once it fails, -1 when unset. */
long ob_alloc_left_for_testing(void);

#endif
