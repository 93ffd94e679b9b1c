/*
 * The ompbatch OpenMP hook benchmark: OpenMP data constructs of the shapes the hook batches (and
 * a few it should leave alone), timed with the hook off and on, alternating in one process.
 *
 * Shapes (pageable host memory from malloc; "4 KiB" arrays are 1024 separate allocations):
 *   a  `update to`,   64 constructs x 16 items x 4 KiB
 *   b  `update from`, 64 constructs x 16 items x 4 KiB
 *   c  `update to`,   1024 constructs x 1 item x 4 KiB
 *   d  `update from`, 1024 constructs x 1 item x 4 KiB
 *   e  `enter data map(to:)` + `exit data map(from:)`, 64 + 64 constructs x 16 items x 4 KiB
 *   f  `update to`,   1 item x 64 MiB
 *   g  `update from`, 1 item x 64 MiB
 *   k  `update to` / `update from` of one 64 MiB array 64 times a repetition, as a long-lived
 *      mapping updated every step (k-to resends the same bytes; k-from restores three 4 KiB
 *      slices poisoned before each update, and the whole array is checked at the end)
 *   h  `update to` / `update from`, 16 constructs x 16 items of 8 B .. 256 KiB (h-to, h-from)
 *   i  `update to` / `update from`, 1 item x 8 B, 1000 constructs (i-to, i-from)
 *   j  `update to` / `update from`, 512 constructs x 2 items x 4 KiB (j-to, j-from)
 *   r  target regions whose own maps move the data: r-naive 128 x (8 `to` + 2 `from`) x 4 KiB,
 *      r-tofrom 64 x `tofrom` 4 x 64 KiB, r-present the same on data mapped around them,
 *      r-single 256 x `tofrom` 1 x 4 KiB, r-reduce 1024 reductions over a present 4 KiB array;
 *      r-floor-naive and r-floor-reduce, the r-naive and r-reduce regions on data all present,
 *      time what the runtime takes for those regions when nothing moves; r-floor-tofrom, the
 *      r-tofrom regions with `map(alloc:)`, what its allocations and launches take
 *   s  s-col-from, s-col-to: column 1 of a 1024 x 1024 grid of doubles, one strided update
 *      (1024 pieces of 8 B)
 *   p  p-halo: halo rows of a grid reached through a global pointer (PTR_AND_OBJ sections),
 *      512 steps x (2 `update from` + 2 `update to`) x 3200 B
 *   and shapes the hook forwards, so that the summary shows they cost nothing: r-one-to,
 *   256 regions with one `map(to:)` of 4 KiB; m-to and m-from, shapes a and b with the
 *   `present` motion modifier; x-mapper-to and x-mapper-from, shapes a and b through a
 *   `declare mapper`. x-struct-to and x-struct-from: shapes a and b as updates of the two
 *   2 KiB members of 16 structs (once forwarded, now batched).
 *
 * The run ends with the never-slower summary (never_slower.h): the shapes whose hook-on median is
 * more than 3% above the runtime alone's while the paired repetitions agree that the hook took
 * longer, and apart from them those whose medians differ as much but whose pairs do not agree
 * (inconclusive). --contention runs every shape on thread 0 of a parallel region
 * whose other threads keep the host's other cores busy, as an OpenMP program's own threads do.
 *
 * Every repetition maps its arrays afresh (untimed, `enter data map(alloc:)` ... `exit data
 * map(release:)`, in the hook mode it times), moves new data and is checked byte for byte:
 *   - `to`: the device copy is first poisoned by a kernel, the host arrays get a fresh pattern,
 *     the constructs are timed, then kernels count device bytes that differ from the pattern;
 *   - `from`: kernels write a fresh pattern on the device, the host arrays are poisoned, the
 *     constructs are timed, then the host arrays are compared with the pattern;
 *   - enter/exit: the host pattern goes in with the timed `enter data`; kernels (untimed) check
 *     it and write a second pattern, which the timed `exit data` must bring back.
 * The pattern of repetition s is base(array, byte) + s (mod 256), and the poison is its
 * complement, so consecutive repetitions differ in every byte and a skipped copy always shows.
 * For the 1000-construct shape (i) the host also changes (to) or checks (from) the 8 bytes around
 * every construct, inside the timing: a few nanoseconds against microseconds per construct. For
 * i-to only the last construct's bytes can be checked on the device without a kernel per
 * construct; every construct sends different bytes, so at least a stale last copy shows.
 *
 * The hook's functions are looked up at run time (hook_api.h): without the hook the program
 * times the runtime alone. Hook off and on alternate within each repetition (the order flips
 * every repetition), after one untimed warm-up repetition of each.
 *
 * --json FILE writes the results: per shape, each mode's minimum, median and every repetition
 * in the order run (`reps`; pair k is element k of both modes), the verdict and the hook's
 * statistics of its timed repetitions.
 *
 * Usage: hook_bench [--reps N] [--quick] [--only KEYS] [--contention] [--json FILE]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook_api.h"
#include "never_slower.h"

#define GROUP 16 /* items per construct in the grouped shapes */

/* ---- the pattern, computed identically on host and device ----------------------------------- */

#pragma omp declare target
static inline unsigned char pattern(unsigned seed, size_t j, size_t i)
{
    uint32_t h = (uint32_t)j * 2654435761u + (uint32_t)i * 40503u + (uint32_t)(i >> 12) * 97u;
    return (unsigned char)((h >> 13) + seed);
}
#pragma omp end declare target

/* ---- constructs over groups of 16, 2 and 1 array ------------------------------------------- */

/* Each construct names its arrays through local pointers: clang 16 refuses two sections of
 * elements of one array (`p[0][0:n], p[1][0:n]`) in one clause, and `p[i][0:n]` would also map
 * the pointer p[i] itself and attach it (PTR_AND_OBJ), which is not the shape under test. */
#define EACH8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define EACH16(X) EACH8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define LOCAL(k) char *a##k = p[k]; size_t n##k = n[k];
#define SECS16                                                                                  \
    a0[0:n0], a1[0:n1], a2[0:n2], a3[0:n3], a4[0:n4], a5[0:n5], a6[0:n6], a7[0:n7], a8[0:n8],   \
        a9[0:n9], a10[0:n10], a11[0:n11], a12[0:n12], a13[0:n13], a14[0:n14], a15[0:n15]
#define SECS8 a0[0:n0], a1[0:n1], a2[0:n2], a3[0:n3], a4[0:n4], a5[0:n5], a6[0:n6], a7[0:n7]
#define SECS2 a0[0:n0], a1[0:n1]
#define SECS1 a0[0:n0]
/* Kernel bodies: one statement per array, guarded by that array's length. */
#define FILL(k)                                                                                 \
    if (i < n##k)                                                                               \
        a##k[i] = (char)(pattern(seed, j0 + k, i) ^ mask);
#define CHECK(k)                                                                                \
    if (i < n##k && (unsigned char)a##k[i] != pattern(seed, j0 + k, i))                         \
        bad++;

typedef void (*construct_fn)(char *const *p, const size_t *n);
typedef void (*fill_fn)(char *const *p, const size_t *n, size_t j0, unsigned seed,
                        unsigned char mask);
typedef long (*check_fn)(char *const *p, const size_t *n, size_t j0, unsigned seed);

typedef struct group_ops {
    size_t size;
    construct_fn enter_alloc, exit_release, update_to, update_from, enter_to, exit_from;
    fill_fn dev_fill;   /* device bytes = pattern ^ mask */
    check_fn dev_check; /* device bytes that differ from pattern */
} group_ops;

static size_t max_len(const size_t *n, size_t count)
{
    size_t m = 0;
    for (size_t k = 0; k < count; k++)
        m = n[k] > m ? n[k] : m;
    return m;
}

static void enter_alloc_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target enter data map(alloc: SECS16)
}

static void exit_release_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target exit data map(release: SECS16)
}

static void update_to_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target update to(SECS16)
}

static void update_from_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target update from(SECS16)
}

/* The same with the `present` motion modifier, which the hook leaves to the runtime whole (an
 * absent item must abort in the runtime's words): shapes m-to and m-from. */
static void update_to_present_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target update to(present: SECS16)
}

static void update_from_present_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target update from(present: SECS16)
}

static void enter_to_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target enter data map(to: SECS16)
}

static void exit_from_16(char *const *p, const size_t *n)
{
    EACH16(LOCAL)
#pragma omp target exit data map(from: SECS16)
}

