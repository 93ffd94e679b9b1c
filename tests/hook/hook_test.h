/*
 * Shared helpers of the OpenMP hook tests (tests/hook/<program>.c). Each test is a plain OpenMP
 * program: it never calls ompbatch, so the very same source runs with and without the hook, and
 * compare.sh can demand identical output from both.
 *
 * Conventions, and why:
 *   - Data is random, from the seed given as argv[1] (else OMPBATCH_TEST_SEED, else the clock),
 *     so a copy that is skipped, misplaced or too long shows up; zero-filled data would hide it.
 *   - Before every copy its destination is poisoned with bytes that differ from what the copy
 *     must bring (ht_fill_unlike), so a missing copy cannot go unnoticed by chance.
 *   - Device contents are checked inside target regions (ht_expect_device), never by copying
 *     them back, which would itself be one of the transfers under test.
 *   - stdout carries only a deterministic report (checksums, values, the final count); failure
 *     details go to stderr. The same seed must give the same stdout with and without the hook.
 *
 * Checks are the C tests' one check (OB_CHECK, OB_CHECK_EQ, ob_check_finish:
 * tests/support/check.h) and random numbers come from the tests' one generator
 * (tests/support/test_rng.h). Every function is static inline, so each program uses what it
 * needs without unused-function warnings under -Werror.
 */
#ifndef OMPBATCH_TESTS_OMP_HOOK_HOOK_TEST_H
#define OMPBATCH_TESTS_OMP_HOOK_HOOK_TEST_H

#include <inttypes.h>
#include <omp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Relative: the programs are compiled by clang outside Bazel's include paths. */
#include "../support/check.h"
#include "../support/test_rng.h"

/* ---- seed and random bytes ------------------------------------------------------------------ */

static uint64_t ht_seed;

/* Reads the seed (argv[1], else OMPBATCH_TEST_SEED, else the clock) and prints it, so a failing
 * run can be replayed. */
