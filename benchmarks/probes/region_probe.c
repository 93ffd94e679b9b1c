/* What one target region costs libomptarget when it moves nothing, by how its arrays reach the
 * kernel: ten arrays of 4 KiB already mapped (the runtime looks each up, counts it up and
 * down), the same arrays' device addresses passed with is_device_ptr (no look-up: the
 * arguments are literals), and a region with no array at all. 128 regions a repetition, the
 * three forms alternating, medians per region. It bounds what any hook that hands the kernel
 * to the runtime can reach for regions that map data. No ompbatch involved.
 * Build (nvptx, LLVM 16): clang -O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda
 *   -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 --cuda-path=/usr/local/cuda
 *   --libomptarget-nvptx-bc-path=/usr/lib/llvm-16/lib -Wno-unknown-cuda-version
 *   region_probe.c -o region_probe */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 512 /* doubles: 4 KiB */
#define REGIONS 128
#define REPS 11

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *a0, *a1, *a2, *a3, *a4, *a5, *a6, *a7, *a8, *a9;

static void mapped(void)
{
    for (int r = 0; r < REGIONS; r++) {
#pragma omp target teams distribute parallel for map(tofrom: a0[0:N], a1[0:N], a2[0:N], \
        a3[0:N], a4[0:N], a5[0:N], a6[0:N], a7[0:N], a8[0:N], a9[0:N])
        for (int i = 0; i < N; i++)
            a0[i] += a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i] + a8[i] + a9[i];
    }
}

static void literal(double **d)
{
    double *d0 = d[0], *d1 = d[1], *d2 = d[2], *d3 = d[3], *d4 = d[4], *d5 = d[5], *d6 = d[6],
           *d7 = d[7], *d8 = d[8], *d9 = d[9];
    for (int r = 0; r < REGIONS; r++) {
#pragma omp target teams distribute parallel for is_device_ptr(d0, d1, d2, d3, d4, d5, d6, \
        d7, d8, d9)
        for (int i = 0; i < N; i++)
            d0[i] += d1[i] + d2[i] + d3[i] + d4[i] + d5[i] + d6[i] + d7[i] + d8[i] + d9[i];
    }
}

static void empty(void)
{
    int n = N;
    for (int r = 0; r < REGIONS; r++) {
#pragma omp target teams distribute parallel for firstprivate(n)
        for (int i = 0; i < n; i++)
            (void)i;
    }
}

int main(void)
{
    double **all[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8, &a9};
    double *dev[10];
    for (int k = 0; k < 10; k++) {
        *all[k] = malloc(N * sizeof(double));
        for (int i = 0; i < N; i++)
            (*all[k])[i] = (double)(k + i);
    }
#pragma omp target enter data map(to: a0[0:N], a1[0:N], a2[0:N], a3[0:N], a4[0:N], a5[0:N], \
        a6[0:N], a7[0:N], a8[0:N], a9[0:N])
    int device = omp_get_default_device();
    for (int k = 0; k < 10; k++)
        dev[k] = omp_get_mapped_ptr(*all[k], device);
    double t[3][REPS];
    mapped(), literal(dev), empty(); /* warm-up */
    for (int rep = 0; rep < REPS; rep++) {
        double s = now_us();
        mapped();
        t[0][rep] = (now_us() - s) / REGIONS;
        s = now_us();
        literal(dev);
        t[1][rep] = (now_us() - s) / REGIONS;
        s = now_us();
        empty();
        t[2][rep] = (now_us() - s) / REGIONS;
    }
    static const char *const names[] = {"10 arrays mapped, present", "10 device pointers, "
                                        "is_device_ptr", "no arrays"};
    printf("region_probe: %d regions a repetition, %d repetitions, us a region\n", REGIONS,
           REPS);
    for (int f = 0; f < 3; f++) {
        qsort(t[f], REPS, sizeof(double), by_value);
        printf("%-34s min %7.1f  median %7.1f  max %7.1f\n", names[f], t[f][0], t[f][REPS / 2],
               t[f][REPS - 1]);
    }
#pragma omp target exit data map(from: a0[0:N], a1[0:N], a2[0:N], a3[0:N], a4[0:N], a5[0:N], \
        a6[0:N], a7[0:N], a8[0:N], a9[0:N])
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += a0[i];
    printf("checksum %.1f\n", sum);
    return 0;
}