/* The arrays are mapped already: map(alloc:) only looks them up (clang 16 without
 * -fopenmp-version=51 has no `present` modifier); were one missing, the check would see fresh
 * memory and fail.
 *
 * The kernels take 8 arrays, not 16: LLVM 16's nvptx device runtime calls the outlined parallel
 * region with at most 32 arguments (invokeMicrotask), and 16 pointers + 16 lengths + the rest
 * are more; it traps at run time ("Too many arguments in kmp_invoke_microtask"). The host-offload
 * target has no such limit, so only a GPU run shows it. */
static void dev_fill_8(char *const *p, const size_t *n, size_t j0, unsigned seed,
                       unsigned char mask)
{
    EACH8(LOCAL)
    size_t len = max_len(n, 8);
#pragma omp target teams distribute parallel for map(alloc: SECS8)
    for (size_t i = 0; i < len; i++) {
        EACH8(FILL)
    }
}

static long dev_check_8(char *const *p, const size_t *n, size_t j0, unsigned seed)
{
    EACH8(LOCAL)
    size_t len = max_len(n, 8);
    long bad = 0;
#pragma omp target teams distribute parallel for reduction(+ : bad) map(alloc: SECS8)
    for (size_t i = 0; i < len; i++) {
        EACH8(CHECK)
    }
    return bad;
}

static void dev_fill_16(char *const *p, const size_t *n, size_t j0, unsigned seed,
                        unsigned char mask)
{
    dev_fill_8(p, n, j0, seed, mask);
    dev_fill_8(p + 8, n + 8, j0 + 8, seed, mask);
}

static long dev_check_16(char *const *p, const size_t *n, size_t j0, unsigned seed)
{
    return dev_check_8(p, n, j0, seed) + dev_check_8(p + 8, n + 8, j0 + 8, seed);
}

static void enter_alloc_1(char *const *p, const size_t *n)
{
    LOCAL(0)
#pragma omp target enter data map(alloc: SECS1)
}

static void exit_release_1(char *const *p, const size_t *n)
{
    LOCAL(0)
#pragma omp target exit data map(release: SECS1)
}

static void update_to_1(char *const *p, const size_t *n)
{
    LOCAL(0)
#pragma omp target update to(SECS1)
}

static void update_from_1(char *const *p, const size_t *n)
{
    LOCAL(0)
#pragma omp target update from(SECS1)
}

static void enter_to_1(char *const *p, const size_t *n)
{
    LOCAL(0)
#pragma omp target enter data map(to: SECS1)
}

static void exit_from_1(char *const *p, const size_t *n)
{
    LOCAL(0)
#pragma omp target exit data map(from: SECS1)
}

static void dev_fill_1(char *const *p, const size_t *n, size_t j0, unsigned seed,
                       unsigned char mask)
{
    LOCAL(0)
#pragma omp target teams distribute parallel for map(alloc: SECS1)
    for (size_t i = 0; i < n0; i++) {
        FILL(0)
    }
}

static long dev_check_1(char *const *p, const size_t *n, size_t j0, unsigned seed)
{
    LOCAL(0)
    long bad = 0;
#pragma omp target teams distribute parallel for reduction(+ : bad) map(alloc: SECS1)
    for (size_t i = 0; i < n0; i++) {
        CHECK(0)
    }
    return bad;
}

static void enter_alloc_2(char *const *p, const size_t *n)
{
    LOCAL(0) LOCAL(1)
#pragma omp target enter data map(alloc: SECS2)
}

static void exit_release_2(char *const *p, const size_t *n)
{
    LOCAL(0) LOCAL(1)
#pragma omp target exit data map(release: SECS2)
}

static void update_to_2(char *const *p, const size_t *n)
{
    LOCAL(0) LOCAL(1)
#pragma omp target update to(SECS2)
}

static void update_from_2(char *const *p, const size_t *n)
{
    LOCAL(0) LOCAL(1)
#pragma omp target update from(SECS2)
}

static void enter_to_2(char *const *p, const size_t *n)
{
    LOCAL(0) LOCAL(1)
#pragma omp target enter data map(to: SECS2)
}

static void exit_from_2(char *const *p, const size_t *n)
{
    LOCAL(0) LOCAL(1)
#pragma omp target exit data map(from: SECS2)
}

static void dev_fill_2(char *const *p, const size_t *n, size_t j0, unsigned seed,
                       unsigned char mask)
{
    LOCAL(0) LOCAL(1)
    size_t len = max_len(n, 2);
#pragma omp target teams distribute parallel for map(alloc: SECS2)
    for (size_t i = 0; i < len; i++) {
        FILL(0) FILL(1)
    }
}

static long dev_check_2(char *const *p, const size_t *n, size_t j0, unsigned seed)
{
    LOCAL(0) LOCAL(1)
    size_t len = max_len(n, 2);
    long bad = 0;
#pragma omp target teams distribute parallel for reduction(+ : bad) map(alloc: SECS2)
    for (size_t i = 0; i < len; i++) {
        CHECK(0) CHECK(1)
    }
    return bad;
}

static const group_ops OPS16 = {16,           enter_alloc_16, exit_release_16, update_to_16,
                                update_from_16, enter_to_16,  exit_from_16,    dev_fill_16,
                                dev_check_16};
static const group_ops OPS16_PRESENT = {16,
                                        enter_alloc_16,
                                        exit_release_16,
                                        update_to_present_16,
                                        update_from_present_16,
                                        enter_to_16,
                                        exit_from_16,
                                        dev_fill_16,
                                        dev_check_16};
/* The same arrays spelled two more ways, for the never-slower summary. x-struct: each 4 KiB
 * array as a struct of two halves whose members are updated (clang passes the struct and its
 * members as MEMBER_OF items); x-mapper, which the hook leaves to the runtime: each array as one
 * struct moved through a `declare mapper` (the runtime calls the mapper for the items). The
 * arrays are mapped, filled and checked as plain arrays, so a missed copy still shows. */
typedef struct halves {
    char lo[2048];
    char hi[2048];
} halves;

#pragma omp declare mapper(whole : halves h) map(h.lo[0:2048], h.hi[0:2048])

#define HALVES(k) halves *h##k = (halves *)p[k];
#define MEMBERS16                                                                               \
    h0->lo, h0->hi, h1->lo, h1->hi, h2->lo, h2->hi, h3->lo, h3->hi, h4->lo, h4->hi, h5->lo,     \
        h5->hi, h6->lo, h6->hi, h7->lo, h7->hi, h8->lo, h8->hi, h9->lo, h9->hi, h10->lo,        \
        h10->hi, h11->lo, h11->hi, h12->lo, h12->hi, h13->lo, h13->hi, h14->lo, h14->hi,        \
        h15->lo, h15->hi
#define WHOLE16                                                                                 \
    h0[0:1], h1[0:1], h2[0:1], h3[0:1], h4[0:1], h5[0:1], h6[0:1], h7[0:1], h8[0:1], h9[0:1],   \
        h10[0:1], h11[0:1], h12[0:1], h13[0:1], h14[0:1], h15[0:1]

static void update_to_members_16(char *const *p, const size_t *n)
{
    EACH16(HALVES)
    (void)n;
#pragma omp target update to(MEMBERS16)
}

static void update_from_members_16(char *const *p, const size_t *n)
{
    EACH16(HALVES)
    (void)n;
#pragma omp target update from(MEMBERS16)
}

static void update_to_mapper_16(char *const *p, const size_t *n)
{
    EACH16(HALVES)
    (void)n;
#pragma omp target update to(mapper(whole): WHOLE16)
}

static void update_from_mapper_16(char *const *p, const size_t *n)
{
    EACH16(HALVES)
    (void)n;
#pragma omp target update from(mapper(whole): WHOLE16)
}

static const group_ops OPS16_MEMBERS = {16,
                                        enter_alloc_16,
                                        exit_release_16,
                                        update_to_members_16,
                                        update_from_members_16,
                                        enter_to_16,
                                        exit_from_16,
                                        dev_fill_16,
                                        dev_check_16};
static const group_ops OPS16_MAPPER = {16,
                                       enter_alloc_16,
                                       exit_release_16,
                                       update_to_mapper_16,
                                       update_from_mapper_16,
                                       enter_to_16,
                                       exit_from_16,
                                       dev_fill_16,
                                       dev_check_16};
static const group_ops OPS2 = {2,           enter_alloc_2, exit_release_2, update_to_2,
                               update_from_2, enter_to_2,  exit_from_2,    dev_fill_2,
                               dev_check_2};
