/*
 * One strided `target update to` of column 1 of a 1024 x 1024 grid of doubles, repeated, under
 * LLVM 16 host offload (OMP_TARGET_OFFLOAD=MANDATORY), hook linked: the hook's CPU cost of a
 * repeated strided update. Build as the OpenMP examples are built (build_defs/omp.bzl, target
 * "host", hook = True), or by hand:
 *   /usr/lib/llvm-16/bin/clang -std=c11 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
 *     -Iinclude column_update_probe.c bazel-bin/libompbatch.a -ldl -pthread -lm \
 *     -L/usr/lib/llvm-16/lib -Wl,-rpath,/usr/lib/llvm-16/lib -o column_update_probe
 * Usage: column_update_probe [repetitions]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define N 1024
int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1000;
    double (*g)[N] = malloc(sizeof(double) * N * N);
    for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) g[i][j] = i + j;
#pragma omp target enter data map(to : g[0:N][0:N])
    double t0 = omp_get_wtime();
    for (int r = 0; r < reps; r++) {
#pragma omp target update to(g[0:N][1:1])
    }
    double t1 = omp_get_wtime();
    printf("%.3f us per column update\n", (t1 - t0) * 1e6 / reps);
    return 0;
}
