#define _POSIX_C_SOURCE 199309L
#include "plugin/core/clock.h"

#include <time.h>

uint64_t ob_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
