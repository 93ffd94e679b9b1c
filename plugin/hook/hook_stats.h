/* The hook's process-wide counters (ompbatch_hook_get_stats, OMPBATCH_STATS=1). */
#ifndef OMPBATCH_PLUGIN_HOOK_STATS_H
#define OMPBATCH_PLUGIN_HOOK_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "plugin/hook/hook_reasons.h"

/* The hook's counters, in the order OMPBATCH_STATS=1 prints them: COUNT(field, printed name)
 * for the counts of ompbatch_hook_stats, PATHS(field, printed name) for the OR of the paths its
 * batches took. The counters, the copy into the public struct, the reset and the printed line
 * are all made from this list. */
#define OB_HOOK_COUNTER_LIST(COUNT, PATHS)                                                      \
    COUNT(constructs, "constructs")                                                             \
    COUNT(kernels, "kernels")                                                                   \
    COUNT(items, "items")                                                                       \
    COUNT(update_batched, "update_batched")                                                     \
    COUNT(enter_batched, "enter_batched")                                                       \
    COUNT(exit_batched, "exit_batched")                                                         \
    COUNT(items_forwarded, "forwarded")                                                         \
    COUNT(batches, "batches")                                                                   \
    COUNT(bytes_batched, "bytes")                                                               \
    COUNT(driver_batch_calls, "driver_batch_calls")                                             \
    PATHS(paths, "paths")                                                                       \
    COUNT(regions_split, "regions_split")                                                       \
    COUNT(region_items, "region_items")                                                         \
    COUNT(region_batched, "region_batched")                                                     \
    COUNT(regions_direct, "regions_direct")                                                     \
    COUNT(registrations, "registrations")                                                       \
    COUNT(bytes_registered, "bytes_registered")

typedef struct ob_hook_counters {
#define OB_HOOK_COUNT_FIELD_(field, printed) atomic_uint_fast64_t field;
#define OB_HOOK_PATHS_FIELD_(field, printed) atomic_uint field;
    OB_HOOK_COUNTER_LIST(OB_HOOK_COUNT_FIELD_, OB_HOOK_PATHS_FIELD_)
#undef OB_HOOK_COUNT_FIELD_
#undef OB_HOOK_PATHS_FIELD_
    /* Items by kind of construct and by the reason the hook left them to the runtime
     * (OB_REASON_NONE: batched); printed with OMPBATCH_STATS=1. */
    atomic_uint_fast64_t by_reason[OB_KIND_COUNT][OB_REASON_COUNT];
} ob_hook_counters;

extern ob_hook_counters ob_hook_count;

static inline void ob_hook_add(atomic_uint_fast64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

#endif
