/* How long a small construct's round trip takes by each way of moving it and of learning that it
 * is done: the copy engine or the copy kernel, and the stream query or a word the kernel's last
 * block writes into pinned host memory. One 4 KiB piece or 16 of them, host to device from
 * pageable memory (packed into pinned staging first where the way needs it) and device to
 * pageable host (unpacked after). Each way back to back 2000 times after 200 warm-ups; the
 * median, the 10th percentile and the launch call's median, microseconds; every destination
 * checked against its source once per way.
 * Build: nvcc -cubin -arch=sm_90 -o wait_probe.cubin wait_probe.cu;
 *   gcc -O2 -std=c11 -I/usr/local/cuda/include wait_probe.c -o wait_probe \
 *   -L/usr/local/cuda/lib64/stubs -lcuda
 * Run: ./wait_probe wait_probe.cubin [blocking|auto] [wc]  ("blocking": the context's
 * scheduling is CU_CTX_SCHED_BLOCKING_SYNC, as libomptarget's may be; "wc": the pinned staging
 * is allocated write-combined, which the CPU writes and the GPU reads over the bus without
 * snooping, and the CPU reads uncached: the "from" rows then time a slow unpack) */
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
#define REPS 2000
#define WARM 200
#define PIECE 4096

typedef struct {
    unsigned long long dst, src, bytes;
} wp_piece;
typedef struct {
    unsigned long long count;
    wp_piece piece[32];
} wp_pieces;
typedef struct {
    unsigned long long count;
    wp_piece piece[16];
} wp_pieces16;

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

static CUstream stream;
static CUfunction k_copy, k_word, k_word16;
static CUdeviceptr word_dev;
static double queries, query_us;
static unsigned char *pageable_src, *pageable_dst, *pinned;
static CUdeviceptr dev, counter;
static unsigned int *word, word_value;
static double launch_us;