static const group_ops OPS1 = {1,           enter_alloc_1, exit_release_1, update_to_1,
                               update_from_1, enter_to_1,  exit_from_1,    dev_fill_1,
                               dev_check_1};

/* ---- target regions with maps of their own --------------------------------------------------- */

/* Region shapes time whole target regions whose map clauses move the data. The host arrays
 * hold the pattern (`to` arrays) or its complement (`from`, `tofrom`); the kernels make every
 * array hold the pattern, using what the `to` copies brought, so any missing copy shows. */

/* 8 `to` arrays and 2 `from` arrays: b0 and b1 get the pattern through the XOR of four `to`
 * arrays each, which cancels only when those arrived. */
static void region_8to_2from(char *const *p, const size_t *n, size_t j0, unsigned seed,
                             unsigned char mask)
{
    EACH8(LOCAL)
    char *b0 = p[8], *b1 = p[9];
    (void)mask;
#pragma omp target teams distribute parallel for map(to: SECS8) map(from: b0[0:n0], b1[0:n0])
    for (size_t i = 0; i < n0; i++) {
        unsigned char x = (unsigned char)(a0[i] ^ a1[i] ^ a2[i] ^ a3[i]) ^
                          pattern(seed, j0, i) ^ pattern(seed, j0 + 1, i) ^
                          pattern(seed, j0 + 2, i) ^ pattern(seed, j0 + 3, i);
        unsigned char y = (unsigned char)(a4[i] ^ a5[i] ^ a6[i] ^ a7[i]) ^
                          pattern(seed, j0 + 4, i) ^ pattern(seed, j0 + 5, i) ^
                          pattern(seed, j0 + 6, i) ^ pattern(seed, j0 + 7, i);
        b0[i] = (char)(x ^ pattern(seed, j0 + 8, i));
        b1[i] = (char)(y ^ pattern(seed, j0 + 9, i));
    }
}

/* 4 arrays tofrom: each byte comes in as pattern ^ mask and goes back as pattern. */
static void region_4tofrom(char *const *p, const size_t *n, size_t j0, unsigned seed,
                           unsigned char mask)
{
    LOCAL(0) LOCAL(1) LOCAL(2) LOCAL(3)
#pragma omp target teams distribute parallel for map(tofrom: a0[0:n0], a1[0:n1], a2[0:n2], a3[0:n3])
    for (size_t i = 0; i < n0; i++) {
        a0[i] = (char)(a0[i] ^ mask);
        a1[i] = (char)(a1[i] ^ mask);
        a2[i] = (char)(a2[i] ^ mask);
        a3[i] = (char)(a3[i] ^ mask);
    }
    (void)j0, (void)seed;
}

/* The same 4 arrays allocated only: the floor of r-tofrom, what the runtime's allocations,
 * frees and launches cost with no byte moved. */
static void region_4alloc(char *const *p, const size_t *n, size_t j0, unsigned seed,
                          unsigned char mask)
{
    LOCAL(0) LOCAL(1) LOCAL(2) LOCAL(3)
#pragma omp target teams distribute parallel for map(alloc: a0[0:n0], a1[0:n1], a2[0:n2], a3[0:n3])
    for (size_t i = 0; i < n0; i++) {
        a0[i] = (char)mask;
        a1[i] = (char)mask;
        a2[i] = (char)mask;
        a3[i] = (char)mask;
    }
    (void)j0, (void)seed;
}

/* 1 array tofrom: the single-map region. */
static void region_1tofrom(char *const *p, const size_t *n, size_t j0, unsigned seed,
                           unsigned char mask)
{
    LOCAL(0)
#pragma omp target teams distribute parallel for map(tofrom: a0[0:n0])
    for (size_t i = 0; i < n0; i++)
        a0[i] = (char)(a0[i] ^ mask);
    (void)j0, (void)seed;
}

/* 1 array `to` and nothing else mapped: a region the hook forwards (one copy to make gains
 * nothing from a split). The kernel counts the bytes that did not arrive in a device global,
 * which is no map of the region; rep_region reads it back afterwards. */
#pragma omp declare target
long region_mismatches; /* not static: the host updates it, which needs external linkage */
#pragma omp end declare target

static void region_1to(char *const *p, const size_t *n, size_t j0, unsigned seed,
                       unsigned char mask)
{
    LOCAL(0)
#pragma omp target teams distribute parallel for map(to: a0[0:n0])
    for (size_t i = 0; i < n0; i++) {
        if ((unsigned char)a0[i] != pattern(seed, j0, i)) {
#pragma omp atomic
            region_mismatches++;
        }
    }
    (void)mask;
}

/* A reduction over a mapped 4 KiB array: the 8-byte sum is the region's only transfer when
 * the array is present. */
static long reduction_sum;

static void region_reduction(char *const *p, const size_t *n, size_t j0, unsigned seed,
                             unsigned char mask)
{
    LOCAL(0)
    long sum = 0;
#pragma omp target teams distribute parallel for map(to: a0[0:n0]) reduction(+ : sum)
    for (size_t i = 0; i < n0; i++)
        sum += (unsigned char)a0[i];
    reduction_sum += sum;
    (void)j0, (void)seed, (void)mask;
}

/* The same reduction into a sum mapped around the regions (rep_region maps it): the region
 * moves nothing, so its time is the runtime's own cost of the region, the floor under
 * r-reduce. */
static long present_sum;

static void region_reduction_present(char *const *p, const size_t *n, size_t j0, unsigned seed,
                                     unsigned char mask)
{
    LOCAL(0)
#pragma omp target teams distribute parallel for map(to: a0[0:n0]) reduction(+ : present_sum)
    for (size_t i = 0; i < n0; i++)
        present_sum += (unsigned char)a0[i];
    (void)j0, (void)seed, (void)mask;
}

/* ---- halo rows of a global pointer ----------------------------------------------------------- */

/* Shape p-halo: a grid reached through a global pointer, so clang maps its sections
 * PTR_AND_OBJ, as a weather code's halo exchange does: each step reads back the two rows next
 * to the edges and sends new edge rows. */
#define HALO_ROW 3200
#define HALO_ROWS 16
#define HALO_STEPS 512
static char *halo_grid;

static void halo_step(void)
{
#pragma omp target update from(halo_grid[HALO_ROW:HALO_ROW])
#pragma omp target update from(halo_grid[(HALO_ROWS - 2) * HALO_ROW:HALO_ROW])
#pragma omp target update to(halo_grid[0:HALO_ROW])
#pragma omp target update to(halo_grid[(HALO_ROWS - 1) * HALO_ROW:HALO_ROW])
}

/* ---- a column of a grid: a strided update ------------------------------------------------- */

/* Shapes s-col-from and s-col-to: column 1 of a 1024 x 1024 grid of doubles, one
 * non-contiguous `target update` (1024 pieces of 8 B). Constant bounds: clang 16 describes a
 * section as non-contiguous only then. */
#define COL_N 1024

static void column_update(char *p, int to)
{
    double(*g)[COL_N] = (double(*)[COL_N])(void *)p;
    if (to) {
#pragma omp target update to(g[0:COL_N][1:1])
    } else {
#pragma omp target update from(g[0:COL_N][1:1])
    }
}

static int in_column(size_t byte)
{
    size_t within = byte % (COL_N * sizeof(double));
    return within >= sizeof(double) && within < 2 * sizeof(double);
}

/* ---- shapes ---------------------------------------------------------------------------------- */

typedef enum shape_kind {
    KIND_TO,
    KIND_FROM,
    KIND_ENTER_EXIT,
    KIND_REGION,
    KIND_HALO,
    KIND_COLUMN
} shape_kind;

typedef struct config {
    int reps;
    int quick;
    size_t big_bytes; /* shapes f and g */
    const char *only; /* shape letters to run, NULL for all */
    const char *json;
    int contention;   /* the program's other OpenMP threads busy on every core meanwhile */
} config;

typedef struct shape {
    const char *key;
    const char *what;
    shape_kind kind;
    const group_ops *ops;
    size_t arrays;
    int repeat; /* times each construct is issued per repetition */
    size_t (*size_of)(size_t j, const config *cfg);
    fill_fn region;      /* KIND_REGION: one region over `group` arrays */
    size_t group;
    int present;         /* KIND_REGION: the arrays are mapped around the regions (untimed) */
    size_t from_at;      /* KIND_REGION: arrays [from_at, group) of each group are `from` */
    int steady;          /* repeat > 1: the arrays stay as they are between repeats, as a
                            long-lived mapping updated every step (`to` sends the same bytes
                            again; `from` restores slices poisoned before each repeat) */
} shape;

