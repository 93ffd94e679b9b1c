// Smallest OpenMP offload check for the LLVM 16 runtime bundle (see bundle_omp_runtime.sh).
// One `target teams distribute parallel for` over an array mapped tofrom; prints where the region
// ran and "offload_smoke: ok" when every element has the expected value, exits 1 otherwise.
// Built with the flags of build_defs/omp.bzl (target "nvptx" for the GPU, "host" for CPU runs).
#include <omp.h>
#include <stdio.h>

#define N 1048576

static double a[N];

int main(void) {
    for (int i = 0; i < N; ++i) a[i] = (double)i;
    int on_host = -1;
#pragma omp target teams distribute parallel for map(tofrom : a[0:N]) map(tofrom : on_host)
    for (int i = 0; i < N; ++i) {
        if (i == 0) on_host = omp_is_initial_device();
        a[i] = 2.0 * a[i] + 1.0;
    }
    long bad = 0;
    for (int i = 0; i < N; ++i) {
        if (a[i] != 2.0 * (double)i + 1.0) ++bad;
    }
    printf("offload_smoke: devices=%d default=%d region ran on %s\n", omp_get_num_devices(),
           omp_get_default_device(), on_host ? "the host (fallback)" : "a device");
    if (bad != 0) {
        printf("offload_smoke: FAILED, %ld of %d elements wrong\n", bad, N);
        return 1;
    }
    printf("offload_smoke: ok\n");
    return 0;
}
