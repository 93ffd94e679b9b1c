#define _DEFAULT_SOURCE
#include "plugin/core/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Negative: no failure injected. Tests set it from one thread while nothing else runs. */
static long allowed = -1;

static int permitted(void)
{
    if (allowed < 0)
        return 1;
    if (allowed == 0)
        return 0;
    allowed--;
    return 1;
}

void *ob_malloc(size_t size)
{
    return permitted() ? malloc(size) : NULL;
}

void *ob_calloc(size_t count, size_t size)
{
    return permitted() ? calloc(count, size) : NULL;
}

void *ob_realloc(void *ptr, size_t size)
{
    return permitted() ? realloc(ptr, size) : NULL;
}

int ob_grow(void **items, size_t *capacity, size_t needed, size_t item_size)
{
    if (needed <= *capacity)
        return 0;
    size_t grown = *capacity ? *capacity : OB_GROW_FIRST;
    while (grown < needed) {
        if (grown > SIZE_MAX / 2)
            return -1;
        grown *= 2;
    }
    if (item_size != 0 && grown > SIZE_MAX / item_size)
        return -1;
    void *p = ob_realloc(*items, grown * item_size);
    if (p == NULL)
        return -1;
    *items = p;
    *capacity = grown;
    return 0;
}

void ob_alloc_fail_after_for_testing(long successes)
{
    allowed = successes;
}

long ob_alloc_left_for_testing(void)
{
    return allowed;
}

/* Scratch of this size or more is mapped from the kernel and unmapped when freed. Through
 * malloc, freeing a large block raises glibc's mmap threshold to its size (up to 32 MiB), after
 * which the next large scratch comes from the heap and stays resident after it is freed: a
 * plan of 10^6 copies then held 30 MB more at its peak, depending on where the heap ended. */
#define OB_SCRATCH_MAPPED_BYTES ((size_t)1 << 20)

/* Mapped scratch starts with its mapping's size; the block follows, 16-byte aligned. */
#define OB_SCRATCH_HEADER ((size_t)16)

void *ob_scratch_alloc(size_t size)
{
    if (size < OB_SCRATCH_MAPPED_BYTES)
        return ob_malloc(size);
    if (!permitted() || size > SIZE_MAX - OB_SCRATCH_HEADER)
        return NULL;
    size_t mapped = size + OB_SCRATCH_HEADER;
    void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    *(size_t *)p = mapped;
    return (char *)p + OB_SCRATCH_HEADER;
}

void *ob_scratch_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    if (count * size < OB_SCRATCH_MAPPED_BYTES)
        return ob_calloc(count, size);
    return ob_scratch_alloc(count * size); /* fresh mappings are zero */
}

void ob_scratch_free(void *ptr, size_t size)
{
    if (ptr == NULL)
        return;
    if (size < OB_SCRATCH_MAPPED_BYTES) {
        free(ptr);
        return;
    }
    void *base = (char *)ptr - OB_SCRATCH_HEADER;
    (void)munmap(base, *(size_t *)base);
}