static size_t size_4k(size_t j, const config *cfg)
{
    (void)j, (void)cfg;
    return 4096;
}

static size_t size_halo(size_t j, const config *cfg)
{
    (void)j, (void)cfg;
    return HALO_ROWS * HALO_ROW;
}

static size_t size_64k(size_t j, const config *cfg)
{
    (void)j, (void)cfg;
    return 64 * 1024;
}

static size_t size_big(size_t j, const config *cfg)
{
    (void)j;
    return cfg->big_bytes;
}

/* 8 B << 0..15, i.e. 8 B .. 256 KiB, every size once per construct, rotated so that each
 * construct sees them in a different order. */
static size_t size_mixed(size_t j, const config *cfg)
{
    (void)cfg;
    return (size_t)8 << ((j + j / GROUP) % GROUP);
}

static size_t size_grid(size_t j, const config *cfg)
{
    (void)j, (void)cfg;
    return (size_t)COL_N * COL_N * sizeof(double);
}

static size_t size_8(size_t j, const config *cfg)
{
    (void)j, (void)cfg;
    return 8;
}

static const shape SHAPES[] = {
    {"a", "update to, 64 x 16 x 4 KiB", KIND_TO, &OPS16, 1024, 1, size_4k, NULL, 0, 0, 0, 0},
    {"b", "update from, 64 x 16 x 4 KiB", KIND_FROM, &OPS16, 1024, 1, size_4k, NULL, 0, 0, 0, 0},
    {"c", "update to, 1024 x 1 x 4 KiB", KIND_TO, &OPS1, 1024, 1, size_4k, NULL, 0, 0, 0, 0},
    {"d", "update from, 1024 x 1 x 4 KiB", KIND_FROM, &OPS1, 1024, 1, size_4k, NULL, 0, 0, 0, 0},
    {"e", "enter to + exit from, 64+64 x 16 x 4 KiB", KIND_ENTER_EXIT, &OPS16, 1024, 1, size_4k,
     NULL, 0, 0, 0, 0},
    {"f", "update to, 1 x big", KIND_TO, &OPS1, 1, 1, size_big, NULL, 0, 0, 0, 0},
    {"g", "update from, 1 x big", KIND_FROM, &OPS1, 1, 1, size_big, NULL, 0, 0, 0, 0},
    {"k-to", "update to, 64 x 1 x big, one mapping", KIND_TO, &OPS1, 1, 64, size_big, NULL, 0,
     0, 0, 1},
    {"k-from", "update from, 64 x 1 x big, one mapping", KIND_FROM, &OPS1, 1, 64, size_big,
     NULL, 0, 0, 0, 1},
    {"h-to", "update to, 16 x 16 x 8 B..256 KiB", KIND_TO, &OPS16, 256, 1, size_mixed, NULL, 0,
     0, 0, 0},
    {"h-from", "update from, 16 x 16 x 8 B..256 KiB", KIND_FROM, &OPS16, 256, 1, size_mixed,
     NULL, 0, 0, 0, 0},
    {"i-to", "update to, 1000 x 1 x 8 B", KIND_TO, &OPS1, 1, 1000, size_8, NULL, 0, 0, 0, 0},
    {"i-from", "update from, 1000 x 1 x 8 B", KIND_FROM, &OPS1, 1, 1000, size_8, NULL, 0, 0, 0, 0},
    {"j-to", "update to, 512 x 2 x 4 KiB", KIND_TO, &OPS2, 1024, 1, size_4k, NULL, 0, 0, 0, 0},
    {"j-from", "update from, 512 x 2 x 4 KiB", KIND_FROM, &OPS2, 1024, 1, size_4k, NULL, 0, 0, 0, 0},
    {"r-naive", "regions, 128 x (8 to + 2 from) x 4 KiB", KIND_REGION, &OPS16, 1280, 1,
     size_4k, region_8to_2from, 10, 0, 8, 0},
    {"r-tofrom", "regions, 64 x tofrom 4 x 64 KiB", KIND_REGION, &OPS16, 256, 1, size_64k,
     region_4tofrom, 4, 0, 0, 0},
    {"r-present", "regions on present data, 64 x 4 x 64 KiB", KIND_REGION, &OPS16, 256, 1,
     size_64k, region_4tofrom, 4, 1, 0, 0},
    {"r-single", "regions, 256 x tofrom 1 x 4 KiB", KIND_REGION, &OPS16, 256, 1, size_4k,
     region_1tofrom, 1, 0, 0, 0},
    {"r-reduce", "regions, 1024 x reduction over present 4 KiB", KIND_REGION, &OPS16, 1024, 1,
     size_4k, region_reduction, 1, 1, 1, 0},
    /* Forwarded by the hook, for the never-slower summary: a region with one `to` map, and
     * updates with the `present` modifier. */
    {"r-one-to", "regions, 256 x to 1 x 4 KiB (forwarded)", KIND_REGION, &OPS16, 256, 1,
     size_4k, region_1to, 1, 0, 1, 0},
    {"m-to", "update to(present:), 64 x 16 x 4 KiB (fwd)", KIND_TO, &OPS16_PRESENT, 1024, 1,
     size_4k, NULL, 0, 0, 0, 0},
    {"m-from", "update from(present:), 64 x 16 x 4 KiB (fwd)", KIND_FROM, &OPS16_PRESENT, 1024,
     1, size_4k, NULL, 0, 0, 0, 0},
    {"x-struct-to", "update to, 64 x 16 structs' 2 members", KIND_TO, &OPS16_MEMBERS, 1024,
     1, size_4k, NULL, 0, 0, 0, 0},
    {"x-struct-from", "update from, 64 x 16 structs' 2 members", KIND_FROM, &OPS16_MEMBERS,
     1024, 1, size_4k, NULL, 0, 0, 0, 0},
    {"x-mapper-to", "update to(mapper), 64 x 16 x 4 KiB (fwd)", KIND_TO, &OPS16_MAPPER, 1024, 1,
     size_4k, NULL, 0, 0, 0, 0},
    {"x-mapper-from", "update from(mapper), 64 x 16 x 4 KiB (fwd)", KIND_FROM, &OPS16_MAPPER,
     1024, 1, size_4k, NULL, 0, 0, 0, 0},
    /* Floors: the regions above on data that is all present, so they move nothing; what the
     * runtime takes for them is what no batching of their copies can remove. */
    {"r-floor-naive", "floor of r-naive: the same regions on present data", KIND_REGION, &OPS16,
     1280, 1, size_4k, region_8to_2from, 10, 1, 8, 0},
    {"r-floor-reduce", "floor of r-reduce: the sum present too", KIND_REGION, &OPS16, 1024, 1,
     size_4k, region_reduction_present, 1, 1, 1, 0},
    {"r-floor-tofrom", "floor of r-tofrom: the same regions allocating only", KIND_REGION,
     &OPS16, 256, 1, size_64k, region_4alloc, 4, 0, 0, 0},
    {"s-col-from", "update from, column of 1024 x 1024 doubles", KIND_COLUMN, &OPS1, 1, 1,
     size_grid, NULL, 0, 0, 0, 0},
    {"s-col-to", "update to, column of 1024 x 1024 doubles", KIND_COLUMN, &OPS1, 1, 1,
     size_grid, NULL, 0, 0, 0, 0},
    {"p-halo", "global pointer halo, 512 x (2 from + 2 to) x 3200 B", KIND_HALO, &OPS1, 1,
     HALO_STEPS, size_halo, NULL, 0, 0, 0, 0},
};
#define NSHAPES (sizeof SHAPES / sizeof SHAPES[0])

/* The host side of one shape: its arrays and their lengths. */
typedef struct arrays {
    size_t count;
    char **p;
    size_t *n;
    size_t bytes;
} arrays;

typedef struct result {
    const shape *sh;
    size_t constructs, items, bytes; /* per repetition */
    double off_min, off_med, on_min, on_med;
    int pairs, pairs_slower; /* repetitions, and those where the hook took over 3% longer */
    verdict verdict;
    int have_on;
    int failed; /* wrong data, or the hook batching while off */
    ompbatch_hook_stats on_stats; /* summed over the timed hook-on repetitions */
    ompbatch_hook_stats off_stats;
    double *reps_us[2]; /* hook off, on: each repetition's time in the order run (JSON) */
} result;

