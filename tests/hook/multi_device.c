/*
 * The OpenMP hook with several devices: every device the runtime offers (up to four; LLVM's
 * host offload offers four, so this runs on CPU machines; a GPU machine offers its GPUs) holds
 * its own copies of the same host arrays, with different data per device, moved by constructs
 * of four items each with device(d). Kernels scramble each device's copies with a key of their
 * own, so an item the hook sends to the wrong device, or copies from the wrong one, shows up.
 * omp_target_memcpy then moves data between devices (and host and device), and
 * omp_target_alloc'd buffers on one device are filled from another.
 * A plain OpenMP program: compare.sh runs it with and without the hook.
 *
 * Usage: multi_device <seed>. Prints one checksum line per device and step, and
 * "multi_device: N checks passed, M failed"; exits 1 on any failure.
 */
#include "hook_test.h"

enum { MAX_DEVICES = 4, GROUPS = 3, PER_GROUP = 4, NARRAYS = GROUPS * PER_GROUP, MAX_BYTES = 3000 };

static unsigned char *host[NARRAYS];  /* the program's arrays, one set for all devices */
static size_t size[NARRAYS];
static unsigned char *want[MAX_DEVICES][NARRAYS]; /* what each device's copy must hold */

#define G_LOCALS                                                                                \
    unsigned char *p0 = host[4 * g], *p1 = host[4 * g + 1], *p2 = host[4 * g + 2],              \
                  *p3 = host[4 * g + 3];                                                        \
    size_t n0 = size[4 * g], n1 = size[4 * g + 1], n2 = size[4 * g + 2], n3 = size[4 * g + 3]
#define ITEMS p0[0:n0], p1[0:n1], p2[0:n2], p3[0:n3]

static void group_enter(int d, int g)
{
    G_LOCALS;
#pragma omp target enter data map(to : ITEMS) device(d)
}

static void group_update_from(int d, int g)
{
    G_LOCALS;
#pragma omp target update from(ITEMS) device(d)
}

static void group_update_to(int d, int g)
{
    G_LOCALS;
#pragma omp target update to(ITEMS) device(d)
}

static void group_exit_from(int d, int g)
{
    G_LOCALS;
#pragma omp target exit data map(from : ITEMS) device(d)
}

/* Scrambles device d's copy of array i with the key of (d, i, step). */
static void device_scramble(int d, int i, uint64_t tag)
{
    unsigned char *p = host[i];
    size_t n = size[i];
    uint64_t seed = ht_seed;
#pragma omp target teams distribute parallel for map(alloc : p[0:n]) device(d)
    for (size_t j = 0; j < n; j++)
        p[j] ^= ht_key(seed, tag, j);
}

/* Device d's copy of array i must equal `expected`, compared on device d. */
static void expect_on_device(int d, int i, const unsigned char *expected, const char *what)
{
    unsigned char *p = host[i];
    size_t n = size[i], bad = 0;
    if (!omp_target_is_present(p, d)) {
        OB_CHECK(0, "%s: array %d is not mapped on device %d", what, i, d);
        return;
    }
#pragma omp target map(alloc : p[0:n]) map(to : expected[0:n]) map(tofrom : bad) device(d)
    for (size_t j = 0; j < n; j++)
        bad += p[j] != expected[j];
    OB_CHECK(bad == 0, "%s: device %d's array %d: %zu of %zu bytes differ", what, d, i, bad, n);
}

static uint64_t tag_of(int d, int i, int step)
{
    return (uint64_t)step * 1000 + (uint64_t)d * 100 + (uint64_t)i;
}

/* The host arrays get device d's data: what device d must hold after the next `to`. */
static void host_takes(int d, uint64_t salt)
{
    for (int i = 0; i < NARRAYS; i++) {
        ht_fill_unlike(host[i], host[i], size[i], salt * 131 + (uint64_t)(d * NARRAYS + i));
        memcpy(want[d][i], host[i], size[i]);
    }
}

