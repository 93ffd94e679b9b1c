/* What registering pageable host memory with the driver (cuMemHostRegister) costs, and what it
 * buys: for each size, the registration and its undoing (medians of repeated register /
 * unregister pairs on the same touched buffer, and the first registration of fresh pages on its
 * own), then one copy each way by three routes: the driver from pageable memory, the copy
 * engine straight from or into the registered buffer, and through pinned staging (the host
 * copies into or out of a cuMemHostAlloc buffer and the copy engine moves that), each copy
 * waited for by cuStreamSynchronize. Medians of REPS, microseconds. Last, how many updates of
 * one mapping a registration would need to pay for itself against the staged route, and what
 * the driver answers for a range inside a page already registered. Every destination is
 * poisoned first and checked byte for byte against fresh random bytes once per route.
 * Build: gcc -O2 -std=c11 -I/usr/local/cuda/include register_probe.c -o register_probe \
 *   -L/usr/local/cuda/lib64/stubs -lcuda
 * Run: ./register_probe */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "FAIL %s = %d line %d\n", #x, (int)r_, __LINE__);                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define MAX_REPS 41

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmpd);
    return v[n / 2];
}

static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static void fill_random(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        p[i] = (unsigned char)(rng >> 24);
    }
}

static CUstream stream;
static int failures;

static void check(const char *what, size_t bytes, const unsigned char *got,
                  const unsigned char *want)
{
    if (memcmp(got, want, bytes) != 0) {
        fprintf(stderr, "MISMATCH %s %zu bytes\n", what, bytes);
        failures++;
    }
}

/* Device bytes back into `out` by a plain synchronous copy, for checking. */
static void read_back(unsigned char *out, CUdeviceptr dev, size_t bytes)
{
    memset(out, 0xA5, bytes);
    CK(cuMemcpyDtoH(out, dev, bytes));
}

enum { ROUTE_PAGEABLE, ROUTE_REGISTERED, ROUTE_STAGED, ROUTES };
static const char *route_names[ROUTES] = {"pageable", "registered", "staged"};

/* One copy by `route`, host to device when h2d; returns its time. */
static double copy_once(int route, int h2d, unsigned char *host, unsigned char *pinned,
                        CUdeviceptr dev, size_t bytes)
{
    double t0 = now_us();
    if (h2d) {
        const unsigned char *src = host;
        if (route == ROUTE_STAGED) {
            memcpy(pinned, host, bytes);
            src = pinned;
        }
        CK(cuMemcpyHtoDAsync(dev, src, bytes, stream));
        CK(cuStreamSynchronize(stream));
    } else {
        CK(cuMemcpyDtoHAsync(route == ROUTE_STAGED ? pinned : host, dev, bytes, stream));
        CK(cuStreamSynchronize(stream));
        if (route == ROUTE_STAGED)
            memcpy(host, pinned, bytes);
    }
    return now_us() - t0;
}