/* ---- helpers --------------------------------------------------------------------------------- */

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "hook_bench: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place; returns the median (the mean of the middle two for even counts). */
static double median(double *v, int count)
{
    qsort(v, (size_t)count, sizeof *v, cmp_double);
    return count % 2 ? v[count / 2] : 0.5 * (v[count / 2 - 1] + v[count / 2]);
}

static arrays arrays_create(const shape *sh, const config *cfg)
{
    arrays a = {.count = sh->arrays, .bytes = 0};
    a.p = xmalloc(a.count * sizeof *a.p);
    a.n = xmalloc(a.count * sizeof *a.n);
    for (size_t j = 0; j < a.count; j++) {
        a.n[j] = sh->size_of(j, cfg);
        a.p[j] = xmalloc(a.n[j]);
        a.bytes += a.n[j];
    }
    return a;
}

static void arrays_destroy(arrays *a)
{
    for (size_t j = 0; j < a->count; j++)
        free(a->p[j]);
    free(a->p);
    free(a->n);
}

static void host_fill(const arrays *a, unsigned seed, unsigned char mask)
{
    for (size_t j = 0; j < a->count; j++)
        for (size_t i = 0; i < a->n[j]; i++)
            a->p[j][i] = (char)(pattern(seed, j, i) ^ mask);
}

/* Host bytes that differ from the pattern; prints the first. */
static long host_check(const arrays *a, unsigned seed, const char *where)
{
    long bad = 0;
    for (size_t j = 0; j < a->count; j++) {
        for (size_t i = 0; i < a->n[j]; i++) {
            unsigned char want = pattern(seed, j, i);
            if ((unsigned char)a->p[j][i] == want)
                continue;
            if (bad++ == 0)
                fprintf(stderr,
                        "hook_bench: %s: host array %zu byte %zu is 0x%02x, expected 0x%02x\n",
                        where, j, i, (unsigned char)a->p[j][i], want);
        }
    }
    return bad;
}

/* The slices of each array a steady `from` shape poisons before each repeat: its first,
 * middle and last SLICE bytes. */
#define SLICE 4096
static size_t slice_at(size_t n, int k)
{
    size_t len = n < SLICE ? n : SLICE;
    return k == 0 ? 0 : k == 1 ? (n - len) / 2 : n - len;
}

static void slices_poison(const arrays *a)
{
    for (size_t j = 0; j < a->count; j++)
        for (int k = 0; k < 3; k++)
            for (size_t i = 0, at = slice_at(a->n[j], k); i < SLICE && at + i < a->n[j]; i++)
                a->p[j][at + i] = (char)~a->p[j][at + i];
}

/* Slice bytes that differ from the pattern; prints the first. */
static long slices_check(const arrays *a, unsigned seed, const char *where)
{
    long bad = 0;
    for (size_t j = 0; j < a->count; j++) {
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0, at = slice_at(a->n[j], k); i < SLICE && at + i < a->n[j]; i++) {
                unsigned char want = pattern(seed, j, at + i);
                if ((unsigned char)a->p[j][at + i] != want && bad++ == 0)
                    fprintf(stderr, "hook_bench: %s: host array %zu byte %zu is 0x%02x, "
                                    "expected 0x%02x\n",
                            where, j, at + i, (unsigned char)a->p[j][at + i], want);
            }
        }
    }
    return bad;
}

/* Calls one construct (or kernel) per group, over all arrays. */
static void each_group(const arrays *a, const group_ops *ops, construct_fn fn)
{
    for (size_t j = 0; j < a->count; j += ops->size)
        fn(&a->p[j], &a->n[j]);
}

static void dev_fill(const arrays *a, const group_ops *ops, unsigned seed, unsigned char mask)
{
    for (size_t j = 0; j < a->count; j += ops->size)
        ops->dev_fill(&a->p[j], &a->n[j], j, seed, mask);
}

static long dev_check(const arrays *a, const group_ops *ops, unsigned seed)
{
    long bad = 0;
    for (size_t j = 0; j < a->count; j += ops->size)
        bad += ops->dev_check(&a->p[j], &a->n[j], j, seed);
    return bad;
}

/* ---- one repetition -------------------------------------------------------------------------- */

/* The clock and the hook's counters around one timed stretch. */
typedef struct timer {
    const hook_api *api;
    ompbatch_hook_stats *acc;
    ompbatch_hook_stats before;
    double t0, us;
} timer;

static void timer_start(timer *t)
{
    t->before = hook_api_stats(t->api);
    t->t0 = omp_get_wtime();
}

static void timer_stop(timer *t)
{
    double t1 = omp_get_wtime();
    ompbatch_hook_stats after = hook_api_stats(t->api);
    t->us += (t1 - t->t0) * 1e6;
    hook_stats_accumulate(t->acc, &t->before, &after);
}

/* `update to`; returns the device bytes that did not arrive. */
static long rep_to(const shape *sh, const arrays *a, unsigned seed, timer *t)
{
    const group_ops *ops = sh->ops;
    dev_fill(a, ops, seed, 0xFF);
    host_fill(a, seed, 0);
    timer_start(t);
    for (int r = 0; r < sh->repeat; r++) {
        if (sh->repeat > 1 && !sh->steady)
            host_fill(a, seed + (unsigned)r, 0);
        each_group(a, ops, ops->update_to);
    }
    timer_stop(t);
    return dev_check(a, ops, sh->steady ? seed : seed + (unsigned)sh->repeat - 1);
}

/* `update from`; returns the host bytes that did not arrive. */
static long rep_from(const shape *sh, const arrays *a, unsigned seed, timer *t)
{
    const group_ops *ops = sh->ops;
    long bad = 0;
    dev_fill(a, ops, seed, 0);
    host_fill(a, seed, 0xFF);
    timer_start(t);
    for (int r = 0; r < sh->repeat; r++) {
        if (sh->repeat > 1 && sh->steady) {
            if (r > 0) /* the first finds the whole array poisoned */
                slices_poison(a);
        } else if (sh->repeat > 1)
            host_fill(a, seed, 0xFF);
        each_group(a, ops, ops->update_from);
        if (sh->repeat > 1 && sh->steady)
            bad += slices_check(a, seed, sh->key);
        else if (sh->repeat > 1)
            bad += host_check(a, seed, sh->key);
    }
    timer_stop(t);
    return bad + host_check(a, seed, sh->key);
}

/* `enter data map(to:)` then `exit data map(from:)`, with the device checked and rewritten
 * between them outside the timing. */
static long rep_enter_exit(const shape *sh, const arrays *a, unsigned seed, timer *t)
{
    const group_ops *ops = sh->ops;
    host_fill(a, seed, 0);
    timer_start(t);
    each_group(a, ops, ops->enter_to);
    timer_stop(t);
    long bad = dev_check(a, ops, seed);
    dev_fill(a, ops, seed + 1, 0);
    timer_start(t);
    each_group(a, ops, ops->exit_from);
    timer_stop(t);
    return bad + host_check(a, seed + 1, sh->key);
}

/* Whole target regions (KIND_REGION). `from` arrays and `tofrom` arrays start as the
 * pattern's complement, `to` arrays as the pattern; afterwards every host array must hold the
 * pattern. Present shapes map the arrays first (untimed) and check the device instead: the
 * regions move nothing, except r-reduce's sum. */
static long rep_region(const shape *sh, const arrays *a, unsigned seed, timer *t)
{
    if (sh->present) {
        each_group(a, &OPS16, enter_alloc_16);
        dev_fill(a, &OPS16, seed, 0xFF);
    }
    host_fill(a, seed, 0);
    for (size_t j = 0; j < a->count; j += sh->group)
        for (size_t k = sh->from_at; k < sh->group; k++)
            for (size_t i = 0; i < a->n[j + k]; i++)
                a->p[j + k][i] = (char)~pattern(seed, j + k, i);
    reduction_sum = 0;
    present_sum = 0;
    region_mismatches = 0;
#pragma omp target update to(region_mismatches)
    int sum_around = sh->region == region_reduction_present;
    if (sum_around) {
#pragma omp target enter data map(to: present_sum)
    }
    timer_start(t);
    for (size_t j = 0; j < a->count; j += sh->group)
        sh->region(&a->p[j], &a->n[j], j, seed, 0xFF);
    timer_stop(t);
    if (sum_around) {
#pragma omp target exit data map(from: present_sum)
        reduction_sum = present_sum;
    }
    long bad = 0;
#pragma omp target update from(region_mismatches)
    bad += region_mismatches;
    if (sh->region == region_reduction || sum_around) {
        long want = 0;
        for (size_t j = 0; j < a->count; j++)
            for (size_t i = 0; i < a->n[j]; i++)
                want += (unsigned char)~pattern(seed, j, i);
        if (reduction_sum != want) {
            fprintf(stderr, "hook_bench: %s: the sums add up to %ld, expected %ld\n", sh->key,
                    reduction_sum, want);
            bad++;
        }
        /* The device copies are still the complement: nothing was copied over them. */
        bad += dev_check(a, &OPS16, seed) == (long)a->bytes ? 0 : 1;
    } else if (sh->region == region_4alloc) {
        /* Nothing crossed: every host array still holds the complement. */
        for (size_t j = 0; j < a->count; j++)
            for (size_t i = 0; i < a->n[j]; i++)
                bad += a->p[j][i] != (char)~pattern(seed, j, i);
    } else if (sh->present) {
        /* The arrays a region writes went from the complement to the pattern on the device;
         * those it only reads are still the complement; the host kept its own. */
        long read_only = 0;
        for (size_t j = 0; j < a->count; j += sh->group)
            for (size_t k = 0; k < sh->from_at; k++)
                read_only += (long)a->n[j + k];
        bad += labs(dev_check(a, &OPS16, seed) - read_only);
    } else {
        bad += host_check(a, seed, sh->key);
    }
    if (sh->present)
        each_group(a, &OPS16, exit_release_16);
    return bad;
}

