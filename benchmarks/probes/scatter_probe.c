/* What the host side of a rectangle's x face costs: 65 536 pieces of 8 B, 2 KiB apart (the
 * face x = 0 of a 256^3 grid of doubles, a 128 MiB span of pageable memory), written from a
 * contiguous 512 KiB buffer (the unpack of a device -> host face) and read into it (the pack
 * of host -> device), by 1, 2, 4, 8 and 16 threads, the grid's pages touched once first. Also
 * one 512 KiB memcpy, the contiguous bound. Medians of 21 after 3 warm-ups, microseconds.
 * Build: gcc -O2 -std=c11 -pthread scatter_probe.c -o scatter_probe */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 256
#define PIECES (N * N)
#define REPS 21

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *grid, *buf;
static int threads, scatter;
static atomic_int generation, finished;

static void part(int id)
{
    size_t per = (PIECES + threads - 1) / threads, lo = id * per;
    size_t hi = lo + per > PIECES ? PIECES : lo + per;
    if (scatter)
        for (size_t k = lo; k < hi; k++)
            grid[k * N] = buf[k];
    else
        for (size_t k = lo; k < hi; k++)
            buf[k] = grid[k * N];
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg, seen = 0;
    for (;;) {
        int g;
        while ((g = atomic_load(&generation)) == seen)
            ;
        if (g < 0)
            return NULL;
        seen = g;
        part(id);
        atomic_fetch_add(&finished, 1);
    }
}

int main(void)
{
    grid = malloc((size_t)N * N * N * sizeof(double));
    buf = malloc((size_t)PIECES * sizeof(double));
    double *dst = malloc((size_t)PIECES * sizeof(double));
    memset(grid, 1, (size_t)N * N * N * sizeof(double));
    memset(buf, 2, (size_t)PIECES * sizeof(double));
    double t[REPS];
    for (int r = -3; r < REPS; r++) {
        double a = now_us();
        memcpy(dst, buf, (size_t)PIECES * sizeof(double));
        if (r >= 0)
            t[r] = now_us() - a;
    }
    qsort(t, REPS, sizeof t[0], cmp);
    printf("one 512 KiB memcpy: %.1f us\n", t[REPS / 2]);
    int counts[] = {1, 2, 4, 8, 16};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        threads = counts[c];
        pthread_t th[16];
        for (int i = 1; i < threads; i++)
            pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
        for (scatter = 0; scatter < 2; scatter++) {
            for (int r = -3; r < REPS; r++) {
                atomic_store(&finished, 0);
                double a = now_us();
                atomic_fetch_add(&generation, 1);
                part(0);
                while (atomic_load(&finished) < threads - 1)
                    ;
                if (r >= 0)
                    t[r] = now_us() - a;
            }
            qsort(t, REPS, sizeof t[0], cmp);
            printf("threads %2d: %s 65536 x 8 B over 128 MiB: median %7.1f us (min %7.1f)\n",
                   threads, scatter ? "scatter (unpack)" : "gather (pack)   ", t[REPS / 2], t[0]);
        }
        atomic_store(&generation, -1);
        for (int i = 1; i < threads; i++)
            pthread_join(th[i], NULL);
        atomic_store(&generation, 0);
    }
    return 0;
}
