/*
 * The OpenMP hook test of target regions' own maps: regions whose map clauses move data, with
 * every map type and modifier, implicit maps, reductions, device pointers, regions inside
 * `target data`, if(0), several devices, nowait with depend, several host threads, and the
 * shapes the hook leaves to the runtime (global pointers, structs with pointer members,
 * mappers). Each kernel writes what it read in a way the host can predict; every result is
 * checked on the host after the region and on the device where the data stays mapped.
 * A plain OpenMP program: compare.sh runs it with and without the hook and wants the same
 * report; see BUILD.bazel for the hook statistics it expects.
 *
 * Usage: target_regions <seed>. Prints checksums of every sub-case and
 * "target_regions: N checks passed, M failed"; exits 1 on any failure.
 */
#include "hook_test.h"

#define ARRAYS 8

/* Every kernel below writes ht_mix32 of what it read. */

static uint32_t *tr_random(size_t n, uint64_t salt)
{
    uint32_t *p = ht_malloc(n * sizeof(*p));
    ht_fill_random(p, n * sizeof(*p), salt);
    return p;
}

/* A destination the kernel must overwrite: poisoned unlike what it will hold. */
static uint32_t *tr_poisoned(const uint32_t *unlike, size_t n, uint64_t salt)
{
    uint32_t *p = ht_malloc(n * sizeof(*p));
    ht_fill_unlike(p, unlike, n * sizeof(*p), salt);
    return p;
}

/* ---- map(to:) many arrays, map(from:) two: the naive region ------------------------------- */

/* out[j] = mix(sum of the eight inputs' j, 1), out2[j] = mix(in[0][j] ^ in[7][j], 2). */
static void test_to_and_from(int rounds)
{
    uint64_t r = ht_state(10);
    for (int round = 0; round < rounds; round++) {
        size_t n = ht_between(&r, 1, 700);
        uint32_t *a = tr_random(n, 100 + 16 * round), *b = tr_random(n, 101 + 16 * round);
        uint32_t *c = tr_random(n, 102 + 16 * round), *d = tr_random(n, 103 + 16 * round);
        uint32_t *e = tr_random(n, 104 + 16 * round), *f = tr_random(n, 105 + 16 * round);
        uint32_t *g = tr_random(n, 106 + 16 * round), *h = tr_random(n, 107 + 16 * round);
        uint32_t *want = ht_malloc(n * sizeof(*want)), *want2 = ht_malloc(n * sizeof(*want2));
        for (size_t j = 0; j < n; j++) {
            want[j] = ht_mix32(a[j] + b[j] + c[j] + d[j] + e[j] + f[j] + g[j] + h[j], 1);
            want2[j] = ht_mix32(a[j] ^ h[j], 2);
        }
        uint32_t *x = tr_poisoned(want, n, 108 + 16 * round);
        uint32_t *y = tr_poisoned(want2, n, 109 + 16 * round);
#pragma omp target map(to : a[0:n], b[0:n], c[0:n], d[0:n], e[0:n], f[0:n], g[0:n], h[0:n])   \
    map(from : x[0:n], y[0:n])
        for (size_t j = 0; j < n; j++) {
            x[j] = ht_mix32(a[j] + b[j] + c[j] + d[j] + e[j] + f[j] + g[j] + h[j], 1);
            y[j] = ht_mix32(a[j] ^ h[j], 2);
        }
        ht_expect_host(x, want, n * sizeof(*x), "to and from: x");
        ht_expect_host(y, want2, n * sizeof(*y), "to and from: y");
        OB_CHECK(ht_is_unmapped(a, n * sizeof(*a)) && ht_is_unmapped(x, n * sizeof(*x)),
              "to and from: still mapped after the region");
        if (round == 0)
            ht_report("to and from: x", x, n * sizeof(*x));
        free(a), free(b), free(c), free(d), free(e), free(f), free(g), free(h);
        free(x), free(y), free(want), free(want2);
    }
}

/* ---- tofrom, alloc, always, close, ompx_hold ------------------------------------------------ */

