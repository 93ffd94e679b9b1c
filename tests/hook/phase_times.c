/*
 * The hook's phase times (the time_* fields of ompbatch_hook_stats): measured under
 * OMPBATCH_STATS=1 and only then. The program runs constructs the hook takes part in (an enter
 * it batches, updates it batches, target regions it splits, an exit), checks their data, and
 * then the times: with timing on, every phase those constructs pass through has time, the
 * construct's time holds all the phases nested in it, and ompbatch_hook_reset_stats zeroes
 * them; with timing off, every time is zero while the counters still count. With the host taken
 * for busy (OMPBATCH_HOST_BUSY=1) the regions, one copy each way, are left to the runtime whole,
 * decided from the hook's own record of the mapped data without a question to the runtime, and
 * so are regions on present data, whose arrays the hook otherwise passes as device addresses.
 * Usage: phase_times <seed> on|off   (hooked build only: it reads the hook's statistics)
 */
#include "hook_test.h"

#include "ompbatch.h"

enum { N = 3000, REGIONS = 40, DIRECT_REGIONS = 10, UPDATES = 20 };

static uint64_t nested(const ompbatch_hook_stats *s)
{
    return s->time_runtime_ns + s->time_kernel_ns + s->time_query_ns + s->time_add_ns +
           s->time_plan_ns + s->time_enqueue_ns + s->time_poll_ns + s->time_block_ns +
           s->time_unpack_ns;
}

static ompbatch_hook_stats stats(void)
{
    ompbatch_hook_stats s = {.struct_size = sizeof(s)};
    OB_CHECK(ompbatch_hook_get_stats(&s) == OMPBATCH_OK, "ompbatch_hook_get_stats failed");
    return s;
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "phase_times");
    int on = argc > 2 && strcmp(argv[2], "on") == 0;
    unsigned char *a = ht_malloc(N), *want = ht_malloc(N);
    ht_fill_random(a, N, 1);
    memcpy(want, a, N);
#pragma omp target enter data map(to : a[0:N])
    ht_expect_device(a, want, N, "after enter");
    long sums = 0, want_sums = 0;
    ompbatch_hook_stats before = stats();
    for (int r = 0; r < REGIONS; r++) {
        long sum = r;
        /* A new `tofrom` scalar beside present data: the hook splits the region, unless the
         * host is busy. */
#pragma omp target map(tofrom : sum) map(to : a[0:N])
        for (int i = 0; i < N; i += 7)
            sum += a[i];
        sums += sum;
        want_sums += r;
        for (int i = 0; i < N; i += 7)
            want_sums += want[i];
    }
    OB_CHECK(sums == want_sums, "the regions' sums add up to %ld, want %ld", sums, want_sums);
    ompbatch_hook_stats after = stats();
    uint64_t split = after.regions_split - before.regions_split;
    uint64_t asked_ns = after.time_query_ns - before.time_query_ns;
    const char *busy = getenv("OMPBATCH_HOST_BUSY");
    if (busy != NULL && strcmp(busy, "1") == 0) {
        OB_CHECK(split == 0, "%" PRIu64 " of the regions split on a busy host, want none", split);
        OB_CHECK(asked_ns == 0, "the regions asked the runtime for %" PRIu64 " ns on a busy host, "
                 "want no question", asked_ns);
    } else {
        OB_CHECK(split == REGIONS, "%" PRIu64 " of the regions split, want %d", split, REGIONS);
        OB_CHECK(!on || asked_ns > 0, "the regions split without asking the runtime");
    }
    /* Regions on present data only: their kernels get a's and b's device addresses from the
     * hook, unless the host is busy. b's last contents come back by one update. */
    unsigned char *b = ht_malloc(N);
    ht_fill_random(b, N, 2);
#pragma omp target enter data map(alloc : b[0:N])
    uint64_t direct_before = stats().regions_direct;
    for (int r = 0; r < DIRECT_REGIONS; r++) {
        unsigned char k = (unsigned char)(r + 1);
#pragma omp target map(to : a[0:N]) map(from : b[0:N])
        for (int i = 0; i < N; i++)
            b[i] = (unsigned char)(a[i] ^ k);
    }
    uint64_t direct = stats().regions_direct - direct_before;
    if (busy != NULL && strcmp(busy, "1") == 0)
        OB_CHECK(direct == 0, "%" PRIu64 " regions on present data passed device addresses on a "
                 "busy host, want none", direct);
    else
        OB_CHECK(direct == DIRECT_REGIONS, "%" PRIu64 " regions on present data passed device "
                 "addresses, want %d", direct, DIRECT_REGIONS);
#pragma omp target update from(b[0:N])
    for (int i = 0; i < N; i++)
        want[i] ^= (unsigned char)DIRECT_REGIONS;
    ht_expect_host(b, want, N, "after the regions on present data");
    for (int i = 0; i < N; i++)
        want[i] ^= (unsigned char)DIRECT_REGIONS;
#pragma omp target exit data map(release : b[0:N])
    free(b);
    for (int u = 0; u < UPDATES; u++) {
        ht_fill_unlike(a, want, N, 10 + (uint64_t)u);
#pragma omp target update from(a[0:N])
        ht_expect_host(a, want, N, "after update from");
    }
#pragma omp target exit data map(release : a[0:N])

    ompbatch_hook_stats s = stats();
    OB_CHECK(s.state == OMPBATCH_HOOK_ACTIVE, "hook state %d, want active", s.state);
    OB_CHECK(s.update_batched >= UPDATES, "%" PRIu64 " update items batched, want %d",
          s.update_batched, UPDATES);
    if (on) {
        OB_CHECK(s.time_construct_ns > 0, "no construct time");
        OB_CHECK(s.time_runtime_ns > 0, "no time in the runtime's data entry points");
        OB_CHECK(s.time_kernel_ns > 0, "no time in the runtime's region entry point");
        OB_CHECK(s.time_query_ns > 0, "no time asking the runtime");
        OB_CHECK(s.time_add_ns > 0, "no time adding copies");
        OB_CHECK(s.time_enqueue_ns > 0, "no time enqueueing copies");
        OB_CHECK(s.time_construct_ns >= nested(&s),
              "construct time %" PRIu64 " ns is less than the phases in it, %" PRIu64 " ns",
              s.time_construct_ns, nested(&s));
        OB_CHECK(ompbatch_hook_reset_stats() == OMPBATCH_OK, "ompbatch_hook_reset_stats failed");
        ompbatch_hook_stats z = stats();
        OB_CHECK(z.time_construct_ns == 0 && nested(&z) == 0, "times left after a reset");
    } else {
        OB_CHECK(s.time_construct_ns == 0 && nested(&s) == 0,
              "times measured without OMPBATCH_STATS=1 (construct %" PRIu64 " ns)",
              s.time_construct_ns);
    }
    free(a);
    free(want);
    return ob_check_finish("phase_times");
}
