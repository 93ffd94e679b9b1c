/* Where the library's time goes, per phase, summed over the process (OMPBATCH_STATS=1 prints
 * it with the hook's statistics). Timing is off unless statistics are asked for: a phase
 * costs two clock reads when on and one branch when off. */
#ifndef OMPBATCH_PLUGIN_PHASE_TIME_H
#define OMPBATCH_PLUGIN_PHASE_TIME_H

#include <stdatomic.h>
#include <stdint.h>

typedef enum ob_phase {
    OB_PHASE_CONSTRUCT = 0, /* the hook's whole handling of a construct or region */
    OB_PHASE_RUNTIME,       /* inside libomptarget's data entry points, forwarded to */
    OB_PHASE_KERNEL,        /* inside libomptarget's region entry point */
    OB_PHASE_QUERY,         /* the hook's questions to libomptarget (is present, mapped at) */
    OB_PHASE_ADD,           /* copies added to the construct's batch */
    OB_PHASE_PLAN,          /* the planner (zero when a plan is reused) */
    OB_PHASE_ENQUEUE,       /* packing, descriptors, driver calls and launches */
    OB_PHASE_POLL,          /* waiting by polling the stream */
    OB_PHASE_BLOCK,         /* waiting in cuStreamSynchronize once polling gave up */
    OB_PHASE_UNPACK,        /* staged bytes copied into pageable destinations after the wait */
    /* Parts of the enqueue, printed on the statistics line only: */
    OB_PHASE_PACK,          /* sources copied into pinned staging by the CPU */
    OB_PHASE_LAUNCH,        /* the copy kernel's launches */
    OB_PHASE_COPY_CALL,     /* the driver's copy calls (batch, per-copy, bulk staged copies) */
    OB_PHASE_COUNT
} ob_phase;

extern atomic_uint_fast64_t ob_phase_ns[OB_PHASE_COUNT];
extern atomic_uint_fast64_t ob_phase_entries[OB_PHASE_COUNT];

/* A start time, or 0 when timing is off (ob_phase_end then does nothing). */
uint64_t ob_phase_start(void);
void ob_phase_end(ob_phase phase, uint64_t start);

/* Adds ns to a phase entered once, for a phase timed in pieces by its caller. */
void ob_phase_add(ob_phase phase, uint64_t ns);

const char *ob_phase_name(ob_phase phase);

#endif
