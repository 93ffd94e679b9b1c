/*
 * ompbatch_batch_add_mapped through the real LLVM 16 OpenMP offload runtime (libomptarget), on
 * its host-offload target (-fopenmp-targets=x86_64-pc-linux-gnu): "device" memory is separate
 * host memory owned by libomptarget, so the library looks up omp_get_mapped_ptr,
 * omp_get_initial_device and omp_get_num_devices with dlsym(RTLD_DEFAULT) in a process where
 * they are libomptarget's/libomp's own, and does the copies on its host backend (memcpy).
 *
 * Device contents are checked inside target regions (byte for byte against expected values,
 * mismatch count and first bad index returned with map(from:)), never by `target update from`,
 * which would overwrite the host array under test. Host contents are checked byte for byte,
 * including the poisoned bytes outside the transferred ranges.
 *
 * Run with OMP_TARGET_OFFLOAD=MANDATORY (a silent host fallback would make "device" memory the
 * host array itself) and without a CUDA driver (OMPBATCH_CUDA_LIBRARY pointing nowhere), so
 * OpenMP device 0 is the host-offload device for the library too. The seed is printed;
 * OMPBATCH_TEST_SEED=<n> replays a run. Ends with "omp mapped test: N checks passed, M failed" and exits
 * non-zero on any failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ompbatch.h"
/* Relative: clang compiles the program outside Bazel's include paths. */
#include "../support/check.h"
#include "../support/test_rng.h"

/* ---- checks: the C tests' one check (tests/support/check.h) -------------------------------- */

/* A call that must succeed; on failure prints the library's message. */
#define CHECK_OK(call)                                                                          \
    do {                                                                                        \
        int rc_ = (call);                                                                       \
        OB_CHECK(rc_ == OMPBATCH_OK, "%s -> %s: %s", #call, ompbatch_err_name(rc_),                \
              ompbatch_last_error());                                                           \
    } while (0)

/* A call that must fail with status want; returns 1 if it did. */
static int expect_status(int got, int want, const char *what, int line)
{
    OB_CHECK(got == want, "line %d: %s -> %s, want %s (last error: %s)", line, what,
             ompbatch_err_name(got), ompbatch_err_name(want), ompbatch_last_error());
    return got == want;
}
#define EXPECT_STATUS(call, want) expect_status((call), (want), #call, __LINE__)

/* ---- seeded random bytes -------------------------------------------------------------------- */

static uint64_t seed;

/* n bytes that differ for every salt and every seed. */
static void fill_random(unsigned char *p, size_t n, uint64_t salt)
{
    ob_test_rng rng = ob_test_rng_make(seed, salt);
    ob_test_rng_fill(&rng, p, n);
}

/* A random value in [0, bound) from a caller-held state. */
static size_t random_below(uint64_t *state, size_t bound)
{
    ob_test_rng rng = {*state};
    size_t value = (size_t)ob_test_rng_below(&rng, bound);
    *state = rng.state;
    return value;
}

/* The byte a target region writes at index j of array k for tag t; also computed on the host
 * for the expected values. */
