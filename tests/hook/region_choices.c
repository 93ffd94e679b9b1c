/*
 * What the hook does with one target region, run many times on present data and then on the
 * same arrays after they were unmapped, when the region maps them itself.
 * - On present data the region has nothing to copy and is never split. On an idle host its
 *   kernel gets the arrays' device addresses: every time with OMPBATCH_DIRECT_REGIONS=1,
 *   never with 0, and with `timed` (the default) for five of the first ten regions, which time
 *   both ways, and then for all or none of the rest (hook_direct_choice.h). On a busy host
 *   (OMPBATCH_HOST_BUSY=1) never.
 * - On the unmapped arrays it makes two copies to the device and one back, which the hook
 *   batches by splitting the region into data begin + kernel + data end, on a busy host too
 *   (docs/hook.md, "Target regions"): what was decided for the region on present data must
 *   not carry over.
 * The data is checked byte for byte, the device addresses and the splits counted.
 * Usage: region_choices <seed>   (hooked build only: it reads the hook's statistics)
 */
#include "hook_test.h"

#include "ompbatch.h"

enum { N = 4096, PRESENT_REGIONS = 40, NEW_REGIONS = 3 };

/* The regions that time both ways under `timed`, half of them with device addresses:
 * OB_DIRECT_CHOICE_SAMPLES (hook_direct_choice.h) each way. */
enum { TIMED = 2 * 5 };

static int env_is(const char *name, const char *value)
{
    const char *set = getenv(name);
    return set != NULL && strcmp(set, value) == 0;
}

static ompbatch_hook_stats stats(void)
{
    ompbatch_hook_stats s = {.struct_size = sizeof(s)};
    OB_CHECK(ompbatch_hook_get_stats(&s) == OMPBATCH_OK, "ompbatch_hook_get_stats failed");
    return s;
}

/* One call site, so that every call is the same region (the same host_ptr). */
static void add_into(uint32_t *c, const uint32_t *d, uint32_t key)
{
#pragma omp target map(tofrom : c[0:N]) map(to : d[0:N])
    for (int i = 0; i < N; i++)
        c[i] += d[i] ^ key;
}

static void add_expected(uint32_t *want, const uint32_t *d, uint32_t key)
{
    for (int i = 0; i < N; i++)
        want[i] += d[i] ^ key;
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "region_choices");
    size_t bytes = N * sizeof(uint32_t);
    uint32_t *c = ht_malloc(bytes), *d = ht_malloc(bytes), *want = ht_malloc(bytes);
    ht_fill_random(c, bytes, 1);
    ht_fill_random(d, bytes, 2);
    memcpy(want, c, bytes);

#pragma omp target enter data map(to : c[0:N], d[0:N])
    ompbatch_hook_stats before = stats();
    for (uint32_t r = 0; r < PRESENT_REGIONS; r++) {
        add_into(c, d, r);
        add_expected(want, d, r);
    }
    ompbatch_hook_stats after = stats();
    uint64_t split = after.regions_split - before.regions_split;
    OB_CHECK(split == 0, "%" PRIu64 " regions on present data split, want none", split);
    uint64_t direct = after.regions_direct - before.regions_direct;
    if (env_is("OMPBATCH_HOST_BUSY", "1") || env_is("OMPBATCH_DIRECT_REGIONS", "0"))
        OB_CHECK(direct == 0, "%" PRIu64 " regions on present data got device addresses, want "
                 "none", direct);
    else if (env_is("OMPBATCH_DIRECT_REGIONS", "1"))
        OB_CHECK(direct == PRESENT_REGIONS, "%" PRIu64 " regions on present data got device "
                 "addresses, want all %d", direct, PRESENT_REGIONS);
    else
        OB_CHECK(direct == TIMED / 2 || direct == PRESENT_REGIONS - TIMED / 2,
                 "%" PRIu64 " regions on present data got device addresses under timing, want "
                 "%d (forwarded chosen) or %d", direct, TIMED / 2, PRESENT_REGIONS - TIMED / 2);
#pragma omp target exit data map(from : c[0:N]) map(release : d[0:N])
    ht_expect_host(c, want, bytes, "after the regions on present data");
    OB_CHECK(ht_is_unmapped(c, bytes) && ht_is_unmapped(d, bytes),
             "the arrays are still mapped after the exit");

    /* The same region on arrays no longer mapped: two copies to the device and one back, a
     * split on any host. */
    uint64_t split_before = stats().regions_split;
    for (uint32_t r = 0; r < NEW_REGIONS; r++) {
        add_into(c, d, 1000 + r);
        add_expected(want, d, 1000 + r);
        ht_expect_host(c, want, bytes, "after a region on unmapped arrays");
    }
    split = stats().regions_split - split_before;
    OB_CHECK(split == NEW_REGIONS, "%" PRIu64 " of the %d regions on unmapped arrays split",
             split, NEW_REGIONS);
    OB_CHECK(ht_is_unmapped(c, bytes) && ht_is_unmapped(d, bytes),
             "the regions left their arrays mapped");
    free(c);
    free(d);
    free(want);
    return ob_check_finish("region_choices");
}
