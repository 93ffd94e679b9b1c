/*
 * One target region run many times on present data, then on the same arrays after they were
 * unmapped, when the region maps them itself. On a present array the region has nothing to
 * copy and is never split; on the unmapped ones it makes two copies to the device and one
 * back, which the hook batches by splitting it into data begin + kernel + data end -- on a
 * busy host too (OMPBATCH_HOST_BUSY=1), where it leaves regions with one copy each way and
 * regions on present data to the runtime (docs/hook.md, "Target regions"). What the hook
 * decided for the region on present data must not carry over to it on unmapped arrays. The
 * data is checked byte for byte and the splits counted.
 * Usage: busy_regions <seed>   (hooked build only: it reads the hook's statistics)
 */
#include "hook_test.h"

#include "ompbatch.h"

enum { N = 4096, PRESENT_REGIONS = 12, NEW_REGIONS = 3 };

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
    ht_init(argc, argv, "busy_regions");
    size_t bytes = N * sizeof(uint32_t);
    uint32_t *c = ht_malloc(bytes), *d = ht_malloc(bytes), *want = ht_malloc(bytes);
    ht_fill_random(c, bytes, 1);
    ht_fill_random(d, bytes, 2);
    memcpy(want, c, bytes);

#pragma omp target enter data map(to : c[0:N], d[0:N])
    uint64_t split_before = stats().regions_split;
    for (uint32_t r = 0; r < PRESENT_REGIONS; r++) {
        add_into(c, d, r);
        add_expected(want, d, r);
    }
    uint64_t split = stats().regions_split - split_before;
    OB_CHECK(split == 0, "%" PRIu64 " regions on present data split, want none", split);
#pragma omp target exit data map(from : c[0:N]) map(release : d[0:N])
    ht_expect_host(c, want, bytes, "after the regions on present data");
    OB_CHECK(ht_is_unmapped(c, bytes) && ht_is_unmapped(d, bytes),
             "the arrays are still mapped after the exit");

    /* The same region on arrays no longer mapped: two copies to the device and one back, a
     * split on any host. */
    split_before = stats().regions_split;
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
    return ob_check_finish("busy_regions");
}