/* The device grid holds the pattern where the host's will be its complement (`from`), or the
 * other way round (`to`); afterwards exactly the column's bytes crossed over. */
static long rep_column(const shape *sh, const arrays *a, unsigned seed, timer *t)
{
    int to = strcmp(sh->key, "s-col-to") == 0;
    char *p = a->p[0];
    size_t n = a->n[0];
#pragma omp target enter data map(alloc: p[0:n])
    dev_fill(a, &OPS1, seed, to ? 0xFF : 0);
    host_fill(a, seed, to ? 0 : 0xFF);
    timer_start(t);
    for (int r = 0; r < sh->repeat; r++)
        column_update(p, to);
    timer_stop(t);
    long bad = 0;
    if (!to) {
        for (size_t i = 0; i < n; i++) {
            unsigned char want = pattern(seed, 0, i);
            bad += (unsigned char)p[i] != (in_column(i) ? want : (unsigned char)~want);
        }
    } else {
        /* Only the column now holds the pattern on the device. */
        bad += dev_check(a, &OPS1, seed) != (long)(n - COL_N * sizeof(double));
    }
#pragma omp target exit data map(release: p[0:n])
    return bad;
}

/* Shape p-halo: the device grid starts as the pattern's complement, the host's as the
 * pattern; afterwards the host holds the device's rows next to the edges, the device the
 * host's edge rows, and nothing else changed. */
static long rep_halo(const shape *sh, const arrays *a, unsigned seed, timer *t)
{
    halo_grid = a->p[0];
    size_t n = a->n[0];
#pragma omp target enter data map(alloc: halo_grid[0:n])
    dev_fill(a, &OPS1, seed, 0xFF);
    host_fill(a, seed, 0);
    timer_start(t);
    for (int r = 0; r < sh->repeat; r++)
        halo_step();
    timer_stop(t);
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        size_t row = i / HALO_ROW;
        unsigned char want = pattern(seed, 0, i);
        if (row == 1 || row == HALO_ROWS - 2)
            want = (unsigned char)~want;
        bad += (unsigned char)halo_grid[i] != want;
    }
    /* On the device only the edge rows hold the pattern now. */
    long differ = dev_check(a, &OPS1, seed);
    bad += differ != (long)(n - 2 * HALO_ROW);
#pragma omp target exit data map(release: halo_grid[0:n])
    return bad;
}

/* One repetition in the current hook mode: its time in microseconds, or -1 on wrong data. */
static double run_rep(const shape *sh, const arrays *a, const hook_api *api, int on,
                      ompbatch_hook_stats *acc)
{
    /* Seeds advance by more than any repetition uses, so no two repetitions share a pattern
     * and the previous device or host contents never equal the new ones. */
    static unsigned next_seed = 1;
    unsigned seed = next_seed;
    next_seed += (unsigned)sh->repeat + 2;
    timer t = {.api = api, .acc = acc, .us = 0};
    /* The update shapes map their arrays here, untimed, in the mode being timed: the hook
     * forgets what it knew of the runtime's tables when it is switched on (it saw nothing while
     * off), so it would forward updates of anything mapped before. */
    int maps_around = sh->kind == KIND_TO || sh->kind == KIND_FROM;
    if (maps_around)
        each_group(a, sh->ops, sh->ops->enter_alloc);
    long bad = sh->kind == KIND_TO       ? rep_to(sh, a, seed, &t)
               : sh->kind == KIND_FROM   ? rep_from(sh, a, seed, &t)
               : sh->kind == KIND_REGION ? rep_region(sh, a, seed, &t)
               : sh->kind == KIND_HALO   ? rep_halo(sh, a, seed, &t)
               : sh->kind == KIND_COLUMN ? rep_column(sh, a, seed, &t)
                                         : rep_enter_exit(sh, a, seed, &t);
    if (maps_around)
        each_group(a, sh->ops, sh->ops->exit_release);
    if (bad) {
        fprintf(stderr, "hook_bench: shape %s, hook %s: %ld wrong bytes\n", sh->key,
                on ? "on" : "off", bad);
        return -1;
    }
    return t.us;
}

/* ---- one shape ------------------------------------------------------------------------------- */

static void shape_counts(const shape *sh, const arrays *a, result *res)
{
    int passes = sh->kind == KIND_ENTER_EXIT ? 2 : 1;
    res->sh = sh;
    size_t group = sh->kind == KIND_REGION ? sh->group : sh->ops->size;
    res->constructs = a->count / group * (size_t)sh->repeat * (size_t)passes;
    if (sh->kind == KIND_HALO) {
        res->constructs = 4 * (size_t)sh->repeat;
        res->items = res->constructs;
        res->bytes = res->constructs * HALO_ROW;
        return;
    }
    if (sh->kind == KIND_COLUMN) {
        res->constructs = (size_t)sh->repeat;
        res->items = res->constructs;
        res->bytes = res->constructs * COL_N * sizeof(double);
        return;
    }
    res->items = a->count * (size_t)sh->repeat * (size_t)passes;
    res->bytes = a->bytes * (size_t)sh->repeat * (size_t)passes;
}

/* Runs warm-up and timed repetitions, hook off and on alternating. Returns 0 or 1 (wrong data,
 * or the hook batching while off). */
static int run_shape(const shape *sh, const config *cfg, const hook_api *api, result *res)
{
    arrays a = arrays_create(sh, cfg);
    memset(res, 0, sizeof *res);
    shape_counts(sh, &a, res);
    res->have_on = api->can_enable;
    int modes = res->have_on ? 2 : 1, failed = 0;
    double *us[2] = {xmalloc((size_t)cfg->reps * sizeof(double)),
                     xmalloc((size_t)cfg->reps * sizeof(double))};
    for (int rep = -1; rep < cfg->reps && !failed; rep++) {
        for (int m = 0; m < modes && !failed; m++) {
            int on = modes == 2 ? (m + rep + 1) % 2 : 0; /* off first, then flip each time */
            ompbatch_hook_stats scratch, *acc = rep < 0 ? &scratch : on ? &res->on_stats
                                                                        : &res->off_stats;
            memset(&scratch, 0, sizeof scratch);
            if (hook_api_set(api, on) != 0) {
                fprintf(stderr, "hook_bench: could not turn the hook %s\n", on ? "on" : "off");
                failed = 1;
                break;
            }
            double t = run_rep(sh, &a, api, on, acc);
            failed = t < 0;
            if (rep >= 0 && !failed)
                us[on][rep] = t;
        }
    }
    if (api->can_enable)
        hook_api_set(api, 1); /* as the program found it */
    if (!failed && res->have_on) {
        res->pairs = cfg->reps;
        res->pairs_slower = pairs_slower(us[0], us[1], cfg->reps);
    }
    if (!failed) {
        for (int m = 0; m < modes; m++) {
            res->reps_us[m] = xmalloc((size_t)cfg->reps * sizeof(double));
            memcpy(res->reps_us[m], us[m], (size_t)cfg->reps * sizeof(double));
        }
        /* median() sorts, so element 0 is then the minimum. */
        res->off_med = median(us[0], cfg->reps);
        res->off_min = us[0][0];
        if (res->have_on) {
            res->on_med = median(us[1], cfg->reps);
            res->on_min = us[1][0];
            res->verdict = never_slower_verdict(res->off_med, res->on_med, res->pairs_slower,
                                                res->pairs);
        }
    }
    if (hook_stats_batched_items(&res->off_stats) || res->off_stats.batches) {
        fprintf(stderr, "hook_bench: shape %s: the hook batched while turned off\n", sh->key);
        failed = 1;
    }
    free(us[0]);
    free(us[1]);
    arrays_destroy(&a);
    res->failed = failed;
    return failed;
}

