/* The hook's process-wide counters (ompbatch_hook_get_stats, OMPBATCH_STATS=1). */
#ifndef OMPBATCH_PLUGIN_HOOK_STATS_H
#define OMPBATCH_PLUGIN_HOOK_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "hook_reasons.h"

typedef struct ob_hook_counters {
    atomic_uint_fast64_t constructs;
    atomic_uint_fast64_t kernels;
    atomic_uint_fast64_t items;
    atomic_uint_fast64_t update_batched;
    atomic_uint_fast64_t enter_batched;
    atomic_uint_fast64_t exit_batched;
    atomic_uint_fast64_t items_forwarded;
    atomic_uint_fast64_t batches;
    atomic_uint_fast64_t bytes_batched;
    atomic_uint_fast64_t driver_batch_calls;
    atomic_uint paths;
    atomic_uint_fast64_t regions_split;
    atomic_uint_fast64_t region_items;
    atomic_uint_fast64_t region_batched;
    atomic_uint_fast64_t regions_direct;
    /* Items by kind of construct and by the reason the hook left them to the runtime
     * (OB_REASON_NONE: batched); printed with OMPBATCH_STATS=1. */
    atomic_uint_fast64_t by_reason[OB_KIND_COUNT][OB_REASON_COUNT];
} ob_hook_counters;

extern ob_hook_counters ob_hook_count;

static inline void ob_hook_add(atomic_uint_fast64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* Fills the public struct's state fields from the hook (omp_hook.c). */
void ob_hook_state(int *state, int *runtime_major);

#endif