static void query_wait(void)
{
    CUresult r;
    double t0 = now_us();
    do {
        queries++;
    } while ((r = cuStreamQuery(stream)) == CUDA_ERROR_NOT_READY);
    query_us += now_us() - t0;
    CK(r);
}
/* The stream writes the next value into the word after its earlier work. */
static void memop_word(void)
{
    word_value++;
    CK(cuStreamWriteValue32(stream, word_dev, word_value, CU_STREAM_WRITE_VALUE_DEFAULT));
}
static void word_wait(void)
{
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != word_value)
        __builtin_ia32_pause();
}
static void launch(int pieces, int h2d, int with_word)
{
    wp_pieces t = {.count = (unsigned long long)pieces};
    wp_pieces16 t16;
    for (int i = 0; i < pieces; i++) {
        CUdeviceptr d = dev + (CUdeviceptr)i * PIECE;
        unsigned long long h = (unsigned long long)(uintptr_t)(pinned + (size_t)i * PIECE);
        t.piece[i] = (wp_piece){h2d ? d : h, h2d ? h : d, PIECE};
    }
    t16.count = t.count;
    memcpy(t16.piece, t.piece, sizeof t16.piece);
    double t0 = now_us();
    if (with_word == 2) {
        word_value++;
        void *params[] = {&t16, &counter, &word, &word_value};
        CK(cuLaunchKernel(k_word16, pieces ? pieces : 1, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    } else if (with_word) {
        word_value++;
        void *params[] = {&t, &counter, &word, &word_value};
        CK(cuLaunchKernel(k_word, pieces ? pieces : 1, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    } else {
        void *params[] = {&t};
        CK(cuLaunchKernel(k_copy, pieces ? pieces : 1, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    }
    launch_us = now_us() - t0;
}

/* The ways, by index: the copy engine from or to pageable memory, or through pinned staging, the
 * wait a stream query or a word the stream writes after the copy (a stream memory operation);
 * the copy kernel over the bus, the wait a query, a word its last block writes, or a word the
 * stream writes after it; the same with a 16-slot parameter; an empty kernel. */
static const char *ways[] = {"engine-pageable", "engine-staged", "engine-memop", "kernel-query",
                             "kernel-word", "kernel-memop", "kernel16-word", "empty-query",
                             "empty-word"};
#define WAYS 9
static int staged_way(int way)
{
    return way >= 1 && way <= 6;
}

static void round_trip(int way, int pieces, int h2d)
{
    size_t bytes = (size_t)pieces * PIECE;
    if (h2d && staged_way(way))
        memcpy(pinned, pageable_src, bytes);
    double t0;
    switch (way) {
    case 0:
        for (int i = 0; i < pieces; i++) {
            t0 = now_us();
            if (h2d)
                CK(cuMemcpyHtoDAsync(dev + (CUdeviceptr)i * PIECE, pageable_src + (size_t)i * PIECE,
                                     PIECE, stream));
            else
                CK(cuMemcpyDtoHAsync(pageable_dst + (size_t)i * PIECE, dev + (CUdeviceptr)i * PIECE,
                                     PIECE, stream));
            launch_us = now_us() - t0;
        }
        query_wait();
        break;
    case 1:
    case 2:
        t0 = now_us();
        if (h2d)
            CK(cuMemcpyHtoDAsync(dev, pinned, bytes, stream));
        else
            CK(cuMemcpyDtoHAsync(pinned, dev, bytes, stream));
        launch_us = now_us() - t0;
        if (way == 1) {
            query_wait();
        } else {
            memop_word();
            word_wait();
        }
        break;
    case 3:
        launch(pieces, h2d, 0);
        query_wait();
        break;
    case 4:
        launch(pieces, h2d, 1);
        word_wait();
        break;
    case 5:
        launch(pieces, h2d, 0);
        memop_word();
        word_wait();
        break;
    case 6:
        launch(pieces, h2d, 2);
        word_wait();
        break;
    case 7:
        launch(0, h2d, 0);
        query_wait();
        break;
    case 8:
        launch(0, h2d, 1);
        word_wait();
        break;
    }
    if (!h2d && staged_way(way))
        memcpy(pageable_dst, pinned, bytes);
}

static void check(int way, int pieces, int h2d)
{
    size_t bytes = (size_t)pieces * PIECE;
    if (way >= 7)
        return;
    for (size_t i = 0; i < bytes; i++)
        pageable_src[i] = (unsigned char)rand();
    if (h2d) {
        CK(cuMemsetD8(dev, 0xA5, bytes));
        round_trip(way, pieces, 1);
        CK(cuStreamSynchronize(stream));
        CK(cuMemcpyDtoH(pageable_dst, dev, bytes));
    } else {
        /* From pageable memory the upload may return before its bytes land, and it runs on
         * the legacy stream, which the probe's non-blocking stream does not wait for. */
        CK(cuMemcpyHtoD(dev, pageable_src, bytes));
        CK(cuCtxSynchronize());
        memset(pageable_dst, 0x5A, bytes);
        round_trip(way, pieces, 0);
    }
    if (memcmp(pageable_dst, pageable_src, bytes) != 0) {
        fprintf(stderr, "FAIL way %d pieces %d h2d %d: data differ\n", way, pieces, h2d);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s wait_probe.cubin [blocking|auto] [wc]\n", argv[0]);
        return 2;
    }
    CK(cuInit(0));
    CUdevice device;
    CK(cuDeviceGet(&device, 0));
    int blocking = argc > 2 && strcmp(argv[2], "blocking") == 0;
    int write_combined = argc > 3 && strcmp(argv[3], "wc") == 0;
    CK(cuDevicePrimaryCtxSetFlags(device, blocking ? CU_CTX_SCHED_BLOCKING_SYNC : CU_CTX_SCHED_AUTO));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, device));
    CK(cuCtxSetCurrent(ctx));
    CUmodule module;
    CK(cuModuleLoad(&module, argv[1]));
    CK(cuModuleGetFunction(&k_copy, module, "wp_copy"));
    CK(cuModuleGetFunction(&k_word, module, "wp_copy_word"));
    CK(cuModuleGetFunction(&k_word16, module, "wp_copy_word16"));
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    size_t bytes = 16 * PIECE;
    pageable_src = malloc(bytes);
    pageable_dst = malloc(bytes);
    CK(cuMemHostAlloc((void **)&pinned, bytes,
                      CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE |
                          (write_combined ? CU_MEMHOSTALLOC_WRITECOMBINED : 0)));
    CK(cuMemHostAlloc((void **)&word, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    *word = 0;
    CK(cuMemHostGetDevicePointer(&word_dev, word, 0));
    CK(cuMemAlloc(&dev, bytes));
    CK(cuMemAlloc(&counter, 64));
    CK(cuMemsetD8(counter, 0, 64));
    printf("context %s, staging %s\n", blocking ? "blocking-sync" : "auto",
           write_combined ? "write-combined" : "cached");
    CUresult memops = cuStreamWriteValue32(stream, word_dev, 0, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (memops == CUDA_SUCCESS)
        memops = cuStreamSynchronize(stream);
    if (memops != CUDA_SUCCESS)
        printf("stream memory operations unavailable (%d): no memop ways\n", (int)memops);
    static double t[REPS], l[REPS];
    for (int h2d = 1; h2d >= 0; h2d--)
        for (int pieces = 1; pieces <= 16; pieces *= 16)
            for (int way = 0; way < WAYS; way++) {
                if (way >= 7 && (pieces != 1 || !h2d))
                    continue;
                if ((way == 2 || way == 5) && memops != CUDA_SUCCESS)
                    continue;
                if (way == 0 && pieces == 16 && !h2d)
                    continue; /* 140-750 us a round trip: known, and too slow to repeat */
                check(way, pieces, h2d);
                queries = query_us = 0;
                for (int r = -WARM; r < REPS; r++) {
                    double t0 = now_us();
                    round_trip(way, pieces, h2d);
                    if (r >= 0) {
                        t[r] = now_us() - t0;
                        l[r] = launch_us;
                    }
                }
                check(way, pieces, h2d);
                qsort(t, REPS, sizeof t[0], cmpd);
                qsort(l, REPS, sizeof l[0], cmpd);
                printf("%-4s %2d x 4 KiB %-16s median %6.2f p10 %6.2f launch call %5.2f", h2d ? "to" : "from",
                       pieces, ways[way], t[REPS / 2], t[REPS / 10], l[REPS / 2]);
                if (queries > 0)
                    printf(" queries %5.1f a trip, %5.2f us each", queries / (REPS + WARM),
                           query_us / queries);
                printf("\n");
            }
    printf("all data checked\n");
    return 0;
}