/* Four arrays tofrom: each comes back mixed with its own tag. */
static void test_tofrom(int rounds)
{
    uint64_t r = ht_state(20);
    for (int round = 0; round < rounds; round++) {
        size_t n = ht_between(&r, 1, 5000);
        uint32_t *v[4], *want[4];
        for (int k = 0; k < 4; k++) {
            v[k] = tr_random(n, 200 + 8 * round + k);
            want[k] = ht_malloc(n * sizeof(uint32_t));
            for (size_t j = 0; j < n; j++)
                want[k][j] = ht_mix32(v[k][j], 10 + k);
        }
        uint32_t *p = v[0], *q = v[1], *s = v[2], *t = v[3];
        if (round % 2 == 0) {
#pragma omp target map(tofrom : p[0:n], q[0:n], s[0:n], t[0:n])
            for (size_t j = 0; j < n; j++) {
                p[j] = ht_mix32(p[j], 10);
                q[j] = ht_mix32(q[j], 11);
                s[j] = ht_mix32(s[j], 12);
                t[j] = ht_mix32(t[j], 13);
            }
        } else {
            /* The same with close and ompx_hold, which must reach the runtime as they are. */
#pragma omp target map(close, tofrom : p[0:n], q[0:n]) map(ompx_hold, tofrom : s[0:n], t[0:n])
            for (size_t j = 0; j < n; j++) {
                p[j] = ht_mix32(p[j], 10);
                q[j] = ht_mix32(q[j], 11);
                s[j] = ht_mix32(s[j], 12);
                t[j] = ht_mix32(t[j], 13);
            }
        }
        for (int k = 0; k < 4; k++) {
            ht_expect_host(v[k], want[k], n * sizeof(uint32_t), "tofrom");
            OB_CHECK(ht_is_unmapped(v[k], n * sizeof(uint32_t)), "tofrom: still mapped");
        }
        if (round < 2)
            ht_report(round == 0 ? "tofrom: p" : "close, ompx_hold: p", p, n * sizeof(*p));
        for (int k = 0; k < 4; k++)
            free(v[k]), free(want[k]);
    }
}

/* map(alloc:) scratch the kernel fills, two results from it. */
static void test_alloc_and_from(void)
{
    uint64_t r = ht_state(30);
    size_t n = ht_between(&r, 64, 3000);
    uint32_t *in = tr_random(n, 300);
    uint32_t *tmp = tr_random(n, 301); /* its host bytes must stay as they are */
    uint32_t *tmp_before = ht_dup(tmp, n * sizeof(*tmp));
    uint32_t *want = ht_malloc(n * sizeof(*want)), *want2 = ht_malloc(n * sizeof(*want2));
    for (size_t j = 0; j < n; j++) {
        want[j] = ht_mix32(in[j], 20) + 1;
        want2[j] = ht_mix32(in[j], 20) ^ 0x5a5a5a5au;
    }
    uint32_t *x = tr_poisoned(want, n, 302), *y = tr_poisoned(want2, n, 303);
#pragma omp target map(to : in[0:n]) map(alloc : tmp[0:n]) map(from : x[0:n], y[0:n])
    {
        for (size_t j = 0; j < n; j++)
            tmp[j] = ht_mix32(in[j], 20);
        for (size_t j = 0; j < n; j++) {
            x[j] = tmp[j] + 1;
            y[j] = tmp[j] ^ 0x5a5a5a5au;
        }
    }
    ht_expect_host(x, want, n * sizeof(*x), "alloc and from: x");
    ht_expect_host(y, want2, n * sizeof(*y), "alloc and from: y");
    ht_expect_host(tmp, tmp_before, n * sizeof(*tmp), "alloc and from: alloc left the host");
    ht_report("alloc and from: y", y, n * sizeof(*y));
    free(in), free(tmp), free(tmp_before), free(want), free(want2), free(x), free(y);
}

/* Regions on data an enclosing target data holds: plain maps move nothing, `always` moves
 * every time, and the device copy carries over from region to region. */