/* ---- output ---------------------------------------------------------------------------------- */

static void print_header(void)
{
    printf("%-7s %-40s %6s %6s %10s | %10s %10s | %10s %10s | %7s | %9s %8s %8s\n", "shape",
           "what", "constr", "items", "bytes", "off min", "off med", "on min", "on med",
           "speedup", "batched", "batches", "drvcalls");
    printf("%-7s %-40s %6s %6s %10s | %10s %10s | %10s %10s | %7s | %9s %8s %8s\n", "", "",
           "/rep", "/rep", "/rep", "us", "us", "us", "us", "off/on", "items/rep", "/rep",
           "/rep");
}

static void print_row(const result *r, int reps)
{
    const ompbatch_hook_stats *s = &r->on_stats;
    printf("%-7s %-40s %6zu %6zu %10zu | ", r->sh->key, r->sh->what, r->constructs, r->items,
           r->bytes);
    if (r->failed) {
        printf("FAILED (see above)\n");
        return;
    }
    printf("%10.1f %10.1f | ", r->off_min, r->off_med);
    if (!r->have_on) {
        printf("%10s %10s | %7s |\n", "-", "-", "-");
        return;
    }
    printf("%10.1f %10.1f | %6.2fx | %9.1f %8.1f %8.1f\n", r->on_min, r->on_med,
           r->off_med / r->on_med, (double)hook_stats_batched_items(s) / reps,
           (double)s->batches / reps, (double)s->driver_batch_calls / reps);
}

/* With OMPBATCH_STATS=1 the hook times its phases: per shape, where a hook-on repetition's
 * time went, in microseconds per repetition (the phases nest inside "construct"; "other" is
 * the construct's time outside the runtime, the region launches and the batch's phases). */
static void print_phases(const result *res, int nres, int reps)
{
    int any = 0;
    for (int i = 0; i < nres; i++)
        any |= res[i].have_on && res[i].on_stats.time_construct_ns > 0;
    if (!any)
        return;
    printf("\nwhere a hook-on repetition's time went (OMPBATCH_STATS=1), us per repetition:\n");
    printf("%-15s %10s %9s %9s %8s %8s %8s %9s %8s %8s %8s %8s\n", "shape", "construct",
           "runtime", "kernel", "query", "add", "plan", "enqueue", "poll", "block", "unpack",
           "other");
    for (int i = 0; i < nres; i++) {
        const ompbatch_hook_stats *s = &res[i].on_stats;
        if (!res[i].have_on || res[i].failed)
            continue;
        double per = 1000.0 * reps;
        double inner = (double)(s->time_runtime_ns + s->time_kernel_ns + s->time_query_ns +
                                s->time_add_ns + s->time_plan_ns + s->time_enqueue_ns +
                                s->time_poll_ns + s->time_block_ns + s->time_unpack_ns);
        printf("%-15s %10.1f %9.1f %9.1f %8.1f %8.1f %8.1f %9.1f %8.1f %8.1f %8.1f %8.1f\n",
               res[i].sh->key, s->time_construct_ns / per, s->time_runtime_ns / per,
               s->time_kernel_ns / per, s->time_query_ns / per, s->time_add_ns / per,
               s->time_plan_ns / per,
               s->time_enqueue_ns / per, s->time_poll_ns / per, s->time_block_ns / per,
               s->time_unpack_ns / per, ((double)s->time_construct_ns - inner) / per);
    }
}

static void json_stats(FILE *f, const ompbatch_hook_stats *s)
{
    char paths[64];
    fprintf(f,
            "{\"constructs\": %" PRIu64 ", \"kernels\": %" PRIu64 ", \"items\": %" PRIu64
            ", \"update_batched\": %" PRIu64 ", \"enter_batched\": %" PRIu64
            ", \"exit_batched\": %" PRIu64 ", \"items_forwarded\": %" PRIu64
            ", \"batches\": %" PRIu64 ", \"bytes_batched\": %" PRIu64
            ", \"driver_batch_calls\": %" PRIu64 ", \"paths\": \"%s\", \"regions_split\": %" PRIu64
            ", \"region_batched\": %" PRIu64 ", \"regions_direct\": %" PRIu64
            ", \"registrations\": %" PRIu64 ", \"bytes_registered\": %" PRIu64
            ", \"time_ns\": {\"construct\": %" PRIu64
            ", \"runtime\": %" PRIu64 ", \"kernel\": %" PRIu64 ", \"query\": %" PRIu64
            ", \"add\": %" PRIu64
            ", \"plan\": %" PRIu64 ", \"enqueue\": %" PRIu64 ", \"poll\": %" PRIu64
            ", \"block\": %" PRIu64 ", \"unpack\": %" PRIu64 "}}",
            s->constructs, s->kernels, s->items, s->update_batched, s->enter_batched,
            s->exit_batched, s->items_forwarded, s->batches, s->bytes_batched,
            s->driver_batch_calls, hook_paths_text(s->paths, paths, sizeof paths),
            s->regions_split, s->region_batched, s->regions_direct, s->registrations,
            s->bytes_registered, s->time_construct_ns,
            s->time_runtime_ns, s->time_kernel_ns, s->time_query_ns, s->time_add_ns,
            s->time_plan_ns, s->time_enqueue_ns, s->time_poll_ns, s->time_block_ns,
            s->time_unpack_ns);
}

/* ", \"reps\": [t0, t1, ...]": a mode's repetitions in the order run (pair k is element k of
 * both), so that a median far from its minimum shows which repetitions it came from. */
static void json_reps(FILE *f, const double *us, int reps)
{
    if (us == NULL)
        return;
    fprintf(f, ", \"reps\": [");
    for (int k = 0; k < reps; k++)
        fprintf(f, "%s%.2f", k ? ", " : "", us[k]);
    fprintf(f, "]");
}

static void json_result(FILE *f, const result *r, int reps)
{
    fprintf(f,
            "    {\"shape\": \"%s\", \"what\": \"%s\", \"constructs\": %zu, \"items\": %zu, "
            "\"bytes\": %zu, \"ok\": %s,\n     \"off_us\": {\"min\": %.2f, \"median\": %.2f",
            r->sh->key, r->sh->what, r->constructs, r->items, r->bytes,
            r->failed ? "false" : "true", r->off_min, r->off_med);
    json_reps(f, r->reps_us[0], reps);
    fprintf(f, "}, ");
    if (!r->have_on) {
        fprintf(f, "\"on_us\": null, \"speedup\": null, \"hook_stats_on\": null}");
        return;
    }
    static const char *verdicts[] = {"same", "inconclusive", "slower"};
    fprintf(f, "\"on_us\": {\"min\": %.2f, \"median\": %.2f", r->on_min, r->on_med);
    json_reps(f, r->reps_us[1], reps);
    fprintf(f,
            "}, \"speedup\": %.3f,\n"
            "     \"pairs\": %d, \"pairs_over_3pct_slower\": %d, \"verdict\": \"%s\",\n",
            r->off_med / r->on_med, r->pairs, r->pairs_slower, verdicts[r->verdict]);
    fprintf(f, "     \"hook_stats_on\": ");
    json_stats(f, &r->on_stats);
    fprintf(f, "}");
}

/* The hook must never cost time: never_slower.h says when a shape counts as slower. */
static int has_verdict(const result *r, verdict v)
{
    return r->have_on && !r->failed && r->verdict == v;
}

static void print_verdict_list(const result *res, int nres, verdict v)
{
    for (int i = 0; i < nres; i++)
        if (has_verdict(&res[i], v))
            printf(" %s (%.2fx, %d of %d)", res[i].sh->key, res[i].off_med / res[i].on_med,
                   res[i].pairs_slower, res[i].pairs);
}

