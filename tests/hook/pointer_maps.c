/*
 * The OpenMP hook test of pointer-based maps: clang marks sections of global pointers
 * PTR_AND_OBJ (map the pointer, map its object, attach), in data constructs and in updates.
 *   - a weather-style loop: global pointer arrays in a `target data`, kernels every step, halo
 *     rows moved with `target update from` / `to` of sections of the global pointers;
 *   - `enter data` / `update` / `exit data` of global pointer sections, with reference counts
 *     above one and `always`;
 *   - an array of pointers whose elements are attached afterwards (an attachment inside a
 *     mapped array): updates of that array must keep the device pointers the runtime wrote;
 *   - struct members (left to the runtime) beside them.
 * Every result is checked on the host, and on the device where the data stays mapped.
 * A plain OpenMP program: compare.sh runs it with and without the hook and wants the same
 * report; see BUILD.bazel for the hook statistics it expects.
 *
 * Usage: pointer_maps <seed>. Prints checksums of every sub-case and
 * "pointer_maps: N checks passed, M failed"; exits 1 on any failure.
 */
#include "hook_test.h"


static uint32_t *grid_u, *grid_v, *grid_w;

/* A 1-D "grid" of rows of w elements: each step a kernel computes every interior row from the
 * rows beside it (into grid_w, then back into grid_u: no element reads one the same kernel
 * writes); the host owns the halo rows at both ends (reads them back, writes new ones). */
static void test_halo_loop(void)
{
    uint64_t r = ht_state(1);
    size_t rows = ht_between(&r, 8, 40), w = ht_between(&r, 16, 400), n = rows * w;
    grid_u = ht_malloc(n * sizeof(uint32_t));
    grid_v = ht_malloc(n * sizeof(uint32_t));
    grid_w = ht_malloc(n * sizeof(uint32_t));
    ht_fill_random(grid_u, n * sizeof(uint32_t), 2);
    ht_fill_random(grid_v, n * sizeof(uint32_t), 3);
    ht_fill_random(grid_w, n * sizeof(uint32_t), 4);
    uint32_t *u = ht_dup(grid_u, n * sizeof(uint32_t)); /* what the device u must hold */
    uint32_t *v = ht_dup(grid_v, n * sizeof(uint32_t));
    uint32_t *next = ht_malloc(n * sizeof(uint32_t));
#pragma omp target data map(tofrom : grid_u[0:n]) map(to : grid_v[0:n]) map(alloc : grid_w[0:n])
    {
        for (uint32_t step = 0; step < 12; step++) {
#pragma omp target teams distribute parallel for
            for (size_t k = w; k < n - w; k++)
                grid_w[k] = ht_mix32(grid_u[k - w] + grid_u[k + w] + grid_v[k], step);
#pragma omp target teams distribute parallel for
            for (size_t k = w; k < n - w; k++)
                grid_u[k] = grid_w[k];
            for (size_t k = w; k < n - w; k++)
                next[k] = ht_mix32(u[k - w] + u[k + w] + v[k], step);
            memcpy(u + w, next + w, (n - 2 * w) * sizeof(uint32_t));
            /* The halo: the rows next to the edges back, new edge rows out. */
            ht_fill_unlike(grid_u + w, u + w, w * sizeof(uint32_t), 100 + step);
            ht_fill_unlike(grid_u + n - 2 * w, u + n - 2 * w, w * sizeof(uint32_t), 200 + step);
            /* clang takes one section of a variable per clause: one construct per row. */
#pragma omp target update from(grid_u[w:w])
#pragma omp target update from(grid_u[n - 2 * w:w])
            ht_expect_host(grid_u + w, u + w, w * sizeof(uint32_t), "halo loop: row 1 back");
            ht_expect_host(grid_u + n - 2 * w, u + n - 2 * w, w * sizeof(uint32_t),
                           "halo loop: the row before the last back");
            for (size_t k = 0; k < w; k++) {
                u[k] = ht_mix32(u[k] ^ u[k + w], 300 + step);
                u[n - w + k] = ht_mix32(u[n - w + k] ^ u[n - 2 * w + k], 400 + step);
            }
            memcpy(grid_u, u, w * sizeof(uint32_t));
            memcpy(grid_u + n - w, u + n - w, w * sizeof(uint32_t));
#pragma omp target update to(grid_u[0:w])
#pragma omp target update to(grid_u[n - w:w])
            if (step % 4 == 3)
                ht_expect_device(grid_u, u, n * sizeof(uint32_t), "halo loop: device u");
        }
        /* The whole array back in one update of the global pointer. */
        ht_fill_unlike(grid_u, u, n * sizeof(uint32_t), 500);
#pragma omp target update from(grid_u[0:n])
        ht_expect_host(grid_u, u, n * sizeof(uint32_t), "halo loop: u by update");
        /* v was map(to:): its device copy must be the host's. */
        ht_expect_device(grid_v, v, n * sizeof(uint32_t), "halo loop: device v");
        ht_fill_unlike(grid_u, u, n * sizeof(uint32_t), 501);
    }
    /* The end of target data brings u back whole. */
    ht_expect_host(grid_u, u, n * sizeof(uint32_t), "halo loop: u after the end");
    OB_CHECK(ht_is_unmapped(grid_u, n * sizeof(uint32_t)), "halo loop: u still mapped");
    ht_report("halo loop: u", grid_u, n * sizeof(uint32_t));
    free(u), free(v), free(next), free(grid_u), free(grid_v), free(grid_w);
}

