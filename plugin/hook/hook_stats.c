#include "plugin/hook/hook_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/hook/hook_state.h"
#include "ompbatch.h"
#include "plugin/core/phase_time.h"
#include "plugin/core/struct_out.h"

ob_hook_counters ob_hook_count;

const char *const ob_hook_reason_text[OB_REASON_COUNT] = {
#define OB_HOOK_REASON_TEXT_(name, text) text,
    OB_HOOK_REASON_LIST(OB_HOOK_REASON_TEXT_)
#undef OB_HOOK_REASON_TEXT_
};

static uint64_t load(atomic_uint_fast64_t *counter)
{
    return atomic_load_explicit(counter, memory_order_relaxed);
}

static void snapshot(ompbatch_hook_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->struct_size = sizeof(*out);
    ob_hook_state(&out->state, &out->runtime_major);
#define OB_HOOK_COUNT_LOAD_(field, printed) out->field = load(&ob_hook_count.field);
#define OB_HOOK_PATHS_LOAD_(field, printed)                                                     \
    out->field = atomic_load_explicit(&ob_hook_count.field, memory_order_relaxed);
    OB_HOOK_COUNTER_LIST(OB_HOOK_COUNT_LOAD_, OB_HOOK_PATHS_LOAD_)
#undef OB_HOOK_COUNT_LOAD_
#undef OB_HOOK_PATHS_LOAD_
    out->time_construct_ns = load(&ob_phase_ns[OB_PHASE_CONSTRUCT]);
    out->time_runtime_ns = load(&ob_phase_ns[OB_PHASE_RUNTIME]);
    out->time_kernel_ns = load(&ob_phase_ns[OB_PHASE_KERNEL]);
    out->time_query_ns = load(&ob_phase_ns[OB_PHASE_QUERY]);
    out->time_add_ns = load(&ob_phase_ns[OB_PHASE_ADD]);
    out->time_plan_ns = load(&ob_phase_ns[OB_PHASE_PLAN]);
    out->time_enqueue_ns = load(&ob_phase_ns[OB_PHASE_ENQUEUE]);
    out->time_poll_ns = load(&ob_phase_ns[OB_PHASE_POLL]);
    out->time_block_ns = load(&ob_phase_ns[OB_PHASE_BLOCK]);
    out->time_unpack_ns = load(&ob_phase_ns[OB_PHASE_UNPACK]);
}

int ompbatch_hook_get_stats(ompbatch_hook_stats *stats)
{
    ompbatch_hook_stats current;
    snapshot(&current);
    return ob_struct_out(stats, &current, sizeof(current), "stats", "ompbatch_hook_stats");
}

int ompbatch_hook_reset_stats(void)
{
#define OB_HOOK_COUNT_ZERO_(field, printed)                                                     \
    atomic_store_explicit(&ob_hook_count.field, 0, memory_order_relaxed);
    OB_HOOK_COUNTER_LIST(OB_HOOK_COUNT_ZERO_, OB_HOOK_COUNT_ZERO_)
#undef OB_HOOK_COUNT_ZERO_
    for (int k = 0; k < OB_KIND_COUNT; k++)
        for (int r = 0; r < OB_REASON_COUNT; r++)
            atomic_store_explicit(&ob_hook_count.by_reason[k][r], 0, memory_order_relaxed);
    for (int p = 0; p < OB_PHASE_COUNT; p++) {
        atomic_store_explicit(&ob_phase_ns[p], 0, memory_order_relaxed);
        atomic_store_explicit(&ob_phase_entries[p], 0, memory_order_relaxed);
    }
    return OMPBATCH_OK;
}

static const char *state_name(int state)
{
    switch (state) {
    case OMPBATCH_HOOK_ACTIVE:
        return "active";
    case OMPBATCH_HOOK_PASS_THROUGH:
        return "pass-through";
    default:
        return "not-loaded";
    }
}

/* The second line of OMPBATCH_STATS=1: per kind of construct, the items batched and why the
 * others were forwarded, e.g. "update 48 (batched 40, not a mapping the hook saw created 8)".
 * Kinds that saw no item are left out. */
