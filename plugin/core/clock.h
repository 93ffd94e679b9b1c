/* The one clock of the library: monotonic nanoseconds, for waits, phase times, calibration. */
#ifndef OMPBATCH_PLUGIN_CLOCK_H
#define OMPBATCH_PLUGIN_CLOCK_H

#include <stdint.h>

uint64_t ob_clock_ns(void);

#endif