static void print_never_slower(const result *res, int nres, int reps)
{
    int compared = 0, slower = 0, inconclusive = 0;
    for (int i = 0; i < nres; i++) {
        compared += res[i].have_on && !res[i].failed;
        slower += has_verdict(&res[i], VERDICT_SLOWER);
        inconclusive += has_verdict(&res[i], VERDICT_INCONCLUSIVE);
    }
    if (compared == 0)
        return;
    printf("\nnever slower: %d shape(s) compared, %d more than 3%% slower with the hook%s", compared,
           slower, slower ? ":" : "");
    print_verdict_list(res, nres, VERDICT_SLOWER);
    printf("\n");
    if (inconclusive > 0) {
        printf("inconclusive: %d shape(s) with the hook-on median more than 3%% above, but the "
               "hook over 3%% slower in too few of the paired repetitions:",
               inconclusive);
        print_verdict_list(res, nres, VERDICT_INCONCLUSIVE);
        printf("\n");
    }
    if (reps < never_slower_min_reps())
        printf("(under %d repetitions no shape can be called slower: too few pairs)\n",
               never_slower_min_reps());
    printf("(slower: the hook-on median more than 3%% above and the hook over 3%% slower in so "
           "many paired repetitions that chance gives as many under 5%% of the time; the counts "
           "are of such pairs)\n");
}

/* Writes the results; returns 0 or 1 if the file cannot be written. */
static int write_json(const char *path, const config *cfg, const hook_api *api,
                      const result *res, int nres, int failed)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "{\n  \"program\": \"hook_bench\",\n  \"hook_linked\": %s,\n"
               "  \"hook_compared\": %s,\n  \"reps\": %d,\n  \"warmup\": 1,\n"
               "  \"quick\": %s,\n  \"big_bytes\": %zu,\n  \"num_devices\": %d,\n"
               "  \"default_device\": %d,\n  \"contention\": %s,\n  \"hook_stats\": \"summed "
               "over the timed hook-on repetitions\",\n  \"ok\": %s,\n  \"slower_than_3pct\": [",
            api->linked ? "true" : "false", api->can_enable ? "true" : "false", cfg->reps,
            cfg->quick ? "true" : "false", cfg->big_bytes, omp_get_num_devices(),
            omp_get_default_device(), cfg->contention ? "true" : "false",
            failed ? "false" : "true");
    for (int k = 0, n = 0; k < nres; k++)
        if (has_verdict(&res[k], VERDICT_SLOWER))
            fprintf(f, "%s\"%s\"", n++ ? ", " : "", res[k].sh->key);
    fprintf(f, "],\n  \"inconclusive\": [");
    for (int k = 0, n = 0; k < nres; k++)
        if (has_verdict(&res[k], VERDICT_INCONCLUSIVE))
            fprintf(f, "%s\"%s\"", n++ ? ", " : "", res[k].sh->key);
    fprintf(f, "],\n  \"results\": [\n");
    for (int k = 0; k < nres; k++) {
        json_result(f, &res[k], cfg->reps);
        fprintf(f, "%s\n", k + 1 < nres ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return fclose(f) == 0 ? 0 : 1;
}

/* ---- driver ---------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: hook_bench [--reps N] [--quick] [--only KEYS] [--contention] [--json FILE]\n"
            "  --reps N     timed repetitions per shape and hook mode (default 10; --quick: 2),\n"
            "               after one warm-up of each\n"
            "  --quick      CI smoke: 2 repetitions, 4 MiB instead of 64 MiB for shapes f and g\n"
            "  --only KEYS  run only the shapes whose key starts with one of the comma-separated\n"
            "               KEYS (e.g. a,b,h)\n"
            "  --contention while it offloads, the program's other OpenMP threads keep every\n"
            "               other core of the host busy\n"
            "  --json FILE  also write the results as JSON\n");
}

/* Returns 0, 1 for a bad option, or -1 for --help. */
static int parse_options(int argc, char **argv, config *cfg)
{
    *cfg = (config){.reps = 10, .big_bytes = (size_t)64 << 20};
    int reps_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            cfg->quick = 1;
        } else if (strcmp(a, "--contention") == 0) {
            cfg->contention = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return -1;
        } else if (v && strcmp(a, "--reps") == 0) {
            cfg->reps = atoi(v), reps_given = 1, i++;
        } else if (v && strcmp(a, "--only") == 0) {
            cfg->only = v, i++;
        } else if (v && strcmp(a, "--json") == 0) {
            cfg->json = v, i++;
        } else {
            fprintf(stderr, "hook_bench: unknown or incomplete option '%s'\n", a);
            return 1;
        }
    }
    if (cfg->quick) {
        cfg->big_bytes = (size_t)4 << 20;
        if (!reps_given)
            cfg->reps = 2;
    }
    if (cfg->reps < 1) {
        fprintf(stderr, "hook_bench: need --reps >= 1\n");
        return 1;
    }
    return 0;
}

/* Whether shape key is selected by --only (a comma-separated list of key prefixes). */
static int selected(const char *key, const char *only)
{
    if (!only)
        return 1;
    for (const char *s = only; *s;) {
        size_t len = strcspn(s, ",");
        if (len && strncmp(key, s, len) == 0)
            return 1;
        s += len + (s[len] == ',');
    }
    return 0;
}

/* Fails when target regions do not run on a device: the transfers would then be no-ops and the
 * `from` checks would fail for a reason that has nothing to do with the hook. */
static int check_device(void)
{
    int on_host = 1;
#pragma omp target map(from: on_host)
    on_host = omp_is_initial_device();
    printf("offload: %d device(s), default %d; target regions run %s\n", omp_get_num_devices(),
           omp_get_default_device(), on_host ? "on the host" : "on the device");
    if (on_host)
        fprintf(stderr, "hook_bench: no offload device (target regions run on the host); "
                        "nothing to measure\n");
    return on_host;
}

/* Runs the shapes --only selects, printing a row each; returns 1 if any failed. */
static int run_selected(const config *cfg, const hook_api *api, result *res, int *nres)
{
    int failed = 0;
    for (size_t k = 0; k < NSHAPES; k++) {
        if (!selected(SHAPES[k].key, cfg->only))
            continue;
        failed |= run_shape(&SHAPES[k], cfg, api, &res[*nres]);
        print_row(&res[*nres], cfg->reps);
        fflush(stdout);
        (*nres)++;
    }
    return failed;
}

static int contention_done;

/* Arithmetic until the offloading thread is done: a busy core, as an OpenMP program's own
 * threads keep it. */
static void keep_busy(void)
{
    volatile double x = 1.0;
    for (;;) {
        int done;
#pragma omp atomic read
        done = contention_done;
        if (done)
            break;
        for (int i = 0; i < 4096; i++)
            x = x * 1.0000001 + 1e-9;
    }
}

int main(int argc, char **argv)
{
    config cfg;
    int rc = parse_options(argc, argv, &cfg);
    if (rc != 0) {
        usage(rc < 0 ? stdout : stderr);
        return rc < 0 ? 0 : 2;
    }
    hook_api api = hook_api_lookup();
    hook_api_probe(&api, stdout);
    if (check_device())
        return 1;
    printf("%d timed repetitions per shape and mode after 1 warm-up; times in microseconds "
           "(omp_get_wtime); hook columns per repetition%s\n\n",
           cfg.reps, cfg.quick ? "; --quick: big item 4 MiB" : "");
    print_header();

    result res[NSHAPES];
    int nres = 0, failed = 0;
    if (cfg.contention) {
        /* The offload runs on thread 0 of a parallel region whose other threads spin: the
         * hook's pack threads then compete with the program's for the cores. */
        int threads = omp_get_num_procs();
        printf("contention: %d other OpenMP thread(s) of the program busy while it offloads\n\n",
               threads - 1);
#pragma omp parallel num_threads(threads) shared(failed, nres, res)
        {
            if (omp_get_thread_num() == 0) {
                failed = run_selected(&cfg, &api, res, &nres);
#pragma omp atomic write
                contention_done = 1;
            } else {
                keep_busy();
            }
        }
    } else {
        failed = run_selected(&cfg, &api, res, &nres);
    }
    print_phases(res, nres, cfg.reps);
    print_never_slower(res, nres, cfg.reps);
    if (api.linked) {
        ompbatch_hook_stats total = hook_api_stats(&api);
        printf("\nhook statistics for the whole process:\n");
        hook_stats_print(stdout, "  ", &total);
    }
    if (cfg.json && write_json(cfg.json, &cfg, &api, res, nres, failed))
        failed = 1;
    for (int k = 0; k < nres; k++) {
        free(res[k].reps_us[0]);
        free(res[k].reps_us[1]);
    }
    printf("\nhook_bench: %s\n", failed ? "FAILED" : "all data checked byte for byte");
    return failed ? 1 : 0;
}