static void print_reasons(void)
{
    static const char *const kinds[OB_KIND_COUNT] = {"update", "begin", "end", "region begin",
                                                     "region end"};
    char line[2048];
    size_t used = (size_t)snprintf(line, sizeof(line), "ompbatch hook items:");
    for (int k = 0; k < OB_KIND_COUNT && used < sizeof(line); k++) {
        uint64_t total = 0;
        for (int r = 0; r < OB_REASON_COUNT; r++)
            total += load(&ob_hook_count.by_reason[k][r]);
        if (total == 0)
            continue;
        used += (size_t)snprintf(line + used, sizeof(line) - used, "%s %s %llu (",
                                 used > 20 ? ";" : "", kinds[k], (unsigned long long)total);
        const char *sep = "";
        for (int r = 0; r < OB_REASON_COUNT && used < sizeof(line); r++) {
            uint64_t n = load(&ob_hook_count.by_reason[k][r]);
            if (n == 0)
                continue;
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s %llu", sep,
                                     ob_hook_reason_text[r], (unsigned long long)n);
            sep = ", ";
        }
        if (used < sizeof(line))
            used += (size_t)snprintf(line + used, sizeof(line) - used, ")");
    }
    fprintf(stderr, "%s\n", used > 20 ? line : "ompbatch hook items: none");
}

/* The third line: per phase, the microseconds spent and how often it was entered, e.g.
 * "construct 812.4 us/64, runtime 20.1 us/64, ...". Phases nest: a construct's time includes
 * the runtime's, the planner's and the waits within it. */
static void print_times(void)
{
    char line[1024];
    size_t used = (size_t)snprintf(line, sizeof(line), "ompbatch hook time:");
    for (int p = 0; p < OB_PHASE_COUNT && used < sizeof(line); p++) {
        uint64_t n = load(&ob_phase_entries[p]);
        if (n == 0)
            continue;
        used += (size_t)snprintf(line + used, sizeof(line) - used, "%s %s %.1f us/%llu",
                                 used > 20 ? "," : "", ob_phase_name((ob_phase)p),
                                 (double)load(&ob_phase_ns[p]) / 1000.0, (unsigned long long)n);
    }
    fprintf(stderr, "%s\n", used > 20 ? line : "ompbatch hook time: none");
}

/* The paths bits as names ("batch,kernel"), or "none". */
static const char *paths_text(unsigned paths, char *text, size_t size)
{
    static const char *const names[] = {"batch", "per-copy", "host", "kernel", "staged"};
    size_t used = 0;
    text[0] = '\0';
    for (unsigned bit = 0; bit < sizeof(names) / sizeof(names[0]); bit++)
        if ((paths & (1u << bit)) && used < size)
            used += (size_t)snprintf(text + used, size - used, "%s%s", used ? "," : "",
                                     names[bit]);
    return used ? text : "none";
}

/* OMPBATCH_STATS=1: three lines on stderr at exit, for scripts and for users who cannot change
 * the program. Registered from a constructor so it needs no call from the program. */
static void print_at_exit(void)
{
    ompbatch_hook_stats s;
    snapshot(&s);
    /* Only processes the hook ran in report: under LD_PRELOAD every child a program starts
     * (a compiler the runtime's JIT runs, a shell) loads the library too. */
    if (s.state == OMPBATCH_HOOK_NOT_LOADED)
        return;
    char line[1024];
    size_t used = (size_t)snprintf(line, sizeof(line), "ompbatch hook: state=%s runtime=%d",
                                   state_name(s.state), s.runtime_major);
#define OB_HOOK_COUNT_PRINT_(field, printed)                                                    \
    if (used < sizeof(line))                                                                    \
        used += (size_t)snprintf(line + used, sizeof(line) - used, " %s=%llu", printed,         \
                                 (unsigned long long)s.field);
#define OB_HOOK_PATHS_PRINT_(field, printed)                                                    \
    if (used < sizeof(line))                                                                    \
        used += (size_t)snprintf(line + used, sizeof(line) - used, " %s=%s", printed,           \
                                 paths_text(s.field, paths, sizeof(paths)));
    char paths[64];
    OB_HOOK_COUNTER_LIST(OB_HOOK_COUNT_PRINT_, OB_HOOK_PATHS_PRINT_)
#undef OB_HOOK_COUNT_PRINT_
#undef OB_HOOK_PATHS_PRINT_
    fprintf(stderr, "%s\n", line);
    print_reasons();
    print_times();
}

__attribute__((constructor)) static void register_stats_report(void)
{
    if (ob_config_get()->stats)
        atexit(print_at_exit);
}