#pragma omp declare target
static unsigned char device_byte(uint64_t s, uint64_t t, size_t j)
{
    uint64_t x = s ^ (t * 0xd6e8feb86659fd93ULL) ^ ((uint64_t)j * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return (unsigned char)x;
}
#pragma omp end declare target

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* ---- device-side helpers (target regions) --------------------------------------------------- */

/* The helpers map arr with map(alloc:), which reuses a present mapping and copies nothing; on
 * a range that is not mapped it would make a new, uninitialised one, so they insist. (The
 * `present` modifier needs -fopenmp-version=51; this is the same check, kept at the default.) */
static void require_present(const unsigned char *arr, size_t n, int dev)
{
    if (n == 0 || !omp_target_is_present(arr, dev) || !omp_target_is_present(arr + n - 1, dev)) {
        fprintf(stderr, "test bug: %p (%zu bytes) is not mapped on device %d\n",
                (const void *)arr, n, dev);
        exit(2);
    }
}

/* Writes device_byte(seed, tag, j) to every byte of the device copy of arr[0:n]. */
static void device_write(unsigned char *arr, size_t n, int dev, uint64_t tag)
{
    uint64_t s = seed;
    require_present(arr, n, dev);
#pragma omp target device(dev) map(alloc : arr[0:n]) firstprivate(s, tag, n)
    for (size_t j = 0; j < n; j++)
        arr[j] = device_byte(s, tag, j);
}

/* Compares the device copy of arr[0:n] with want[0:n] inside a target region; returns the
 * number of differing bytes and reports the first. */
static size_t device_mismatches(unsigned char *arr, const unsigned char *want, size_t n, int dev,
                                const char *name)
{
    size_t count = 0, first = 0;
    unsigned got_first = 0, want_first = 0;
    require_present(arr, n, dev);
#pragma omp target device(dev) map(alloc : arr[0:n]) map(to : want[0:n])              \
    map(tofrom : count, first, got_first, want_first) firstprivate(n)
    for (size_t j = 0; j < n; j++) {
        if (arr[j] != want[j]) {
            if (count == 0) {
                first = j;
                got_first = arr[j];
                want_first = want[j];
            }
            count++;
        }
    }
    if (count != 0 && name != NULL)
        fprintf(stderr, "  %s on device %d: %zu of %zu bytes differ, first at %zu: %#04x, want "
                        "%#04x\n",
                name, dev, count, n, first, got_first, want_first);
    return count;
}

/* Host-side byte-exact compare; reports the first difference. */
static size_t host_mismatches(const unsigned char *got, const unsigned char *want, size_t n,
                              const char *name)
{
    size_t count = 0, first = 0;
    for (size_t j = 0; j < n; j++) {
        if (got[j] != want[j]) {
            if (count == 0)
                first = j;
            count++;
        }
    }
    if (count != 0)
        fprintf(stderr, "  %s on the host: %zu of %zu bytes differ, first at %zu: %#04x, want "
                        "%#04x\n",
                name, count, n, first, got[first], want[first]);
    return count;
}

static ompbatch_stats stats_of(const ompbatch_batch *b)
{
    ompbatch_stats s;
    memset(&s, 0, sizeof(s));
    s.struct_size = sizeof(s);
    int rc = ompbatch_batch_get_stats(b, &s);
    OB_CHECK(rc == OMPBATCH_OK, "ompbatch_batch_get_stats -> %s", ompbatch_err_name(rc));
    return s;
}

/* ---- the arrays ----------------------------------------------------------------------------- */

enum { NARRAYS = 6 };

/* Sizes cover one byte, odd sizes, a page and more than a page; arrays 0-2 are mapped with
 * map(to:), 3-5 with map(alloc:). Each allocation has SLACK unmapped bytes after the mapped
 * part, so "one byte past the mapping" is memory of the test's own, never another mapping. */
static const size_t sizes[NARRAYS] = {1, 61, 4096, 70001, 4099, 1 << 20};
enum { SLACK = 256 };

static unsigned char *host[NARRAYS];      /* the mapped host arrays */
static unsigned char *dev_want[NARRAYS];  /* what each device copy must hold */
static unsigned char *host_want[NARRAYS]; /* what each host array must hold */

static void map_arrays(void)
{
    for (int i = 0; i < NARRAYS; i++) {
        size_t n = sizes[i];
        host[i] = xmalloc(n + SLACK);
        dev_want[i] = xmalloc(n);
        host_want[i] = xmalloc(n);
        fill_random(host[i], n + SLACK, 100 + (uint64_t)i);
        unsigned char *a = host[i];
        if (i < 3) {
#pragma omp target enter data map(to : a[0:n])
            memcpy(dev_want[i], a, n);
        } else {
#pragma omp target enter data map(alloc : a[0:n])
            /* Give the uninitialised device copy known contents. */
            device_write(a, n, 0, 200 + (uint64_t)i);
            for (size_t j = 0; j < n; j++)
                dev_want[i][j] = device_byte(seed, 200 + (uint64_t)i, j);
        }
        memcpy(host_want[i], a, n);
    }
}

static void unmap_arrays(void)
{
    for (int i = 0; i < NARRAYS; i++) {
        unsigned char *a = host[i];
        size_t n = sizes[i];
#pragma omp target exit data map(delete : a[0:n])
    }
}

static void check_all(const char *when)
{
    for (int i = 0; i < NARRAYS; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s: array %d (%zu bytes)", when, i, sizes[i]);
        OB_CHECK(device_mismatches(host[i], dev_want[i], sizes[i], 0, name) == 0,
              "%s: device copy differs", name);
        OB_CHECK(host_mismatches(host[i], host_want[i], sizes[i], name) == 0,
              "%s: host array differs", name);
    }
}

/* ---- the runtime ---------------------------------------------------------------------------- */

static void test_runtime(void)
{
    int num = omp_get_num_devices();
    int initial = omp_get_initial_device();
    printf("libomptarget: omp_get_num_devices() = %d, omp_get_initial_device() = %d\n", num,
           initial);
    OB_CHECK(num >= 1, "omp_get_num_devices() = %d: no offload device (host-offload plugin "
                    "missing?)",
          num);

    /* The functions the library finds with dlsym(RTLD_DEFAULT) are the real runtime's. */
    const char *names[] = {"omp_get_mapped_ptr", "omp_get_initial_device", "omp_get_num_devices"};
    const char *libs[] = {"libomptarget.so", "libomp", "libomp"};
    for (int k = 0; k < 3; k++) {
        void *sym = dlsym(RTLD_DEFAULT, names[k]);
        Dl_info info;
        memset(&info, 0, sizeof(info));
        int found = sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL;
        printf("dlsym(RTLD_DEFAULT, \"%s\") = %p in %s\n", names[k], sym,
               found ? info.dli_fname : "(nothing)");
        OB_CHECK(found && strstr(info.dli_fname, libs[k]) != NULL,
              "%s is not from %s (found in %s)", names[k], libs[k],
              found ? info.dli_fname : "nothing");
    }

    ompbatch_driver_info di;
    memset(&di, 0, sizeof(di));
    di.struct_size = sizeof(di);
    CHECK_OK(ompbatch_get_driver_info(&di));
    printf("ompbatch driver: %s (%s)\n", di.driver_loaded ? "loaded" : "none",
           di.driver_loaded ? di.library : di.reason);
    OB_CHECK(!di.driver_loaded || di.device_count == 0,
          "a CUDA driver with %d device(s) was loaded from %s: OpenMP device 0 would be a CUDA "
          "device to the library; run with OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1",
          di.device_count, di.library);

    /* Host offload really offloads: a target region is not on the initial device. */
    int on_host = -1;
#pragma omp target device(0) map(from : on_host)
    on_host = omp_is_initial_device();
    OB_CHECK(on_host == 0, "target region on device 0 ran on the initial device "
                        "(omp_is_initial_device() = %d): offload fell back to the host",
          on_host);
}

/* ---- (a) host to device --------------------------------------------------------------------- */

static void test_to(void)
{
    printf("(a) OMPBATCH_MAP_TO: whole arrays and sub-ranges\n");
    for (int i = 0; i < NARRAYS; i++)
        fill_random(host[i], sizes[i], 300 + (uint64_t)i);
    /* The verifier can fail: the device copy does not yet hold the new host data. (The
     * expected bytes must come from unmapped memory: map(to:) of a present range copies
     * nothing.) */
    memcpy(host_want[5], host[5], sizes[5]);
    OB_CHECK(device_mismatches(host[5], host_want[5], sizes[5], 0, NULL) > 0,
          "the device copy of array 5 already equals the new host data: the verifier cannot "
          "fail");

    for (int i = 0; i < NARRAYS; i++)
        memcpy(host_want[i], host[i], sizes[i]);

    ompbatch_batch *b = NULL;
    CHECK_OK(ompbatch_batch_create(&b, 0, NULL, NULL));
    if (b == NULL)
        return;
    size_t added = 0;
#define ADD_TO(i, off, len, extra)                                                              \
    do {                                                                                        \
        CHECK_OK(ompbatch_batch_add_mapped(b, host[i] + (off), (len), OMPBATCH_MAP_TO | (extra))); \
        memcpy(dev_want[i] + (off), host[i] + (off), (len));                                    \
        added++;                                                                                \
    } while (0)
    /* Whole arrays. */
    ADD_TO(0, 0, sizes[0], 0);
    ADD_TO(3, 0, sizes[3], 0);
    ADD_TO(5, 0, sizes[5], OMPBATCH_MAP_ALWAYS);
    /* Sub-ranges: first byte, last byte, the middle, contiguous neighbours (merged), random. */
    ADD_TO(1, 0, 1, 0);
    ADD_TO(1, sizes[1] - 1, 1, 0);
    ADD_TO(1, 17, 20, 0);
    ADD_TO(2, 0, 1000, 0);
    ADD_TO(2, 1000, 1000, 0);
    ADD_TO(2, 2000, 96, 0);
    ADD_TO(4, sizes[4] - 3, 3, 0);
    uint64_t rs = seed ^ 0xa5a5;
    for (int k = 0; k < 16; k++) {
        size_t off = random_below(&rs, sizes[4]);
        size_t len = 1 + random_below(&rs, sizes[4] - off);
        ADD_TO(4, off, len, 0);
    }
#undef ADD_TO
    /* A zero-byte transfer is accepted and skipped. */
    CHECK_OK(ompbatch_batch_add_mapped(b, host[0], 0, OMPBATCH_MAP_TO));
    added++;

    CHECK_OK(ompbatch_batch_submit(b));
    CHECK_OK(ompbatch_batch_wait(b));

    /* Statistics of a host-offload batch: the host path, no driver call. */
    ompbatch_stats s = stats_of(b);
    OB_CHECK(s.copies_added == added, "copies_added = %" PRIu64 ", want %zu", s.copies_added,
          added);
    OB_CHECK(s.copies_zero == 1, "copies_zero = %" PRIu64 ", want 1", s.copies_zero);
    OB_CHECK(s.copies_planned >= 1 && s.copies_planned < added - 1,
          "copies_planned = %" PRIu64 " of %zu non-empty: contiguous neighbours not merged",
          s.copies_planned, added - 1);
    OB_CHECK(s.copies_done == s.copies_planned, "copies_done = %" PRIu64 ", planned %" PRIu64,
          s.copies_done, s.copies_planned);
    OB_CHECK(s.paths == OMPBATCH_PATH_HOST, "paths = %#x, want OMPBATCH_PATH_HOST (%#x)", s.paths,
          (unsigned)OMPBATCH_PATH_HOST);
    OB_CHECK(s.driver_calls == 0, "driver_calls = %" PRIu64 " without a driver", s.driver_calls);
    printf("    %" PRIu64 " copies added (%" PRIu64 " zero-byte), %" PRIu64 " planned, %" PRIu64
           " bytes, paths %#x\n",
           s.copies_added, s.copies_zero, s.copies_planned, s.bytes, s.paths);
    CHECK_OK(ompbatch_batch_destroy(b));

    check_all("(a) after MAP_TO");
}

/* ---- (b) device to host --------------------------------------------------------------------- */

static void test_from(void)
{
    printf("(b) OMPBATCH_MAP_FROM: device-written values into poisoned host arrays\n");
    for (int i = 0; i < NARRAYS; i++) {
        device_write(host[i], sizes[i], 0, 400 + (uint64_t)i);
        for (size_t j = 0; j < sizes[i]; j++)
            dev_want[i][j] = device_byte(seed, 400 + (uint64_t)i, j);
        memset(host[i], 0xa5, sizes[i]);
        memset(host_want[i], 0xa5, sizes[i]);
    }
    ompbatch_batch *b = NULL;
    CHECK_OK(ompbatch_batch_create(&b, 0, NULL, NULL));
    if (b == NULL)
        return;
    size_t added = 0;
#define ADD_FROM(i, off, len)                                                                   \
    do {                                                                                        \
        CHECK_OK(ompbatch_batch_add_mapped(b, host[i] + (off), (len), OMPBATCH_MAP_FROM));      \
        memcpy(host_want[i] + (off), dev_want[i] + (off), (len));                               \
        added++;                                                                                \
    } while (0)
    ADD_FROM(0, 0, sizes[0]);
    ADD_FROM(2, 0, sizes[2]);
    ADD_FROM(5, 0, sizes[5]);
    ADD_FROM(1, 5, 50);
    ADD_FROM(3, 0, 1);
    ADD_FROM(3, sizes[3] - 1, 1);
    ADD_FROM(3, 4096, 4096);
    uint64_t rs = seed ^ 0x5a5a;
    for (int k = 0; k < 16; k++) {
        size_t off = random_below(&rs, sizes[4]);
        size_t len = 1 + random_below(&rs, sizes[4] - off);
        ADD_FROM(4, off, len);
    }
#undef ADD_FROM
    CHECK_OK(ompbatch_batch_submit(b));
    CHECK_OK(ompbatch_batch_wait(b));
    ompbatch_stats s = stats_of(b);
    OB_CHECK(s.copies_added == added, "copies_added = %" PRIu64 ", want %zu", s.copies_added,
          added);
    OB_CHECK(s.paths == OMPBATCH_PATH_HOST, "paths = %#x, want OMPBATCH_PATH_HOST", s.paths);
    CHECK_OK(ompbatch_batch_destroy(b));
    check_all("(b) after MAP_FROM");
}

/* ---- (c) order: copies behave as if performed in the order added ---------------------------- */

static void test_order(void)
{
    printf("(c) order of dependent TO and FROM copies in one batch\n");
    unsigned char *a = host[2];
    size_t n = sizes[2]; /* 4096 */
    device_write(a, n, 0, 500);
    for (size_t j = 0; j < n; j++)
        dev_want[2][j] = device_byte(seed, 500, j);
    fill_random(a, n, 501);
    memcpy(host_want[2], a, n);

    ompbatch_batch *b = NULL;
    CHECK_OK(ompbatch_batch_create(&b, 0, NULL, NULL));
    if (b == NULL)
        return;
    /* 1: host[0,2048) -> device; 2: device[1024,3072) -> host, reading what 1 wrote and
     * overwriting what 1 read. */
    CHECK_OK(ompbatch_batch_add_mapped(b, a, 2048, OMPBATCH_MAP_TO));
    CHECK_OK(ompbatch_batch_add_mapped(b, a + 1024, 2048, OMPBATCH_MAP_FROM));
    memcpy(dev_want[2], host_want[2], 2048);
    memcpy(host_want[2] + 1024, dev_want[2] + 1024, 2048);
    CHECK_OK(ompbatch_batch_submit(b));
    CHECK_OK(ompbatch_batch_wait(b));
    ompbatch_stats s = stats_of(b);
    OB_CHECK(s.sub_batches >= 2, "sub_batches = %" PRIu64 ": dependent copies in one level",
          s.sub_batches);
    CHECK_OK(ompbatch_batch_destroy(b));
    check_all("(c) after ordered TO + FROM");
}

/* ---- (d) another host-offload device -------------------------------------------------------- */

static void test_other_device(void)
{
    if (omp_get_num_devices() < 2) {
        printf("(d) skipped: only %d offload device(s)\n", omp_get_num_devices());
        return;
    }
    printf("(d) device 1: a mapping there, and none of device 0's\n");
    size_t n = 3000;
    unsigned char *a = xmalloc(n);
    unsigned char *want = xmalloc(n);
    fill_random(a, n, 600);
#pragma omp target enter data device(1) map(to : a[0:n])
    fill_random(a, n, 601);
    memcpy(want, a, n);

    ompbatch_batch *b = NULL;
    CHECK_OK(ompbatch_batch_create(&b, 1, NULL, NULL));
    if (b != NULL) {
        CHECK_OK(ompbatch_batch_add_mapped(b, a, n, OMPBATCH_MAP_TO));
        /* Array 2 is mapped on device 0 only. */
        if (EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[2], sizes[2], OMPBATCH_MAP_TO),
                          OMPBATCH_ERR_NOT_MAPPED))
            OB_CHECK(strstr(ompbatch_last_error(), "device 1") != NULL,
                  "message does not name device 1: %s", ompbatch_last_error());
        CHECK_OK(ompbatch_batch_submit(b));
        CHECK_OK(ompbatch_batch_destroy(b));
        OB_CHECK(device_mismatches(a, want, n, 1, "device 1 array") == 0,
              "device 1 copy differs after MAP_TO");
    }
    /* And device 0's batch does not see device 1's mapping. */
    ompbatch_batch *b0 = NULL;
    CHECK_OK(ompbatch_batch_create(&b0, 0, NULL, NULL));
    if (b0 != NULL) {
        EXPECT_STATUS(ompbatch_batch_add_mapped(b0, a, n, OMPBATCH_MAP_FROM),
                      OMPBATCH_ERR_NOT_MAPPED);
        CHECK_OK(ompbatch_batch_destroy(b0));
    }