static void probe_size(size_t bytes, int reps)
{
    unsigned char *host = aligned_alloc(4096, bytes);
    unsigned char *want = malloc(bytes), *got = malloc(bytes);
    void *pinned_v = NULL;
    CUdeviceptr dev;
    if (host == NULL || want == NULL || got == NULL) {
        fprintf(stderr, "FAIL host allocation of %zu bytes\n", bytes);
        exit(1);
    }
    CK(cuMemHostAlloc(&pinned_v, bytes, 0));
    unsigned char *pinned = pinned_v;
    CK(cuMemAlloc(&dev, bytes));
    fill_random(host, bytes);

    /* The first registration of these pages, then repeated pairs. */
    double t0 = now_us();
    CK(cuMemHostRegister(host, bytes, 0));
    double first_reg = now_us() - t0;
    t0 = now_us();
    CK(cuMemHostUnregister(host));
    double first_unreg = now_us() - t0;
    double reg[MAX_REPS], unreg[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        t0 = now_us();
        CK(cuMemHostRegister(host, bytes, 0));
        reg[r] = now_us() - t0;
        t0 = now_us();
        CK(cuMemHostUnregister(host));
        unreg[r] = now_us() - t0;
    }
    double reg_us = median(reg, reps), unreg_us = median(unreg, reps);

    double times[ROUTES][2];
    for (int route = 0; route < ROUTES; route++) {
        if (route == ROUTE_REGISTERED)
            CK(cuMemHostRegister(host, bytes, 0));
        for (int h2d = 1; h2d >= 0; h2d--) {
            double t[MAX_REPS];
            /* Checked once on fresh bytes, poisoned destination first. */
            if (h2d) {
                fill_random(host, bytes);
                memcpy(want, host, bytes);
                CK(cuMemsetD8(dev, 0x5A, bytes));
                copy_once(route, 1, host, pinned, dev, bytes);
                read_back(got, dev, bytes);
                check(route_names[route], bytes, got, want);
            } else {
                fill_random(want, bytes);
                CK(cuMemcpyHtoD(dev, want, bytes));
                memset(host, 0x3C, bytes);
                copy_once(route, 0, host, pinned, dev, bytes);
                check(route_names[route], bytes, host, want);
            }
            for (int r = 0; r < reps; r++)
                t[r] = copy_once(route, h2d, host, pinned, dev, bytes);
            times[route][h2d] = median(t, reps);
        }
        if (route == ROUTE_REGISTERED)
            CK(cuMemHostUnregister(host));
    }

    printf("%9zu | %9.1f %9.1f | %9.1f %9.1f |", bytes, first_reg, first_unreg, reg_us, unreg_us);
    for (int h2d = 1; h2d >= 0; h2d--)
        printf(" %9.1f %9.1f %9.1f |", times[ROUTE_PAGEABLE][h2d], times[ROUTE_REGISTERED][h2d],
               times[ROUTE_STAGED][h2d]);
    for (int h2d = 1; h2d >= 0; h2d--) {
        double saved = times[ROUTE_STAGED][h2d] - times[ROUTE_REGISTERED][h2d];
        if (saved > 0)
            printf(" %8.0f", (reg_us + unreg_us) / saved);
        else
            printf(" %8s", "never");
    }
    printf("\n");
    CK(cuMemFree(dev));
    CK(cuMemFreeHost(pinned));
    free(host);
    free(want);
    free(got);
}

/* What the driver says to a second registration of a range sharing a page with a registered
 * one, and to a registration of a range that does not start on a page. */
static void probe_overlap(void)
{
    unsigned char *block = aligned_alloc(4096, 4 * 4096);
    if (block == NULL)
        exit(1);
    memset(block, 1, 4 * 4096);
    CK(cuMemHostRegister(block + 100, 4096, 0));
    CUresult second = cuMemHostRegister(block + 4096 + 200, 4096, 0);
    printf("unaligned 4 KiB range: registered; a second range sharing its page: %d\n", (int)second);
    if (second == CUDA_SUCCESS)
        CK(cuMemHostUnregister(block + 4096 + 200));
    CK(cuMemHostUnregister(block + 100));
    free(block);
}

int main(void)
{
    CUdevice device;
    CUcontext ctx;
    char name[128];
    CK(cuInit(0));
    CK(cuDeviceGet(&device, 0));
    CK(cuDeviceGetName(name, sizeof name, device));
    CK(cuDevicePrimaryCtxRetain(&ctx, device));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    printf("%s\n", name);
    printf("%9s | %19s | %19s | %29s | %29s | %17s\n", "", "first time (us)", "median (us)",
           "to device (us)", "from device (us)", "updates to pay");
    printf("%9s | %9s %9s | %9s %9s | %9s %9s %9s | %9s %9s %9s | %8s %8s\n", "bytes", "reg",
           "unreg", "reg", "unreg", "pageable", "regist.", "staged", "pageable", "regist.",
           "staged", "to", "from");
    static const size_t sizes[] = {4096, 65536, 1 << 20, 16 << 20, 64 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        probe_size(sizes[i], sizes[i] >= (16 << 20) ? 11 : MAX_REPS);
    probe_overlap();
    printf(failures == 0 ? "all data checked\n" : "%d MISMATCHES\n", failures);
    CK(cuStreamDestroy(stream));
    CK(cuDevicePrimaryCtxRelease(device));
    return failures == 0 ? 0 : 1;
}
