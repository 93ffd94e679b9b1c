#include "plugin/core/phase_time.h"

#include "plugin/core/clock.h"
#include "plugin/core/config.h"

atomic_uint_fast64_t ob_phase_ns[OB_PHASE_COUNT];
atomic_uint_fast64_t ob_phase_entries[OB_PHASE_COUNT];

uint64_t ob_phase_start(void)
{
    return ob_config_get()->stats ? ob_clock_ns() : 0;
}

void ob_phase_end(ob_phase phase, uint64_t start)
{
    if (start == 0)
        return;
    atomic_fetch_add_explicit(&ob_phase_ns[phase], ob_clock_ns() - start, memory_order_relaxed);
    atomic_fetch_add_explicit(&ob_phase_entries[phase], 1, memory_order_relaxed);
}

void ob_phase_add(ob_phase phase, uint64_t ns)
{
    atomic_fetch_add_explicit(&ob_phase_ns[phase], ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&ob_phase_entries[phase], 1, memory_order_relaxed);
}

const char *ob_phase_name(ob_phase phase)
{
    static const char *const names[OB_PHASE_COUNT] = {
        [OB_PHASE_CONSTRUCT] = "construct", [OB_PHASE_RUNTIME] = "runtime",
        [OB_PHASE_KERNEL] = "kernel",      [OB_PHASE_QUERY] = "query",
        [OB_PHASE_ADD] = "add",             [OB_PHASE_PLAN] = "plan",
        [OB_PHASE_ENQUEUE] = "enqueue",     [OB_PHASE_POLL] = "poll",
        [OB_PHASE_BLOCK] = "block",         [OB_PHASE_UNPACK] = "unpack",
        [OB_PHASE_PACK] = "pack",           [OB_PHASE_LAUNCH] = "launch",
        [OB_PHASE_COPY_CALL] = "copy-call"};
    return phase < OB_PHASE_COUNT ? names[phase] : "unknown";
}