static void test_inside_target_data(void)
{
    uint64_t r = ht_state(40);
    size_t n = ht_between(&r, 16, 4000);
    uint32_t *a = tr_random(n, 400), *b = tr_random(n, 401);
    uint32_t *c = tr_random(n, 402), *d = tr_random(n, 403);
    uint32_t *dev_a = ht_dup(a, n * sizeof(*a)), *dev_b = ht_dup(b, n * sizeof(*b));
    uint32_t *host_c = ht_dup(c, n * sizeof(*c)), *host_d = ht_dup(d, n * sizeof(*d));
#pragma omp target data map(to : a[0:n], b[0:n]) map(alloc : c[0:n], d[0:n])
    {
        /* Present data: the region moves nothing; c and d are written on the device only. */
#pragma omp target map(tofrom : a[0:n], b[0:n]) map(from : c[0:n], d[0:n])
        for (size_t j = 0; j < n; j++) {
            a[j] = ht_mix32(a[j], 30);
            b[j] = ht_mix32(b[j], 31);
            c[j] = a[j] ^ 1u;
            d[j] = b[j] ^ 2u;
        }
        for (size_t j = 0; j < n; j++) {
            dev_a[j] = ht_mix32(dev_a[j], 30);
            dev_b[j] = ht_mix32(dev_b[j], 31);
        }
        ht_expect_host(c, host_c, n * sizeof(*c), "inside target data: c stays on the device");
        ht_expect_device(a, dev_a, n * sizeof(*a), "inside target data: a on the device");
        /* always, from: the device values come back although the entries stay. */
#pragma omp target map(always, from : c[0:n], d[0:n])
        for (size_t j = 0; j < n; j++) {
            c[j] = ht_mix32(c[j], 32);
            d[j] = ht_mix32(d[j], 33);
        }
        for (size_t j = 0; j < n; j++) {
            host_c[j] = ht_mix32(dev_a[j] ^ 1u, 32);
            host_d[j] = ht_mix32(dev_b[j] ^ 2u, 33);
        }
        ht_expect_host(c, host_c, n * sizeof(*c), "inside target data: always from c");
        ht_expect_host(d, host_d, n * sizeof(*d), "inside target data: always from d");
        /* always, to: new host values go over, the kernel sees them. */
        ht_fill_random(a, n * sizeof(*a), 404);
        ht_fill_random(b, n * sizeof(*b), 405);
        memcpy(dev_a, a, n * sizeof(*a));
        memcpy(dev_b, b, n * sizeof(*b));
#pragma omp target map(always, to : a[0:n], b[0:n]) map(from : c[0:n])
        for (size_t j = 0; j < n; j++)
            c[j] = a[j] + b[j];
        ht_expect_device(a, dev_a, n * sizeof(*a), "inside target data: always to a");
        ht_expect_host(c, host_c, n * sizeof(*c), "inside target data: c still held");
    }
    /* The end of target data: a and b were map(to:), c and d alloc: nothing comes back. */
    ht_expect_host(c, host_c, n * sizeof(*c), "inside target data: after the end");
    OB_CHECK(ht_is_unmapped(a, n * sizeof(*a)) && ht_is_unmapped(c, n * sizeof(*c)),
          "inside target data: still mapped after the end");
    ht_report("inside target data: d", d, n * sizeof(*d));
    free(a), free(b), free(c), free(d), free(dev_a), free(dev_b), free(host_c), free(host_d);
}

/* ---- implicit maps, reductions, firstprivate, device pointers ------------------------------- */

static uint32_t global_in[ARRAYS][512], global_out[2][512];

/* Arrays without map clauses (implicit tofrom), scalars (firstprivate), defaultmap, and a
 * reduction scalar, beside explicit maps. */