static unsigned char *gp, *gq;

/* enter / update / exit of global pointer sections, counts above one, always. */
static void test_enter_exit(void)
{
    uint64_t r = ht_state(10);
    size_t n = ht_between(&r, 100, 20000), m = ht_between(&r, 100, 20000);
    ht_buf a = ht_buf_new(n, 11), b = ht_buf_new(m, 12);
    gp = a.p;
    gq = b.p;
#pragma omp target enter data map(to : gp[0:n], gq[0:m])
    ht_buf_expect(&a, 0, n, "enter: gp");
    ht_buf_expect(&b, 0, m, "enter: gq");
    /* A second reference, then updates both ways. */
#pragma omp target enter data map(to : gp[0:n])
    ht_buf_scramble(&a, 0, n, 13);
    ht_buf_scramble(&b, 0, m, 14);
    ht_buf_poison(&a, 15);
    ht_buf_poison(&b, 16);
#pragma omp target update from(gp[0:n], gq[0:m])
    ht_buf_copied_from(&a, 0, n);
    ht_buf_copied_from(&b, 0, m);
    ht_buf_expect(&a, 0, n, "update from: gp");
    ht_buf_expect(&b, 0, m, "update from: gq");
    size_t lo = ht_below(&r, n / 2), len = 1 + ht_below(&r, n - lo - 1);
    ht_buf_host_new(&a, lo, len, 17);
#pragma omp target update to(gp[lo:len])
    ht_buf_copied_to(&a, lo, len);
    ht_buf_expect(&a, 0, n, "update to: a part of gp");
    /* exit from at count 2 -> 1: nothing comes back; always, from at 1 -> 0: it does. */
    ht_buf_scramble(&a, 0, n, 18);
    ht_buf_poison(&a, 19);
#pragma omp target exit data map(from : gp[0:n])
    ht_expect_host(a.p, a.host, n, "exit at count 2: gp unchanged");
#pragma omp target exit data map(always, from : gp[0:n])
    ht_buf_copied_from(&a, 0, n);
    ht_buf_expect_host(&a, "exit always: gp");
    ht_buf_scramble(&b, 0, m, 20);
    ht_buf_poison(&b, 21);
#pragma omp target exit data map(from : gq[0:m])
    ht_buf_copied_from(&b, 0, m);
    ht_buf_expect_host(&b, "exit: gq");
    ht_report("enter/exit: gp", a.p, n);
    ht_report("enter/exit: gq", b.p, m);
    ht_buf_free(&a), ht_buf_free(&b);
}