#pragma omp target exit data device(1) map(delete : a[0:n])
    free(a);
    free(want);
}

/* ---- (e) errors through the real runtime ---------------------------------------------------- */

static int message_names(const void *p)
{
    char text[32];
    snprintf(text, sizeof(text), "%p", p);
    if (strstr(ompbatch_last_error(), text) != NULL)
        return 1;
    fprintf(stderr, "  message does not name %s: %s\n", text, ompbatch_last_error());
    return 0;
}

static void test_errors(void)
{
    printf("(e) errors: unmapped, partly mapped, split mappings, the host device\n");
    ompbatch_batch *b = NULL;
    CHECK_OK(ompbatch_batch_create(&b, 0, NULL, NULL));
    if (b == NULL)
        return;

    /* Never mapped: heap, stack and static memory. */
    unsigned char *unmapped = xmalloc(512);
    unsigned char on_stack[64];
    static unsigned char in_data[64];
    memset(unmapped, 1, 512);
    memset(on_stack, 2, sizeof(on_stack));
    if (EXPECT_STATUS(ompbatch_batch_add_mapped(b, unmapped, 512, OMPBATCH_MAP_TO),
                      OMPBATCH_ERR_NOT_MAPPED))
        OB_CHECK(message_names(unmapped), "NOT_MAPPED message does not name the heap pointer");
    if (EXPECT_STATUS(ompbatch_batch_add_mapped(b, on_stack, sizeof(on_stack), OMPBATCH_MAP_FROM),
                      OMPBATCH_ERR_NOT_MAPPED))
        OB_CHECK(message_names(on_stack), "NOT_MAPPED message does not name the stack pointer");
    if (EXPECT_STATUS(ompbatch_batch_add_mapped(b, in_data, 1, OMPBATCH_MAP_TO),
                      OMPBATCH_ERR_NOT_MAPPED))
        OB_CHECK(message_names(in_data), "NOT_MAPPED message does not name the static pointer");
    /* One byte past the mapping (the allocation's unmapped slack). */
    EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[3] + sizes[3], 1, OMPBATCH_MAP_TO),
                  OMPBATCH_ERR_NOT_MAPPED);

    /* Partly mapped: running past the end of a mapping. */
    if (EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[3], sizes[3] + 1, OMPBATCH_MAP_TO),
                      OMPBATCH_ERR_NOT_MAPPED)) {
        OB_CHECK(message_names(host[3]), "partly-mapped message does not name the pointer");
        OB_CHECK(strstr(ompbatch_last_error(), "partly mapped") != NULL,
              "message does not say partly mapped: %s", ompbatch_last_error());
    }
    EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[5] + sizes[5] - 10, 20, OMPBATCH_MAP_FROM),
                  OMPBATCH_ERR_NOT_MAPPED);
    EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[0], 2, OMPBATCH_MAP_TO),
                  OMPBATCH_ERR_NOT_MAPPED);

    /* One host range mapped as two separate mappings: the last byte maps elsewhere. */
    size_t half = 1000;
    unsigned char *split = xmalloc(2 * half);
    fill_random(split, 2 * half, 700);