static void report(const char *step, int d)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < NARRAYS; i++)
        h ^= ht_fnv(want[d][i], size[i]) + (uint64_t)i;
    printf("  %-24s device %d  fnv %016" PRIx64 "\n", step, d, h);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "multi_device");
    int devices = omp_get_num_devices();
    if (devices > MAX_DEVICES)
        devices = MAX_DEVICES;
    OB_CHECK(devices >= 1, "no offload device");
    printf("devices used: %d\n", devices);
    uint64_t rng = ht_state(1);
    for (int i = 0; i < NARRAYS; i++) {
        size[i] = ht_between(&rng, 1, MAX_BYTES);
        host[i] = ht_malloc(size[i]);
        ht_fill_random(host[i], size[i], 10 + (uint64_t)i);
        for (int d = 0; d < MAX_DEVICES; d++)
            want[d][i] = ht_malloc(size[i]);
    }

    /* 1. Each device enters the arrays with data of its own. */
    for (int d = 0; d < devices; d++) {
        host_takes(d, 1);
        for (int g = 0; g < GROUPS; g++)
            group_enter(d, g);
        report("entered", d);
    }
    for (int d = 0; d < devices; d++)
        for (int i = 0; i < NARRAYS; i++)
            expect_on_device(d, i, want[d][i], "after enter");

    /* 2. Kernels scramble each device's copies; the host, poisoned, takes each device's back. */
    for (int d = 0; d < devices; d++)
        for (int i = 0; i < NARRAYS; i++) {
            device_scramble(d, i, tag_of(d, i, 2));
            ht_host_scramble(want[d][i], size[i], tag_of(d, i, 2));
        }
    for (int d = 0; d < devices; d++) {
        for (int i = 0; i < NARRAYS; i++)
            ht_fill_unlike(host[i], want[d][i], size[i], 20000 + (uint64_t)(d * NARRAYS + i));
        for (int g = 0; g < GROUPS; g++)
            group_update_from(d, g);
        for (int i = 0; i < NARRAYS; i++)
            ht_expect_host(host[i], want[d][i], size[i], "update from");
        report("updated from", d);
    }

    /* 3. New host data to each device in turn (the others keep theirs). */
    for (int d = devices - 1; d >= 0; d--) {
        host_takes(d, 3);
        for (int g = 0; g < GROUPS; g++)
            group_update_to(d, g);
        report("updated to", d);
    }
    for (int d = 0; d < devices; d++)
        for (int i = 0; i < NARRAYS; i++)
            expect_on_device(d, i, want[d][i], "after update to");

    /* 4. omp_target_memcpy: device d's array into a buffer allocated on device e (the next
     * one), back to the host from there, and host data straight into device e's buffer. */
    int initial = omp_get_initial_device();
    for (int d = 0; d < devices; d++) {
        int e = (d + 1) % devices;
        for (int i = 0; i < NARRAYS; i += 5) {
            size_t n = size[i];
            void *theirs = omp_get_mapped_ptr(host[i], d);
            void *buffer = omp_target_alloc(n, e);
            unsigned char *back = ht_malloc(n);
            OB_CHECK(theirs != NULL && buffer != NULL, "device %d: no mapped pointer or buffer", d);
            if (theirs != NULL && buffer != NULL) {
                ht_fill_unlike(back, want[d][i], n, 40000 + (uint64_t)(d * NARRAYS + i));
                OB_CHECK(omp_target_memcpy(buffer, theirs, n, 0, 0, e, d) == 0,
                      "omp_target_memcpy device %d -> %d failed", d, e);
                OB_CHECK(omp_target_memcpy(back, buffer, n, 0, 0, initial, e) == 0,
                      "omp_target_memcpy device %d -> host failed", e);
                ht_expect_host(back, want[d][i], n, "omp_target_memcpy between devices");
                ht_fill_random(back, n, 50000 + (uint64_t)(d * NARRAYS + i));
                OB_CHECK(omp_target_memcpy(buffer, back, n / 2, 1, 0, e, initial) == 0,
                      "omp_target_memcpy host -> device %d failed", e);
                unsigned char *again = ht_malloc(n);
                ht_fill_unlike(again, back, n, 60000 + (uint64_t)i);
                OB_CHECK(omp_target_memcpy(again, buffer, n / 2, 0, 1, initial, e) == 0,
                      "omp_target_memcpy device %d -> host failed", e);
                ht_expect_host(again, back, n / 2, "omp_target_memcpy host -> device -> host");
                free(again);
            }
            omp_target_free(buffer, e);
            free(back);
        }
    }

    /* 5. Each device's data comes home with the exit, devices in turn. */
    for (int d = 0; d < devices; d++) {
        for (int i = 0; i < NARRAYS; i++)
            ht_fill_unlike(host[i], want[d][i], size[i], 70000 + (uint64_t)(d * NARRAYS + i));
        for (int g = 0; g < GROUPS; g++)
            group_exit_from(d, g);
        for (int i = 0; i < NARRAYS; i++) {
            ht_expect_host(host[i], want[d][i], size[i], "exit from");
            OB_CHECK(!omp_target_is_present(host[i], d), "array %d still mapped on device %d", i, d);
        }
        report("exited", d);
    }
    for (int i = 0; i < NARRAYS; i++) {
        free(host[i]);
        for (int d = 0; d < MAX_DEVICES; d++)
            free(want[d][i]);
    }
    return ob_check_finish("multi_device");
}
