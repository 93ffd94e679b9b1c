/* Whether a region on present data is run with its arrays as device addresses (the runtime
 * then looks none of them up, hook_region.h) or forwarded, decided per thread and kernel by
 * timing both. Device addresses save the runtime's look-ups, yet on some hosts and in some
 * processes such regions take longer than forwarded ones (BENCHMARKS.md, "Never slower":
 * 0.87x on an idle H200 in one process, 1.06-1.14x in others). Most likely, with less to do
 * between the kernel's launch and the runtime's wait, the thread reaches the wait before the
 * kernel ends and sleeps in the driver's blocking-sync context, and its wake-up costs more
 * than the look-ups saved (not measured apart). OMPBATCH_DIRECT_REGIONS=1 or 0 fixes the
 * choice (configuration.md). A forwarded region is timed with the look-ups that found it
 * could have had device addresses (a few hundred nanoseconds): a lean towards them, far
 * under the 4-14 us a region either way seen on the H200. */
#ifndef OMPBATCH_PLUGIN_HOOK_DIRECT_CHOICE_H
#define OMPBATCH_PLUGIN_HOOK_DIRECT_CHOICE_H

#include <stdint.h>

/* Regions of each way timed before choosing, and chosen regions before timing again (the
 * host's state moves). */
#define OB_DIRECT_CHOICE_SAMPLES 5
#define OB_DIRECT_CHOICE_RETIME 4096

typedef enum ob_direct_mode {
    OB_DIRECT_NO = 0,    /* forward, untimed */
    OB_DIRECT_YES,       /* device addresses where the region allows them, untimed */
    OB_DIRECT_TIME_NO,   /* forward, and time the region if it allowed device addresses */
    OB_DIRECT_TIME_YES   /* device addresses, and time the region if it took them */
} ob_direct_mode;

/* One kernel's choice. */
typedef struct ob_direct_choice {
    const void *kernel;  /* the region's host_ptr */
    int chosen;          /* -1 while timing, else 0 (forward) or 1 (device addresses) */
    uint32_t since;      /* regions since the choice */
    uint32_t taken[2];   /* regions timed: [forwarded, with device addresses] */
    uint32_t ns[2][OB_DIRECT_CHOICE_SAMPLES]; /* their times, at most UINT32_MAX */
} ob_direct_choice;

/* The calling thread's choice for kernel, in a table of hundreds the thread allocates on its
 * first call (freed when it exits). NULL when OMPBATCH_DIRECT_REGIONS fixes the choice (no
 * table is made), for a NULL kernel, when the table cannot be had, or when the kernel's slots
 * are all taken by others: such a kernel has no choice of its own. */
ob_direct_choice *ob_direct_choice_of(const void *kernel);

/* How the next eligible region of c's kernel runs: the way with fewer timed regions while
 * timing (device addresses first), the chosen way after. Counts chosen regions towards
 * timing again. OMPBATCH_DIRECT_REGIONS=1 or 0 answers YES or NO without timing; a NULL c
 * (no choice of its own) is answered YES, the way before any timing, untimed. */
ob_direct_mode ob_direct_choice_next(ob_direct_choice *c);

/* A region of c's kernel (c may be NULL: nothing is kept) that allowed device addresses took
 * ns, with them (direct) or forwarded. Once both ways have OB_DIRECT_CHOICE_SAMPLES, the way
 * whose median is lower is chosen (a tie forwards: the runtime's own way). */
void ob_direct_choice_timed(ob_direct_choice *c, int direct, uint64_t ns);

/* Tests: the calling thread forgets every kernel's choice. */
void ob_direct_choice_forget_for_testing(void);

#endif