#pragma omp target enter data map(to : split[0:half])
#pragma omp target enter data map(to : split[half:half])
    fill_random(split, 2 * half, 701); /* new host data for the two good transfers below */
    OB_CHECK(omp_get_mapped_ptr(split, 0) != NULL && omp_get_mapped_ptr(split + half, 0) != NULL,
          "split mappings not present");
    if (EXPECT_STATUS(ompbatch_batch_add_mapped(b, split, 2 * half, OMPBATCH_MAP_TO),
                      OMPBATCH_ERR_NOT_MAPPED))
        OB_CHECK(strstr(ompbatch_last_error(), "several mappings") != NULL,
              "message does not say the range spans several mappings: %s",
              ompbatch_last_error());
    /* Each half on its own is fine. */
    CHECK_OK(ompbatch_batch_add_mapped(b, split, half, OMPBATCH_MAP_TO));
    CHECK_OK(ompbatch_batch_add_mapped(b, split + half, half, OMPBATCH_MAP_TO));

    /* Neither or both directions. */
    EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[2], 8, OMPBATCH_MAP_TO | OMPBATCH_MAP_FROM),
                  OMPBATCH_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[2], 8, OMPBATCH_MAP_ALWAYS),
                  OMPBATCH_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(ompbatch_batch_add_mapped(b, NULL, 8, OMPBATCH_MAP_TO),
                  OMPBATCH_ERR_NULL_POINTER);

    /* Failed adds leave nothing in the batch; the two good ones go through. */
    CHECK_OK(ompbatch_batch_submit(b));
    CHECK_OK(ompbatch_batch_wait(b));
    ompbatch_stats s = stats_of(b);
    OB_CHECK(s.copies_added == 2, "copies_added = %" PRIu64 " after failed adds, want 2",
          s.copies_added);
    OB_CHECK(s.paths == OMPBATCH_PATH_HOST, "paths = %#x, want OMPBATCH_PATH_HOST", s.paths);
    CHECK_OK(ompbatch_batch_destroy(b));
    unsigned char *split_want = xmalloc(2 * half);
    memcpy(split_want, split, 2 * half);
    OB_CHECK(device_mismatches(split, split_want, half, 0, "split first half") == 0,
          "first half of the split range differs on the device");
    OB_CHECK(device_mismatches(split + half, split_want + half, half, 0, "split second half") == 0,
          "second half of the split range differs on the device");
    free(split_want);