/* An array of pointers mapped first, then each element's object: the attachments write device
 * addresses into the array's device copy. A later `update to` of the array copies host
 * pointers over them, and the runtime writes the device pointers back after it: the kernel
 * must still reach every object. */
static uint32_t **table;

static void test_attached_inside(void)
{
    enum { ROWS = 6 };
    size_t w = 257;
    table = ht_malloc(ROWS * sizeof(*table));
    uint32_t *want = ht_malloc(ROWS * w * sizeof(uint32_t));
    for (int i = 0; i < ROWS; i++) {
        table[i] = ht_malloc(w * sizeof(uint32_t));
        ht_fill_random(table[i], w * sizeof(uint32_t), 30 + (uint64_t)i);
    }
#pragma omp target enter data map(to : table[0:ROWS])
    for (int i = 0; i < ROWS; i++) {
        uint32_t *row = table[i];
        (void)row;
#pragma omp target enter data map(to : table[i][0:w])
    }
    for (int round = 0; round < 3; round++) {
#pragma omp target update to(table[0:ROWS])
        uint32_t sum = 0, want_sum = 0;
        for (int i = 0; i < ROWS; i++)
            for (size_t j = 0; j < w; j++)
                want_sum += ht_mix32(table[i][j], (uint32_t)round);
#pragma omp target map(tofrom : sum)
        for (int i = 0; i < ROWS; i++)
            for (size_t j = 0; j < w; j++)
                sum += ht_mix32(table[i][j], (uint32_t)round);
        OB_CHECK(sum == want_sum, "attached inside, round %d: the kernel summed %u, want %u", round,
              sum, want_sum);
    }
    for (int i = 0; i < ROWS; i++) {
#pragma omp target exit data map(from : table[i][0:w])
        memcpy(want + (size_t)i * w, table[i], w * sizeof(uint32_t));
    }
#pragma omp target exit data map(release : table[0:ROWS])
    ht_report("attached inside: rows", want, ROWS * w * sizeof(uint32_t));
    for (int i = 0; i < ROWS; i++)
        free(table[i]);
    free(table), free(want);
}

/* Struct members with pointers: the runtime's, beside a global pointer the hook may move. */
typedef struct field {
    uint32_t *data;
    size_t n;
} field;

static void test_struct_beside(void)
{
    size_t n = 999;
    field f = {ht_malloc(n * sizeof(uint32_t)), n};
    ht_fill_random(f.data, n * sizeof(uint32_t), 40);
    ht_buf g = ht_buf_new(3 * n, 41);
    gp = g.p;
    uint32_t *want = ht_malloc(n * sizeof(uint32_t));
    for (size_t j = 0; j < n; j++)
        want[j] = ht_mix32(f.data[j], 5) ^ (uint32_t)g.p[j];
#pragma omp target enter data map(to : f, f.data[0:n], gp[0:3 * n])
#pragma omp target teams distribute parallel for map(alloc : f, f.data[0:n], gp[0:3 * n])
    for (size_t j = 0; j < f.n; j++)
        f.data[j] = ht_mix32(f.data[j], 5) ^ (uint32_t)gp[j];
#pragma omp target update from(f.data[0:n], gp[0:3 * n])
    ht_expect_host(f.data, want, n * sizeof(uint32_t), "struct beside: data");
    ht_expect_host(gp, g.host, 3 * n, "struct beside: gp");
#pragma omp target exit data map(release : f, f.data[0:n], gp[0:3 * n])
    ht_report("struct beside: data", f.data, n * sizeof(uint32_t));
    free(f.data), free(want), ht_buf_free(&g);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "pointer_maps");
    test_halo_loop();
    test_enter_exit();
    test_attached_inside();
    test_struct_beside();
    return ob_check_finish("pointer_maps");
}
