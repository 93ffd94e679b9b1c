/*
 * The OpenMP hook test of the shape it is meant to speed up: many small arrays (256 of 1 to
 * 5000 random bytes) moved 16 items per construct: enter data, update from, update to, one
 * construct updating half to and half from, update from and to of random sub-ranges, exit data,
 * and a target data region per group. Kernels change every byte between copies, and the host
 * is poisoned before every copy back, so any item the hook skips, misplaces or copies in the
 * wrong direction shows up.
 * A plain OpenMP program: compare.sh runs it with and without the hook and wants the same
 * report; see BUILD.bazel for the hook statistics it expects.
 *
 * Usage: many_small <seed>. Prints one checksum per group and
 * "many_small: N checks passed, M failed"; exits 1 on any failure.
 */
#include "hook_test.h"

enum { NARRAYS = 256, GROUP = 16, NGROUPS = NARRAYS / GROUP, MAX_BYTES = 5000 };

/* The arrays, and for each a random sub-range [off, off+len) for the sub-range updates. */
static ht_buf arrays[NARRAYS];
static size_t sub_off[NARRAYS], sub_len[NARRAYS];

/* A clause list over the 16 arrays of a group: LIST16(FULL) is p0[0:n0], ..., p15[0:n15].
 * Clause lists cannot loop, so each construct names its 16 items; the locals p<i>, n<i>,
 * o<i>, l<i> come from GROUP_LOCALS. */
#define LIST8_FROM(M, a, b, c, d, e, f, g, h) M(a), M(b), M(c), M(d), M(e), M(f), M(g), M(h)
#define LIST_LO(M) LIST8_FROM(M, 0, 1, 2, 3, 4, 5, 6, 7)
#define LIST_HI(M) LIST8_FROM(M, 8, 9, 10, 11, 12, 13, 14, 15)
#define LIST16(M) LIST_LO(M), LIST_HI(M)
#define FULL(i) p##i[0:n##i]
#define SUB(i) p##i[o##i:l##i]

#define LOCAL(i)                                                                                \
    unsigned char *p##i = g[i].p;                                                               \
    size_t n##i = g[i].n, o##i = off[i], l##i = len[i];                                         \
    (void)n##i, (void)o##i, (void)l##i; /* each construct uses some of them */
#define GROUP_LOCALS                                                                            \
    LOCAL(0) LOCAL(1) LOCAL(2) LOCAL(3) LOCAL(4) LOCAL(5) LOCAL(6) LOCAL(7) LOCAL(8) LOCAL(9)   \
    LOCAL(10) LOCAL(11) LOCAL(12) LOCAL(13) LOCAL(14) LOCAL(15)

/* The constructs under test, one group (g = &arrays[16 * k]) per call. */
static void group_enter(ht_buf *g, const size_t *off, const size_t *len)
{
    GROUP_LOCALS
#pragma omp target enter data map(to : LIST16(FULL))
}

static void group_update_from(ht_buf *g, const size_t *off, const size_t *len)
{
    GROUP_LOCALS
#pragma omp target update from(LIST16(FULL))
}

static void group_update_to(ht_buf *g, const size_t *off, const size_t *len)
{
    GROUP_LOCALS
#pragma omp target update to(LIST16(FULL))
}

/* Items 0-7 to the device, 8-15 back, in one construct. */
static void group_update_mixed(ht_buf *g, const size_t *off, const size_t *len)
{
    GROUP_LOCALS
#pragma omp target update to(LIST_LO(FULL)) from(LIST_HI(FULL))
}

static void group_update_from_sub(ht_buf *g, const size_t *off, const size_t *len)
{
    GROUP_LOCALS
#pragma omp target update from(LIST16(SUB))
}

static void group_update_to_sub(ht_buf *g, const size_t *off, const size_t *len)
{
    GROUP_LOCALS
#pragma omp target update to(LIST16(SUB))
}

static void group_exit(ht_buf *g, const size_t *off, const size_t *len)
{
    GROUP_LOCALS
#pragma omp target exit data map(from : LIST16(FULL))
}

static void region_body(ht_buf *g, int k);

/* A target data region mapping the group tofrom; region_body runs inside. */
static void group_region(ht_buf *g, const size_t *off, const size_t *len, int k)
{
    GROUP_LOCALS
#pragma omp target data map(tofrom : LIST16(FULL))
    region_body(g, k);
}

typedef void group_fn(ht_buf *g, const size_t *off, const size_t *len);

/* Runs fn on every group. */
static void each_group(group_fn *fn)
{
    for (int k = 0; k < NGROUPS; k++)
        fn(&arrays[GROUP * k], &sub_off[GROUP * k], &sub_len[GROUP * k]);
}

/* Checks every array (host whole, device mapped part), or the host only once unmapped. */
static void expect_all(const char *what, int mapped)
{
    for (int i = 0; i < NARRAYS; i++) {
        if (mapped)
            ht_buf_expect(&arrays[i], 0, arrays[i].n, what);
        else
            ht_buf_expect_host(&arrays[i], what);
    }
}

/* Before a copy back of array i: the device changes every byte, the host is poisoned (salts
 * differ per array and per call site). */