static void test_implicit_and_reduction(void)
{
    uint64_t r = ht_state(50);
    ht_fill_random(global_in, sizeof(global_in), 500);
    ht_fill_random(global_out, sizeof(global_out), 501);
    uint32_t tag = (uint32_t)ht_below(&r, 1000), want_sum = 0;
    uint32_t want_out[2][512];
    for (int j = 0; j < 512; j++) {
        want_out[0][j] = ht_mix32(global_in[0][j] + global_in[1][j], tag);
        want_out[1][j] = ht_mix32(global_in[2][j] ^ global_in[3][j], tag);
        want_sum += want_out[0][j] ^ want_out[1][j];
    }
    uint32_t sum = 0;
    /* global_in and global_out are `declare target`-less globals: implicit tofrom maps. */
#pragma omp target teams distribute parallel for reduction(+ : sum)
    for (int j = 0; j < 512; j++) {
        global_out[0][j] = ht_mix32(global_in[0][j] + global_in[1][j], tag);
        global_out[1][j] = ht_mix32(global_in[2][j] ^ global_in[3][j], tag);
        sum += global_out[0][j] ^ global_out[1][j];
    }
    OB_CHECK(sum == want_sum, "implicit and reduction: sum %u, want %u", sum, want_sum);
    ht_expect_host(global_out, want_out, sizeof(want_out), "implicit and reduction: outputs");
    /* defaultmap(tofrom: scalar): the scalar comes back. */
    uint32_t scalar = tag;
#pragma omp target defaultmap(tofrom : scalar) map(to : global_in[0:2]) map(from : global_out[0:2])
    {
        scalar = ht_mix32(scalar, 7);
        for (int j = 0; j < 512; j++)
            global_out[0][j] = global_in[1][j], global_out[1][j] = global_in[0][j];
    }
    OB_CHECK(scalar == ht_mix32(tag, 7), "defaultmap: scalar %u, want %u", scalar, ht_mix32(tag, 7));
    ht_expect_host(global_out[0], global_in[1], sizeof(global_out[0]), "defaultmap: out 0");
    ht_expect_host(global_out[1], global_in[0], sizeof(global_out[1]), "defaultmap: out 1");
    /* Several reductions of a loop over explicitly mapped arrays. */
    size_t n = ht_between(&r, 100, 9000);
    uint32_t *a = tr_random(n, 502), *b = tr_random(n, 503);
    uint32_t s1 = 0, s2 = 0, w1 = 0, w2 = 0;
    for (size_t j = 0; j < n; j++)
        w1 += a[j] ^ b[j], w2 += ht_mix32(a[j], 3);
#pragma omp target teams distribute parallel for map(to : a[0:n], b[0:n]) reduction(+ : s1, s2)
    for (size_t j = 0; j < n; j++) {
        s1 += a[j] ^ b[j];
        s2 += ht_mix32(a[j], 3);
    }
    OB_CHECK(s1 == w1 && s2 == w2, "reductions: %u %u, want %u %u", s1, s2, w1, w2);
    printf("  implicit and reduction: sum %u, scalar %u, sums %u %u\n", sum, scalar, s1, s2);
    free(a), free(b);
}

/* is_device_ptr and has_device_addr beside mapped arrays. */
static void test_device_pointers(void)
{
    uint64_t r = ht_state(60);
    size_t n = ht_between(&r, 8, 2000);
    int dev = omp_get_default_device();
    uint32_t *in = tr_random(n, 600), *in2 = tr_random(n, 601);
    uint32_t *buf = omp_target_alloc(n * sizeof(uint32_t), dev);
    OB_CHECK(buf != NULL, "omp_target_alloc failed");
    if (buf == NULL)
        return;
#pragma omp target is_device_ptr(buf) map(to : in[0:n], in2[0:n])
    for (size_t j = 0; j < n; j++)
        buf[j] = ht_mix32(in[j] ^ in2[j], 40);
    uint32_t *want = ht_malloc(n * sizeof(*want));
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(ht_mix32(in[j] ^ in2[j], 40), 41);
    uint32_t *out = tr_poisoned(want, n, 602), *out2 = tr_poisoned(in, n, 603);
#pragma omp target has_device_addr(buf[0:n]) map(from : out[0:n], out2[0:n]) map(to : in[0:n])
    for (size_t j = 0; j < n; j++) {
        out[j] = ht_mix32(buf[j], 41);
        out2[j] = in[j];
    }
    ht_expect_host(out, want, n * sizeof(*out), "device pointers: out");
    ht_expect_host(out2, in, n * sizeof(*out2), "device pointers: out2");
    ht_report("device pointers: out", out, n * sizeof(*out));
    omp_target_free(buf, dev);
    free(in), free(in2), free(want), free(out), free(out2);
}

/* ---- if, device, nowait, threads ------------------------------------------------------------ */

/* if(0) runs on the host: the maps are not made; if(1) as usual. */
static void test_if(void)
{
    size_t n = 777;
    uint32_t *a = tr_random(n, 700), *b = tr_random(n, 701);
    uint32_t *x = tr_random(n, 702), *y = tr_random(n, 703);
    for (int on = 0; on < 2; on++) {
        uint32_t *want = ht_malloc(n * sizeof(*want));
        for (size_t j = 0; j < n; j++)
            want[j] = ht_mix32(a[j] + b[j], 50 + on);
        uint32_t tag = 50 + (uint32_t)on;
#pragma omp target if (on) map(to : a[0:n], b[0:n]) map(from : x[0:n], y[0:n])
        for (size_t j = 0; j < n; j++) {
            x[j] = ht_mix32(a[j] + b[j], tag);
            y[j] = x[j] ^ 3u;
        }
        ht_expect_host(x, want, n * sizeof(*x), on ? "if(1)" : "if(0)");
        free(want);
    }
    ht_report("if: y", y, n * sizeof(*y));
    free(a), free(b), free(x), free(y);
}