static inline void ht_init(int argc, char **argv, const char *program)
{
    if (!ob_test_seed_parse(argc > 1 ? argv[1] : getenv("OMPBATCH_TEST_SEED"), &ht_seed))
        ht_seed = (uint64_t)time(NULL);
    /* Line-buffered: a run that libomptarget aborts keeps the report printed so far. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("%s: seed %" PRIu64 "\n", program, ht_seed);
}

/* A random value in [0, bound) from a caller-held state (ht_state); bound 0 gives 0. */
static inline size_t ht_below(uint64_t *state, size_t bound)
{
    ob_test_rng rng = {*state};
    size_t value = (size_t)ob_test_rng_below(&rng, bound);
    *state = rng.state;
    return value;
}

/* A random value in [lo, hi]. */
static inline size_t ht_between(uint64_t *state, size_t lo, size_t hi)
{
    return lo + ht_below(state, hi - lo + 1);
}

/* A random state for one purpose (salt) of this run. */
static inline uint64_t ht_state(uint64_t salt)
{
    return ob_test_rng_make(ht_seed, salt).state;
}

/* n random bytes, different for every salt and every seed. */
static inline void ht_fill_random(void *p, size_t n, uint64_t salt)
{
    ob_test_rng rng = ob_test_rng_make(ht_seed, salt);
    ob_test_rng_fill(&rng, p, n);
}

/* p[j] = unlike[j] ^ (random non-zero byte): random data that differs from unlike in every
 * byte (p == unlike changes every byte in place). Used to poison a copy's destination and to
 * make new source data that the destination does not already hold. Callers give each call on
 * the same bytes its own salt: one salt twice in place would give the old bytes back. */
static inline void ht_fill_unlike(void *p, const void *unlike, size_t n, uint64_t salt)
{
    unsigned char *b = p;
    const unsigned char *u = unlike;
    uint64_t s = ht_state(salt ^ 0x5bd1e995ULL);
    for (size_t j = 0; j < n; j++)
        b[j] = u[j] ^ (unsigned char)(1 + ht_below(&s, 255));
}

/* ---- what kernels write --------------------------------------------------------------------- */

#pragma omp declare target
/* The non-zero key a scramble XORs into byte j for tag: every scrambled byte changes. Computed
 * alike on the device (kernels) and on the host (expected values). */
static inline unsigned char ht_key(uint64_t seed, uint64_t tag, size_t j)
{
    uint64_t x = seed ^ (tag * 0xd6e8feb86659fd93ULL) ^ ((uint64_t)j * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return (unsigned char)(1 + x % 255);
}

/* A value a kernel computes from an element and a tag, exact in integers (a GPU gives the same
 * bits) and different for every input and tag: the host predicts what kernels write. */
static inline uint32_t ht_mix32(uint32_t x, uint32_t tag)
{
    x ^= tag * 0x9e3779b9u;
    x *= 0x85ebca6bu;
    return x ^ (x >> 13);
}
#pragma omp end declare target

/* What ht_device_scramble does to the device copy, done to the host's expected copy. */
static inline void ht_host_scramble(void *want, size_t n, uint64_t tag)
{
    unsigned char *b = want;
    for (size_t j = 0; j < n; j++)
        b[j] ^= ht_key(ht_seed, tag, j);
}

/* ---- memory --------------------------------------------------------------------------------- */

static inline void *ht_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* A new buffer holding a copy of src. */
static inline void *ht_dup(const void *src, size_t n)
{
    void *p = ht_malloc(n);
    memcpy(p, src, n);
    return p;
}

/* ---- host and device checks ----------------------------------------------------------------- */

/* 64-bit FNV-1a, for the deterministic report. */
static inline uint64_t ht_fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t j = 0; j < n; j++) {
        h ^= b[j];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Prints what's checksum to the report (stdout). */
static inline void ht_report(const char *what, const void *p, size_t n)
{
    printf("  %-40s %8zu bytes  fnv %016" PRIx64 "\n", what, n, ht_fnv(p, n));
}

/* Host bytes got[0:n] must equal want[0:n]; the first difference goes to stderr. */
static inline void ht_expect_host_at(const void *got, const void *want, size_t n,
                                     const char *what, const char *file, int line)
{
    const unsigned char *g = got, *w = want;
    size_t count = 0, first = 0;
    for (size_t j = 0; j < n; j++) {
        if (g[j] != w[j]) {
            if (count == 0)
                first = j;
            count++;
        }
    }
    if (count == 0) {
        ob_check_pass();
        return;
    }
    ob_check_fail_at(file, line, "%s on the host: %zu of %zu bytes differ, first at %zu: %#04x, "
                                 "want %#04x",
                     what, count, n, first, g[first], w[first]);
}
#define ht_expect_host(got, want, n, what)                                                      \
    ht_expect_host_at((got), (want), (n), (what), __FILE__, __LINE__)

/* Whether host range p[0:n] is mapped on the default device (first and last byte; the tests
 * map whole entries, so this is the check they need). */
static inline int ht_is_mapped(const void *p, size_t n)
{
    const unsigned char *b = p;
    int dev = omp_get_default_device();
    return n > 0 && omp_target_is_present(b, dev) && omp_target_is_present(b + n - 1, dev);
}

/* Whether no byte of p[0:n] at the ends or in the middle is mapped: after an exit, the entry
 * must be gone. */
static inline int ht_is_unmapped(const void *p, size_t n)
{
    const unsigned char *b = p;
    int dev = omp_get_default_device();
    return n == 0 || (!omp_target_is_present(b, dev) && !omp_target_is_present(b + n / 2, dev) &&
                      !omp_target_is_present(b + n - 1, dev));
}

/* The device copy of host range p[0:n] must equal want[0:n]; compared inside a target region
 * by a team of threads (one GPU thread takes about half a second per 8 MiB; not teams, which
 * the host fallback refuses inside a parallel region), the first differing device byte read by
 * a second region. The kernel uses map(alloc:), which must find p[0:n] mapped already (else it
 * would make a new, uninitialised mapping), hence the presence check first. */
static inline void ht_expect_device_at(const void *p, const void *want, size_t n,
                                       const char *what, const char *file, int line)
{
    const unsigned char *b = p, *w = want;
    size_t count = 0, first = n;
    unsigned char got_first = 0;
    if (!ht_is_mapped(p, n)) {
        ob_check_fail_at(file, line, "%s: %zu bytes are not mapped on the device", what, n);
        return;
    }
#pragma omp target parallel for map(alloc : b[0:n]) map(to : w[0:n])                          \
    reduction(+ : count) reduction(min : first)
    for (size_t j = 0; j < n; j++) {
        if (b[j] != w[j]) {
            count++;
            if (j < first)
                first = j;
        }
    }
    if (count == 0) {
        ob_check_pass();
        return;
    }
#pragma omp target map(alloc : b[0:n]) map(from : got_first) firstprivate(first)
    got_first = b[first];
    ob_check_fail_at(file, line, "%s on the device: %zu of %zu bytes differ, first at %zu: "
                                 "%#04x, want %#04x",
                     what, count, n, first, got_first, w[first]);
}
#define ht_expect_device(p, want, n, what)                                                      \
    ht_expect_device_at((p), (want), (n), (what), __FILE__, __LINE__)

/* XORs ht_key(seed, tag, j) into every byte of the device copy of p[0:n] (a kernel that
 * changes every byte, so the next copy back is visible). */
static inline void ht_device_scramble(void *p, size_t n, uint64_t tag)
{
    unsigned char *b = p;
    uint64_t s = ht_seed;
    if (!ht_is_mapped(p, n)) {
        ob_check_fail_at(__FILE__, __LINE__, "scramble of %zu bytes that are not mapped", n);
        return;
    }
#pragma omp target parallel for map(alloc : b[0:n]) firstprivate(s, tag, n)
    for (size_t j = 0; j < n; j++)
        b[j] ^= ht_key(s, tag, j);
}

/* ---- one mapped buffer and what both sides must hold ---------------------------------------- */

/* A host buffer under test with the expected contents of the host array (host) and of the
 * device copy of its mapped part (dev, indexed like the host array; meaningful only where
 * mapped). */
typedef struct ht_buf {
    unsigned char *p;    /* the host array the program maps */
    unsigned char *host; /* what p[0:n] must hold */
    unsigned char *dev;  /* what the device copy of p[i] must hold, where mapped */
    size_t n;
} ht_buf;

/* A buffer of n random bytes; host and device expectations both start as the host data. */
static inline ht_buf ht_buf_new(size_t n, uint64_t salt)
{
    ht_buf b;
    b.n = n;
    b.p = ht_malloc(n);
    ht_fill_random(b.p, n, salt);
    b.host = ht_dup(b.p, n);
    b.dev = ht_dup(b.p, n);
    return b;
}

static inline void ht_buf_free(ht_buf *b)
{
    free(b->p);
    free(b->host);
    free(b->dev);
    memset(b, 0, sizeof(*b));
}

/* The host range [off, off+len) gets new data unlike what the device holds there (so a
 * following `to` copy is visible), and the rest of the host array new data too (so a copy
 * wider than asked shows up on the device). */
static inline void ht_buf_host_new(ht_buf *b, size_t off, size_t len, uint64_t salt)
{
    ht_fill_unlike(b->p, b->p, b->n, salt);
    /* A salt no call site uses: the same salt twice in a row on the same bytes would XOR the
     * same random stream twice and give the old bytes back. */
    ht_fill_unlike(b->p + off, b->dev + off, len, salt ^ (1ULL << 40));
    memcpy(b->host, b->p, b->n);
}

/* Poisons the whole host array (so a `from` copy, or its absence, is visible). */
static inline void ht_buf_poison(ht_buf *b, uint64_t salt)
{
    ht_fill_unlike(b->p, b->p, b->n, salt);
    memcpy(b->host, b->p, b->n);
}

/* Scrambles the device copy of [off, off+len) and records it. */
static inline void ht_buf_scramble(ht_buf *b, size_t off, size_t len, uint64_t tag)
{
    ht_device_scramble(b->p + off, len, tag);
    ht_host_scramble(b->dev + off, len, tag);
}

/* After a copy device->host of [off, off+len): the host must now hold the device bytes
 * there. */
static inline void ht_buf_copied_from(ht_buf *b, size_t off, size_t len)
{
    memcpy(b->host + off, b->dev + off, len);
}

/* After a copy host->device of [off, off+len). */
static inline void ht_buf_copied_to(ht_buf *b, size_t off, size_t len)
{
    memcpy(b->dev + off, b->host + off, len);
}

/* Checks the whole host array, and the device copy of [off, off+len) (the mapped part). */
#define ht_buf_expect(b, off, len, what)                                                        \
    do {                                                                                        \
        ht_expect_host((b)->p, (b)->host, (b)->n, (what));                                      \
        ht_expect_device((b)->p + (off), (b)->dev + (off), (len), (what));                      \
    } while (0)

/* Checks the whole host array only (nothing mapped any more). */
#define ht_buf_expect_host(b, what)                                                             \
    do {                                                                                        \
        ht_expect_host((b)->p, (b)->host, (b)->n, (what));                                      \
        OB_CHECK(ht_is_unmapped((b)->p, (b)->n), "%s: still mapped on the device", (what));        \
    } while (0)

#endif /* OMPBATCH_TESTS_OMP_HOOK_HOOK_TEST_H */
