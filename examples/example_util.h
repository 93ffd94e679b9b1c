/* Small helpers shared by the examples: a monotonic clock, medians, random fill, byte checks and
 * the names the examples print. Only the public header is needed here. */
#ifndef OMPBATCH_EXAMPLES_EXAMPLE_UTIL_H
#define OMPBATCH_EXAMPLES_EXAMPLE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ompbatch.h"

/* The byte every destination is filled with before a checked copy. */
#define EX_POISON 0xA5

/* Microseconds on CLOCK_MONOTONIC (cheap: a vDSO call, no system call). */
double ex_now_us(void);

/* The median of values[0, count); sorts the array in place. 0 for count 0. */
double ex_median(double *values, size_t count);
/* The smallest of values[0, count); 0 for count 0. */
double ex_min(const double *values, size_t count);

/* Fills bytes with xorshift64* output; *state carries on between calls (never 0). */
void ex_fill_random(void *buf, size_t bytes, uint64_t *state);

/* Checks count pieces of `size` bytes laid out every `stride` bytes: each piece of got must equal
 * the piece at the same offset of expect, and every byte of got between pieces (and after the
 * last, up to count * stride) must still be EX_POISON. Returns 1 when all is well; otherwise 0,
 * with a one-line description of the first bad byte in why. */
int ex_check_pieces(const unsigned char *got, const unsigned char *expect, size_t count,
                    size_t size, size_t stride, char *why, size_t why_size);

/* "cuMemcpyBatchAsync v13000" and so on, for ompbatch_batch_form values. */
const char *ex_form_name(int form);
/* "batch", "per-copy", "host", "kernel", "staged", joined with '+' when several; "none" for 0. */
const char *ex_paths_name(unsigned paths, char *buf, size_t size);
/* "8 B", "4 KiB", "1 MiB", "1.5 MiB". */
const char *ex_size_name(size_t bytes, char *buf, size_t size);

/* Prints the driver report (ompbatch_get_driver_info) on one line, prefixed with `prefix`. */
void ex_print_driver_info(FILE *out, const char *prefix, const ompbatch_driver_info *info);
/* Prints every ompbatch_stats field on one line, prefixed with `prefix`. */
void ex_print_stats(FILE *out, const char *prefix, const ompbatch_stats *stats);

/* Reports a failed call on stderr ("<program>: <what>: OMPBATCH_ERR_X: <last error>") and
 * returns 1, the examples' exit status for failure. */
int ex_report_failure(const char *program, const char *what, int status);

#endif