/* The same region on every device, with data of its own on each. */
static void test_devices(void)
{
    int devices = omp_get_num_devices();
    for (int d = 0; d < devices && d < 4; d++) {
        size_t n = 300 + 100 * (size_t)d;
        uint32_t *a = tr_random(n, 800 + 4 * d), *b = tr_random(n, 801 + 4 * d);
        uint32_t *want = ht_malloc(n * sizeof(*want));
        for (size_t j = 0; j < n; j++)
            want[j] = ht_mix32(a[j] - b[j], 60 + d);
        uint32_t *x = tr_poisoned(want, n, 802 + 4 * d), *y = tr_poisoned(a, n, 803 + 4 * d);
        uint32_t tag = 60 + (uint32_t)d;
#pragma omp target device(d) map(to : a[0:n], b[0:n]) map(from : x[0:n], y[0:n])
        for (size_t j = 0; j < n; j++) {
            x[j] = ht_mix32(a[j] - b[j], tag);
            y[j] = a[j];
        }
        ht_expect_host(x, want, n * sizeof(*x), "devices: x");
        ht_expect_host(y, a, n * sizeof(*y), "devices: y");
        free(a), free(b), free(want), free(x), free(y);
    }
    printf("  devices: %d\n", devices < 4 ? devices : 4);
}

/* nowait regions ordered by depend, then a taskwait. */
static void test_nowait(void)
{
    size_t n = 2048;
    uint32_t *a = tr_random(n, 900), *b = tr_random(n, 901);
    uint32_t *x = tr_random(n, 902), *y = tr_random(n, 903);
    uint32_t *want = ht_malloc(n * sizeof(*want));
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(ht_mix32(a[j] ^ b[j], 70), 71);
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp target nowait depend(out : x[0]) map(to : a[0:n], b[0:n]) map(from : x[0:n], y[0:n])
        for (size_t j = 0; j < n; j++) {
            x[j] = ht_mix32(a[j] ^ b[j], 70);
            y[j] = 0;
        }
#pragma omp target nowait depend(inout : x[0]) map(tofrom : x[0:n], y[0:n])
        for (size_t j = 0; j < n; j++) {
            x[j] = ht_mix32(x[j], 71);
            y[j] = x[j] + 1;
        }
#pragma omp taskwait
    }
    ht_expect_host(x, want, n * sizeof(*x), "nowait: x");
    ht_report("nowait: y", y, n * sizeof(*y));
    free(a), free(b), free(x), free(y), free(want);
}

/* Four host threads launching regions on data of their own, at once. */
static void test_threads(void)
{
    unsigned long bad = 0;
#pragma omp parallel num_threads(4) reduction(+ : bad)
    {
        int t = omp_get_thread_num();
        for (int round = 0; round < 8; round++) {
            size_t n = 100 + (size_t)(37 * t + 11 * round);
            uint32_t *a = tr_random(n, 1000 + 64 * (uint64_t)t + round);
            uint32_t *b = tr_random(n, 1032 + 64 * (uint64_t)t + round);
            uint32_t *x = ht_malloc(n * sizeof(*x)), *y = ht_malloc(n * sizeof(*y));
            uint32_t tag = 80 + (uint32_t)(t * 8 + round);
#pragma omp target map(to : a[0:n], b[0:n]) map(from : x[0:n], y[0:n])
            for (size_t j = 0; j < n; j++) {
                x[j] = ht_mix32(a[j] + b[j], tag);
                y[j] = ht_mix32(a[j] ^ b[j], tag);
            }
            for (size_t j = 0; j < n; j++)
                bad += x[j] != ht_mix32(a[j] + b[j], tag) || y[j] != ht_mix32(a[j] ^ b[j], tag);
            free(a), free(b), free(x), free(y);
        }
    }
    OB_CHECK(bad == 0, "threads: %lu elements differ", bad);
    printf("  threads: %lu differences\n", bad);
}

/* ---- regions on present data: the kernel gets device addresses ---------------------------- */

typedef struct triple {
    uint32_t x, y, z;
} triple;

static uint32_t global_grid[3000];

/* Regions whose arrays an enter data made present, with every map type, the present, close
 * and ompx_hold modifiers, sections that start inside their array (base and begin differ),
 * a struct and a scalar by reference, an implicitly mapped global: the runtime copies nothing
 * for them, and the device copies carry the kernels' writes from region to region. A last
 * region maps one array that is not present, which the runtime must map and copy itself. */