static void scramble_and_poison(int i, uint64_t salt)
{
    ht_buf_scramble(&arrays[i], 0, arrays[i].n, salt + 100000 * (uint64_t)i);
    ht_buf_poison(&arrays[i], salt + 100000 * (uint64_t)i + 1);
}

/* Inside group k's target data region: the begin must have copied the host data; then the
 * device changes every byte and the host is poisoned, for the end's copy back. */
static void region_body(ht_buf *g, int k)
{
    for (int i = 0; i < GROUP; i++) {
        ht_buf_copied_to(&g[i], 0, g[i].n);
        ht_buf_expect(&g[i], 0, g[i].n, "many: inside target data");
        scramble_and_poison(GROUP * k + i, 80);
    }
}

/* Prints one checksum per group, of its arrays one after the other. */
static void report(const char *phase)
{
    printf("%s:\n", phase);
    for (int k = 0; k < NGROUPS; k++) {
        uint64_t h = 0;
        size_t bytes = 0;
        for (int i = GROUP * k; i < GROUP * (k + 1); i++) {
            h = ob_test_mix(h ^ ht_fnv(arrays[i].p, arrays[i].n));
            bytes += arrays[i].n;
        }
        printf("  group %2d  %6zu bytes  %016" PRIx64 "\n", k, bytes, h);
    }
}

static void make_arrays(void)
{
    uint64_t r = ht_state(1);
    for (int i = 0; i < NARRAYS; i++) {
        arrays[i] = ht_buf_new(ht_between(&r, 1, MAX_BYTES), 10 + (uint64_t)i);
        sub_off[i] = ht_below(&r, arrays[i].n);
        sub_len[i] = ht_between(&r, 1, arrays[i].n - sub_off[i]);
    }
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "many_small");
    make_arrays();

    each_group(group_enter);
    expect_all("many: after enter", 1);

    for (int i = 0; i < NARRAYS; i++)
        scramble_and_poison(i, 20);
    each_group(group_update_from);
    for (int i = 0; i < NARRAYS; i++)
        ht_buf_copied_from(&arrays[i], 0, arrays[i].n);
    expect_all("many: after update from", 1);

    for (int i = 0; i < NARRAYS; i++)
        ht_buf_host_new(&arrays[i], 0, arrays[i].n, 30 + 100000 * (uint64_t)i);
    each_group(group_update_to);
    for (int i = 0; i < NARRAYS; i++)
        ht_buf_copied_to(&arrays[i], 0, arrays[i].n);
    expect_all("many: after update to", 1);

    /* Half of each group goes to the device, the other half comes back. */
    for (int i = 0; i < NARRAYS; i++) {
        if (i % GROUP < GROUP / 2)
            ht_buf_host_new(&arrays[i], 0, arrays[i].n, 40 + 100000 * (uint64_t)i);
        else
            scramble_and_poison(i, 42);
    }
    each_group(group_update_mixed);
    for (int i = 0; i < NARRAYS; i++) {
        if (i % GROUP < GROUP / 2)
            ht_buf_copied_to(&arrays[i], 0, arrays[i].n);
        else
            ht_buf_copied_from(&arrays[i], 0, arrays[i].n);
    }
    expect_all("many: after update to and from in one construct", 1);

    for (int i = 0; i < NARRAYS; i++)
        scramble_and_poison(i, 50);
    each_group(group_update_from_sub);
    for (int i = 0; i < NARRAYS; i++)
        ht_buf_copied_from(&arrays[i], sub_off[i], sub_len[i]);
    expect_all("many: after update from of sub-ranges", 1);

    for (int i = 0; i < NARRAYS; i++)
        ht_buf_host_new(&arrays[i], sub_off[i], sub_len[i], 60 + 100000 * (uint64_t)i);
    each_group(group_update_to_sub);
    for (int i = 0; i < NARRAYS; i++)
        ht_buf_copied_to(&arrays[i], sub_off[i], sub_len[i]);
    expect_all("many: after update to of sub-ranges", 1);
    report("after the updates");

    for (int i = 0; i < NARRAYS; i++)
        scramble_and_poison(i, 70);
    each_group(group_exit);
    for (int i = 0; i < NARRAYS; i++)
        ht_buf_copied_from(&arrays[i], 0, arrays[i].n);
    expect_all("many: after exit", 0);
    report("after exit data");

    /* New host data unlike the last device data, in case the new mappings get the same
     * device memory back. */
    for (int i = 0; i < NARRAYS; i++)
        ht_buf_host_new(&arrays[i], 0, arrays[i].n, 75 + 100000 * (uint64_t)i);
    for (int k = 0; k < NGROUPS; k++)
        group_region(&arrays[GROUP * k], &sub_off[GROUP * k], &sub_len[GROUP * k], k);
    for (int i = 0; i < NARRAYS; i++)
        ht_buf_copied_from(&arrays[i], 0, arrays[i].n);
    expect_all("many: after target data", 0);
    report("after target data");

    for (int i = 0; i < NARRAYS; i++)
        ht_buf_free(&arrays[i]);
    return ob_check_finish("many_small");
}
