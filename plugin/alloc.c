#include "alloc.h"

#include <stdlib.h>

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

void ob_alloc_fail_after_for_testing(long successes)
{
    allowed = successes;
}