static void test_present_regions(int rounds)
{
    uint64_t r = ht_state(1200);
    size_t n = ht_between(&r, 64, 3000), k = ht_between(&r, 1, n / 4), len = n - 2 * k;
    uint32_t *a = tr_random(n, 1201), *b = tr_random(n, 1202), *c = tr_random(n, 1203);
    ht_fill_random(global_grid, sizeof(global_grid), 1204);
    triple st = {7, 11, 13};
    uint32_t scalar = 17;
    uint32_t *dev_a = ht_dup(a, n * sizeof(*a)), *dev_b = ht_dup(b, n * sizeof(*b));
    uint32_t *dev_c = ht_dup(c, n * sizeof(*c));
    uint32_t *dev_grid = ht_dup(global_grid, sizeof(global_grid));
    uint32_t *host_a = ht_dup(a, n * sizeof(*a));
    triple dev_st = st;
    uint32_t dev_scalar = scalar;
#pragma omp target enter data map(to : a[0:n], b[0:n], c[k:len], st, scalar, global_grid)
    for (int round = 0; round < rounds; round++) {
        uint32_t tag = 1300 + (uint32_t)round;
        switch (round % 4) {
        case 0:
#pragma omp target map(tofrom : a[0:n]) map(to : b[0:n]) map(from : c[k:len]) map(tofrom : st)
            for (size_t j = 0; j < n; j++) {
                a[j] = ht_mix32(a[j] + b[j], tag);
                if (j >= k && j < k + len)
                    c[j] = a[j] ^ st.x;
                if (j == 0)
                    st.y += st.x;
            }
            for (size_t j = 0; j < n; j++) {
                dev_a[j] = ht_mix32(dev_a[j] + dev_b[j], tag);
                if (j >= k && j < k + len)
                    dev_c[j] = dev_a[j] ^ dev_st.x;
            }
            dev_st.y += dev_st.x;
            break;
        case 1:
#pragma omp target map(present, tofrom : a[k:len], c[k:len]) map(present, to : scalar)
            for (size_t j = k; j < k + len; j++)
                c[j] = ht_mix32(c[j] ^ a[j], tag + scalar);
            for (size_t j = k; j < k + len; j++)
                dev_c[j] = ht_mix32(dev_c[j] ^ dev_a[j], tag + dev_scalar);
            break;
        case 2:
#pragma omp target map(close, tofrom : b[0:n]) map(ompx_hold, alloc : a[0:n])                  \
    map(tofrom : scalar)
            {
                for (size_t j = 0; j < n; j++)
                    b[j] = ht_mix32(b[j] - a[j], tag);
                scalar += 3;
            }
            for (size_t j = 0; j < n; j++)
                dev_b[j] = ht_mix32(dev_b[j] - dev_a[j], tag);
            dev_scalar += 3;
            break;
        case 3:
            /* global_grid without a map clause: an implicit tofrom of the present global. */
#pragma omp target map(to : b[0:n])
            for (size_t j = 0; j < 3000; j++)
                global_grid[j] = ht_mix32(global_grid[j] ^ b[j % n], tag);
            for (size_t j = 0; j < 3000; j++)
                dev_grid[j] = ht_mix32(dev_grid[j] ^ dev_b[j % n], tag);
            break;
        }
    }
    /* Nothing came back: the entries stayed, the regions copied nothing. */
    ht_expect_host(a, host_a, n * sizeof(*a), "present regions: a untouched on the host");
    OB_CHECK(st.y == 11 && scalar == 17, "present regions: the struct or scalar came back");
    ht_expect_device(a, dev_a, n * sizeof(*a), "present regions: a on the device");
    ht_expect_device(b, dev_b, n * sizeof(*b), "present regions: b on the device");
    ht_expect_device(c + k, dev_c + k, len * sizeof(*c), "present regions: c on the device");
    /* One array present, one not: the runtime maps d, copies it there and back. */
    uint32_t *d = tr_random(n, 1205), *want_d = ht_malloc(n * sizeof(*want_d));
    for (size_t j = 0; j < n; j++)
        want_d[j] = ht_mix32(d[j] + dev_a[j], 1400);
#pragma omp target map(tofrom : d[0:n]) map(to : a[0:n])
    for (size_t j = 0; j < n; j++)
        d[j] = ht_mix32(d[j] + a[j], 1400);
    ht_expect_host(d, want_d, n * sizeof(*d), "present regions: the absent array");
#pragma omp target exit data map(from : a[0:n], b[0:n], c[k:len], st, scalar, global_grid)
    ht_expect_host(a, dev_a, n * sizeof(*a), "present regions: a after the exit");
    ht_expect_host(b, dev_b, n * sizeof(*b), "present regions: b after the exit");
    ht_expect_host(c + k, dev_c + k, len * sizeof(*c), "present regions: c after the exit");
    ht_expect_host(global_grid, dev_grid, sizeof(global_grid), "present regions: the global");
    OB_CHECK(st.x == dev_st.x && st.y == dev_st.y && st.z == dev_st.z,
          "present regions: struct %u %u %u, want %u %u %u", st.x, st.y, st.z, dev_st.x,
          dev_st.y, dev_st.z);
    OB_CHECK(scalar == dev_scalar, "present regions: scalar %u, want %u", scalar, dev_scalar);
    OB_CHECK(ht_is_unmapped(a, n * sizeof(*a)) && ht_is_unmapped(c + k, len * sizeof(*c)),
          "present regions: still mapped after the exit");
    ht_report("present regions: c", c + k, len * sizeof(*c));
    free(a), free(b), free(c), free(d), free(want_d), free(dev_a), free(dev_b), free(dev_c);
    free(dev_grid), free(host_a);
}