#pragma omp target exit data map(delete : split[0:half])
#pragma omp target exit data map(delete : split[half:half])

    /* The host: omp_get_initial_device() and OMPBATCH_HOST_DEVICE make host batches, which
     * refuse mapped transfers; numbers past the host are no device at all. */
    int initial = omp_get_initial_device();
    int hosts[2] = {initial, OMPBATCH_HOST_DEVICE};
    for (int k = 0; k < 2; k++) {
        ompbatch_batch *hb = NULL;
        CHECK_OK(ompbatch_batch_create(&hb, hosts[k], NULL, NULL));
        if (hb == NULL)
            continue;
        if (EXPECT_STATUS(ompbatch_batch_add_mapped(hb, host[2], sizes[2], OMPBATCH_MAP_TO),
                          OMPBATCH_ERR_INVALID_DEVICE))
            OB_CHECK(strstr(ompbatch_last_error(), "host") != NULL,
                  "INVALID_DEVICE message does not mention the host: %s", ompbatch_last_error());
        CHECK_OK(ompbatch_batch_destroy(hb));
    }
    ompbatch_batch *nb = NULL;
    EXPECT_STATUS(ompbatch_batch_create(&nb, initial + 1, NULL, NULL),
                  OMPBATCH_ERR_INVALID_DEVICE);
    EXPECT_STATUS(ompbatch_batch_create(&nb, -2, NULL, NULL), OMPBATCH_ERR_INVALID_DEVICE);
    OB_CHECK(nb == NULL, "a failed create returned a batch");

    free(unmapped);
    free(split);
}

