/*
 * A 2-D domain whose halo columns move with strided `target update`s: the shape of exchange
 * the hook batches as one plan per construct.
 *
 * The grid u[NY][NX] (doubles, periodic in x) lives on the device. Every step:
 *   1. a `target teams distribute parallel for` relaxes the interior columns [1, NX-1) with a
 *      3-point stencil along x (each row on its own), from the previous values;
 *   2. `target update from(u[0:NY][1:1], v[0:NY][NX-2:1])` brings back the two edge columns of
 *      the interior (two strided items, NY pieces of 8 B each);
 *   3. the host wraps them around: column 0 gets column NX-2, column NX-1 gets column 1;
 *   4. `target update to(u[0:NY][0:1], v[0:NY][NX-1:1])` sends the ghost columns back.
 * The bounds are constants: clang 16 describes a section as non-contiguous only then (with
 * variable bounds it maps the enclosing contiguous range, every byte of it).
 *
 * The program runs the steps with the hook off and on (or once when the hook is not linked),
 * from the same seeded grid, times them, and requires both results to be byte-identical to a
 * host-only computation of the same steps. It is a plain OpenMP program: without ompbatch it
 * builds and runs the same.
 *
 * Usage: halo [--steps N] [--seed N] [--quick]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hook_api.h"

#define NY 1024
#define NX 256

static double u[NY][NX];    /* the device's grid (mapped) and, on the host, its halo copies */
static double ref[NY][NX];  /* the host-only computation */
static double start[NY][NX];

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* One row's interior from its previous values (the same arithmetic on both sides). */
#pragma omp declare target
static inline void relax_row(const double *in, double *out)
{
    /* No fused multiply-add on either side: host and device must agree to the bit. */
#pragma clang fp contract(off)
    for (int x = 1; x < NX - 1; x++)
        out[x] = 0.25 * in[x - 1] + 0.5 * in[x] + 0.25 * in[x + 1];
}
#pragma omp end declare target

static void relax_device(void)
{
    double(*g)[NX] = u;
#pragma omp target teams distribute parallel for map(alloc: g[0:NY][0:NX])
    for (int y = 0; y < NY; y++) {
        double row[NX];
        for (int x = 0; x < NX; x++)
            row[x] = g[y][x];
        relax_row(row, g[y]);
    }
}

static void wrap_host(double (*g)[NX])
{
    for (int y = 0; y < NY; y++) {
        g[y][0] = g[y][NX - 2];
        g[y][NX - 1] = g[y][1];
    }
}

/* The exchange: two strided items each way (v names the same grid: one construct may not
 * name one variable twice). */
static void exchange(void)
{
    double(*v)[NX] = u;
#pragma omp target update from(u[0:NY][1:1], v[0:NY][NX - 2:1])
    wrap_host(u);
#pragma omp target update to(u[0:NY][0:1], v[0:NY][NX - 1:1])
}

static void reference(int steps)
{
    memcpy(ref, start, sizeof ref);
    double row[NX];
    for (int s = 0; s < steps; s++) {
        for (int y = 0; y < NY; y++) {
            memcpy(row, ref[y], sizeof row);
            relax_row(row, ref[y]);
        }
        wrap_host(ref);
    }
}

/* One timed run from the start grid; returns the number of wrong bytes. */
static long run(const hook_api *api, int on, int steps, double *us, ompbatch_hook_stats *delta)
{
    memcpy(u, start, sizeof u);
    hook_api_set(api, on);
#pragma omp target enter data map(to: u)
    ompbatch_hook_stats before = hook_api_stats(api);
    double t0 = now_us();
    for (int s = 0; s < steps; s++) {
        relax_device();
        exchange();
    }
    *us = now_us() - t0;
    ompbatch_hook_stats after = hook_api_stats(api);
    memset(delta, 0, sizeof *delta);
    hook_stats_accumulate(delta, &before, &after);
#pragma omp target exit data map(from: u)
    hook_api_set(api, 0);
    long wrong = 0;
    const unsigned char *got = (const unsigned char *)u, *want = (const unsigned char *)ref;
    for (size_t i = 0; i < sizeof u; i++)
        wrong += got[i] != want[i];
    return wrong;
}

int main(int argc, char **argv)
{
    int steps = 200;
    uint64_t seed = 12345;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            steps = 10;
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: halo [--steps N] [--seed N] [--quick]\n");
            return 2;
        }
    }
    if (steps < 1) {
        fprintf(stderr, "halo: --steps must be positive\n");
        return 2;
    }
    uint64_t x = seed * 2654435761u + 1;
    for (int y = 0; y < NY; y++)
        for (int c = 0; c < NX; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            start[y][c] = (double)(x % 1000003) / 1000003.0;
        }
    wrap_host(start);
    reference(steps);
    printf("halo: %d x %d doubles, %d steps, 2 columns each way per step, %d device(s)\n", NY,
           NX, steps, omp_get_num_devices());
    hook_api api = hook_api_lookup();
    hook_api_probe(&api, stdout);
    int modes = api.can_enable ? 2 : 1;
    double us[2] = {0, 0};
    ompbatch_hook_stats delta[2];
    long wrong = 0;
    for (int on = 0; on < modes; on++) {
        long bad = run(&api, on, steps, &us[on], &delta[on]);
        printf("hook %s: %10.1f us per step, %" PRIu64 " items batched, %ld wrong bytes\n",
               on ? "on " : "off", us[on] / steps, hook_stats_batched_items(&delta[on]), bad);
        wrong += bad;
        if (on && hook_stats_batched_items(&delta[on]) < 4 * (uint64_t)steps) {
            fprintf(stderr, "halo: the hook batched %" PRIu64 " items, expected %d (4 a step)\n",
                    hook_stats_batched_items(&delta[on]), 4 * steps);
            wrong++;
        }
    }
    if (modes == 2)
        printf("halo: hook off/on %.2fx per step\n", us[0] / us[1]);
    if (wrong) {
        fprintf(stderr, "halo: results differ from the host computation\n");
        return 1;
    }
    printf("halo: results identical to the host computation\n");
    return 0;
}