/* ---- what the hook leaves to the runtime: pointers, structs, mappers ------------------------- */

static uint32_t *global_p, *global_q;

typedef struct pair_of_arrays {
    uint32_t *in;
    uint32_t *out;
    size_t n;
} pair_of_arrays;

#pragma omp declare mapper(pair_of_arrays s) map(s, s.in[0:s.n], s.out[0:s.n])

static void test_forwarded_shapes(void)
{
    size_t n = 1500;
    /* Global pointers (PTR_AND_OBJ maps) beside plain arrays. */
    global_p = tr_random(n, 1100);
    global_q = tr_random(n, 1101);
    uint32_t *a = tr_random(n, 1102), *b = tr_random(n, 1103);
    uint32_t *want = ht_malloc(n * sizeof(*want));
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(global_p[j] + a[j] + b[j], 90);
#pragma omp target map(to : global_p[0:n], a[0:n], b[0:n]) map(from : global_q[0:n])
    for (size_t j = 0; j < n; j++)
        global_q[j] = ht_mix32(global_p[j] + a[j] + b[j], 90);
    ht_expect_host(global_q, want, n * sizeof(*want), "global pointers: q");
    /* A struct with pointer members, their pointees mapped. */
    pair_of_arrays s = {tr_random(n, 1104), tr_random(n, 1105), n};
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(s.in[j], 91);
#pragma omp target map(to : s.in[0:n]) map(from : s.out[0:n]) map(to : a[0:n], b[0:n])
    for (size_t j = 0; j < n; j++)
        s.out[j] = ht_mix32(s.in[j], 91);
    ht_expect_host(s.out, want, n * sizeof(*want), "struct members: out");
    /* The same through the declared mapper. */
    ht_fill_random(s.out, n * sizeof(*s.out), 1106);
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(s.in[j], 92);
#pragma omp target map(tofrom : s) map(to : a[0:n], b[0:n])
    for (size_t j = 0; j < s.n; j++)
        s.out[j] = ht_mix32(s.in[j], 92);
    ht_expect_host(s.out, want, n * sizeof(*want), "mapper: out");
    ht_report("forwarded shapes: mapper out", s.out, n * sizeof(*s.out));
    free(global_p), free(global_q), free(a), free(b), free(s.in), free(s.out), free(want);
}

/* A region over the object of a pointer-based map gives the entry holding the pointer one more
 * reference: libomptarget's begin counts it, its end does not give it back. A release after
 * the region must unmap the pointers at the same exit as under the runtime alone, whether the
 * pointer is an element of a mapped array of row pointers or a global pointer mapped itself;
 * the report says at which exit they went. */