/* (f) After target exit data, the same pointers are no longer mapped. */
static void test_after_unmap(void)
{
    printf("(f) after target exit data\n");
    ompbatch_batch *b = NULL;
    CHECK_OK(ompbatch_batch_create(&b, 0, NULL, NULL));
    if (b == NULL)
        return;
    for (int i = 0; i < NARRAYS; i++)
        EXPECT_STATUS(ompbatch_batch_add_mapped(b, host[i], sizes[i], OMPBATCH_MAP_TO),
                      OMPBATCH_ERR_NOT_MAPPED);
    CHECK_OK(ompbatch_batch_destroy(b));
}

int main(void)
{
    if (!ob_test_seed_parse(getenv("OMPBATCH_TEST_SEED"), &seed))
        seed = ob_test_mix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)clock());
    printf("OMPBATCH_TEST_SEED=%" PRIu64 "\n", seed);
    const char *offload = getenv("OMP_TARGET_OFFLOAD");
    printf("OMP_TARGET_OFFLOAD=%s\n", offload ? offload : "(unset)");

    test_runtime();
    map_arrays();
    check_all("after target enter data");
    test_to();
    test_from();
    test_order();
    test_other_device();
    test_errors();
    check_all("after the error cases");
    unmap_arrays();
    test_after_unmap();

    for (int i = 0; i < NARRAYS; i++) {
        free(host[i]);
        free(dev_want[i]);
        free(host_want[i]);
    }
    return ob_check_finish("omp mapped test");
}