static void test_pointer_references(void)
{
    size_t n = 900;
    int dev = omp_get_default_device();
    uint32_t *rows[4];
    for (int k = 0; k < 4; k++)
        rows[k] = tr_random(n, 1200 + (uint64_t)k);
    uint32_t *b = tr_random(n, 1204), *want = ht_malloc(n * sizeof(*want));
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(rows[1][j] + b[j], 93);
    uint32_t *c = tr_poisoned(want, n, 1205);
#pragma omp target enter data map(to : rows[0:4])
#pragma omp target map(tofrom : rows[1][0:n]) map(to : b[0:n]) map(from : c[0:n])
    for (size_t j = 0; j < n; j++)
        c[j] = ht_mix32(rows[1][j] + b[j], 93);
    ht_expect_host(c, want, n * sizeof(*c), "row pointers: c");
    for (int k = 1; k <= 3; k++) {
#pragma omp target exit data map(release : rows[0:4])
        printf("  row pointers after release %d: %s\n", k,
               omp_target_is_present(rows, dev) ? "mapped" : "unmapped");
    }
    global_p = tr_random(n, 1206);
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(global_p[j] ^ b[j], 94);
    ht_fill_unlike(c, want, n * sizeof(*c), 1207);
#pragma omp target enter data map(to : global_p)
#pragma omp target map(to : global_p[0:n], b[0:n]) map(from : c[0:n])
    for (size_t j = 0; j < n; j++)
        c[j] = ht_mix32(global_p[j] ^ b[j], 94);
    ht_expect_host(c, want, n * sizeof(*c), "global pointer: c");
    for (int k = 1; k <= 3; k++) {
#pragma omp target exit data map(release : global_p)
        printf("  global pointer after release %d: %s\n", k,
               omp_target_is_present(&global_p, dev) ? "mapped" : "unmapped");
    }
    for (int k = 0; k < 4; k++)
        free(rows[k]);
    free(global_p), free(b), free(c), free(want);
}

/* Regions of more arguments than the hook keeps room for on its stack (32): 36 arrays mapped
 * by the region itself (split into begin, kernel and end), then mapped around it (every one
 * present: their device addresses go to the kernel). */
#define ARRAYS36(X)                                                                            \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)     \
    X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29)      \
    X(30) X(31) X(32) X(33) X(34) X(35)
#define PRAGMA(...) _Pragma(#__VA_ARGS__)
#define PRAGMA_EXPANDED(...) PRAGMA(__VA_ARGS__)
#define DECLARE_ARRAY(k) uint32_t *a##k = tr_random(n, 1300 + (uint64_t)(k));
#define LIST_ARRAY(k) a##k,
#define MAP_TOFROM(k) map(tofrom : a##k[0:n])
#define MAP_TO(k) map(to : a##k[0:n])
#define MAP_FROM(k) map(from : a##k[0:n])
#define STEP_ARRAY(k) a##k[j] = ht_mix32(a##k[j] + (uint32_t)(k), salt);

static void test_many_arrays(void)
{
    size_t n = 700;
    ARRAYS36(DECLARE_ARRAY)
    uint32_t *all[36] = {ARRAYS36(LIST_ARRAY)};
    uint32_t *want[36];
    for (int k = 0; k < 36; k++) {
        want[k] = ht_malloc(n * sizeof(uint32_t));
        memcpy(want[k], all[k], n * sizeof(uint32_t));
    }
    for (uint32_t salt = 96; salt < 98; salt++) {
        for (int k = 0; k < 36; k++)
            for (size_t j = 0; j < n; j++)
                want[k][j] = ht_mix32(want[k][j] + (uint32_t)k, salt);
        if (salt == 97) {
            PRAGMA_EXPANDED(omp target enter data ARRAYS36(MAP_TO))
        }
        PRAGMA_EXPANDED(omp target ARRAYS36(MAP_TOFROM))
        for (size_t j = 0; j < n; j++) {
            ARRAYS36(STEP_ARRAY)
        }
        if (salt == 97) {
            PRAGMA_EXPANDED(omp target exit data ARRAYS36(MAP_FROM))
        }
        for (int k = 0; k < 36; k++)
            ht_expect_host(all[k], want[k], n * sizeof(uint32_t),
                           salt == 96 ? "36 arrays mapped by the region"
                                      : "36 arrays present around the region");
    }
    ht_report("36 arrays: the last", all[35], n * sizeof(uint32_t));
    for (int k = 0; k < 36; k++)
        free(all[k]), free(want[k]);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "target_regions");
    test_to_and_from(6);
    test_tofrom(6);
    test_alloc_and_from();
    test_inside_target_data();
    test_implicit_and_reduction();
    test_device_pointers();
    test_if();
    test_devices();
    test_nowait();
    test_threads();
    test_present_regions(24);
    test_forwarded_shapes();
    test_pointer_references();
    test_many_arrays();
    return ob_check_finish("target_regions");
}
