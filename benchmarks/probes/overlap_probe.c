/* Whether a small `update to` gains by launching the copy kernel before the CPU packs its bytes:
 * 16 pieces of 4 KiB from pageable memory, packed into pinned staging, read over the bus by the
 * copy kernel (one block a piece, the pieces as the launch's parameter), done when the kernel's
 * last block writes a word into pinned host memory. The ways:
 *   pack-launch        the main thread packs, then launches (the library since 2026-12-05);
 *   shared-launch      the main thread and one spinning helper pack half each, then launch;
 *   launch-spin        launch first, each block waiting (one thread, a system-scope acquire
 *                      load) for a go word the main thread sets after packing;
 *   waitvalue          cuStreamWaitValue32 on the go word, the launch, then the pack and the
 *                      word: the stream, not the blocks, waits;
 *   helper-spin        launch-spin with the pack on the helper while the main thread launches;
 *   helper-waitvalue   waitvalue with the pack on the helper while the main thread launches.
 * Rounds of 200 round trips per way, the ways in turn, ROUNDS rounds after a warm-up; per way
 * the median of each round's median and the range of the round medians, microseconds. Then
 * every way 300 times more on fresh random bytes, the device poisoned first, each checked byte
 * for byte (the staging is reused by every round trip, so a kernel that read stale bytes fails).
 * Build: nvcc -cubin -arch=sm_90 -o overlap_probe.cubin overlap_probe.cu;
 *   gcc -O2 -std=c11 -pthread -I/usr/local/cuda/include overlap_probe.c -o overlap_probe \
 *   -L/usr/local/cuda/lib64/stubs -lcuda
 * Run: ./overlap_probe overlap_probe.cubin [blocking] */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
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
#define PIECES 16
#define PIECE 4096
#define BYTES (PIECES * PIECE)
#define PER_ROUND 200
#define ROUNDS 10
#define CHECKS 300

typedef struct {
    unsigned long long dst, src, bytes;
} op_piece;
typedef struct {
    unsigned long long count;
    op_piece piece[32];
} op_pieces;

static CUfunction k_copy, k_go;
static CUstream stream;
static unsigned char *src, *pinned, *back;
static CUdeviceptr dev, counter, go_dev;
static unsigned int *word, *go, value;
static op_pieces table;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The helper packs [from, to) of the bytes when asked, spinning between jobs as pack threads
 * that were just busy do. */
static struct {
    unsigned int job; /* bumped per request */
    unsigned int done;
    size_t from, to;
} helper;

static void *helper_main(void *arg)
{
    (void)arg;
    unsigned int seen = 0;
    for (;;) {
        unsigned int job;
        while ((job = __atomic_load_n(&helper.job, __ATOMIC_ACQUIRE)) == seen)
            __builtin_ia32_pause();
        seen = job;
        memcpy(pinned + helper.from, src + helper.from, helper.to - helper.from);
        __atomic_store_n(&helper.done, job, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void helper_start(size_t from, size_t to)
{
    helper.from = from;
    helper.to = to;
    __atomic_add_fetch(&helper.job, 1, __ATOMIC_RELEASE);
}

static void helper_join(void)
{
    unsigned int job = __atomic_load_n(&helper.job, __ATOMIC_RELAXED);
    while (__atomic_load_n(&helper.done, __ATOMIC_ACQUIRE) != job)
        __builtin_ia32_pause();
}

static void launch(int with_go)
{
    if (with_go) {
        void *params[] = {&table, &counter, &word, &value, &go};
        CK(cuLaunchKernel(k_go, PIECES, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    } else {
        void *params[] = {&table, &counter, &word, &value};
        CK(cuLaunchKernel(k_copy, PIECES, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    }
}

static void set_go(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(go, value, __ATOMIC_RELEASE);
}

static void wait_value(void)
{
    CK(cuStreamWaitValue32(stream, go_dev, value, CU_STREAM_WAIT_VALUE_EQ));
}

/* The ways through cuStreamWaitValue32, skipped where the driver has no stream memory operations. */
static int memops_work;
static int skipped(int way)
{
    return (way == 3 || way == 5) && !memops_work;
}

static const char *ways[] = {"pack-launch", "shared-launch", "launch-spin",
                             "waitvalue",   "helper-spin",   "helper-waitvalue"};
#define WAYS 6

static void round_trip(int way)
{
    value++;
    switch (way) {
    case 0:
        memcpy(pinned, src, BYTES);
        launch(0);
        break;
    case 1:
        helper_start(BYTES / 2, BYTES);
        memcpy(pinned, src, BYTES / 2);
        helper_join();
        launch(0);
        break;
    case 2:
        launch(1);
        memcpy(pinned, src, BYTES);
        set_go();
        break;
    case 3:
        wait_value();
        launch(0);
        memcpy(pinned, src, BYTES);
        set_go();
        break;
    case 4:
        helper_start(0, BYTES);
        launch(1);
        helper_join();
        set_go();
        break;
    case 5:
        helper_start(0, BYTES);
        wait_value();
        launch(0);
        helper_join();
        set_go();
        break;
    }
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value)
        __builtin_ia32_pause();
}

static void check(int way)
{
    for (size_t i = 0; i < BYTES; i++)
        src[i] = (unsigned char)rand();
    CK(cuMemsetD8(dev, 0xA5, BYTES));
    CK(cuCtxSynchronize());
    round_trip(way);
    CK(cuStreamSynchronize(stream));
    memset(back, 0x5A, BYTES);
    CK(cuMemcpyDtoH(back, dev, BYTES));
    if (memcmp(back, src, BYTES) != 0) {
        fprintf(stderr, "FAIL %s: data differ\n", ways[way]);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s overlap_probe.cubin [blocking]\n", argv[0]);
        return 2;
    }
    int blocking = argc > 2 && strcmp(argv[2], "blocking") == 0;
    CK(cuInit(0));
    CUdevice device;
    CK(cuDeviceGet(&device, 0));
    CK(cuDevicePrimaryCtxSetFlags(device, blocking ? CU_CTX_SCHED_BLOCKING_SYNC : CU_CTX_SCHED_AUTO));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, device));
    CK(cuCtxSetCurrent(ctx));
    CUmodule module;
    CK(cuModuleLoad(&module, argv[1]));
    CK(cuModuleGetFunction(&k_copy, module, "op_copy"));
    CK(cuModuleGetFunction(&k_go, module, "op_copy_go"));
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    src = malloc(BYTES);
    back = malloc(BYTES);
    CK(cuMemHostAlloc((void **)&pinned, BYTES, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    /* The word and the go word on lines of their own, apart from the staging. */
    unsigned char *words;
    CK(cuMemHostAlloc((void **)&words, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    memset(words, 0, 4096);
    word = (unsigned int *)words;
    go = (unsigned int *)(words + 128);
    CK(cuMemHostGetDevicePointer(&go_dev, go, 0));
    CK(cuMemAlloc(&dev, BYTES));
    CK(cuMemAlloc(&counter, 64));
    CK(cuMemsetD8(counter, 0, 64));
    table.count = PIECES;
    for (int i = 0; i < PIECES; i++)
        table.piece[i] = (op_piece){dev + (CUdeviceptr)i * PIECE,
                                    (unsigned long long)(uintptr_t)(pinned + (size_t)i * PIECE),
                                    PIECE};
    for (size_t i = 0; i < BYTES; i++)
        src[i] = (unsigned char)rand();
    pthread_t thread;
    if (pthread_create(&thread, NULL, helper_main, NULL) != 0)
        return 1;
    CUresult memops = cuStreamWaitValue32(stream, go_dev, 0, CU_STREAM_WAIT_VALUE_EQ);
    if (memops == CUDA_SUCCESS)
        memops = cuStreamSynchronize(stream);
    memops_work = memops == CUDA_SUCCESS;
    printf("context %s; cuStreamWaitValue32 %s\n", blocking ? "blocking-sync" : "auto",
           memops_work ? "works" : "unavailable: its ways skipped");
    for (int way = 0; way < WAYS; way++) {
        if (skipped(way))
            continue;
        check(way);
        for (int r = 0; r < 400; r++)
            round_trip(way);
    }
    static double t[PER_ROUND], med[WAYS][ROUNDS];
    for (int k = 0; k < ROUNDS; k++)
        for (int w = 0; w < WAYS; w++) {
            int way = (w + k) % WAYS; /* each round starts with another way */
            if (skipped(way))
                continue;
            for (int r = 0; r < PER_ROUND; r++) {
                double t0 = now_us();
                round_trip(way);
                t[r] = now_us() - t0;
            }
            qsort(t, PER_ROUND, sizeof t[0], cmpd);
            med[way][k] = t[PER_ROUND / 2];
        }
    for (int way = 0; way < WAYS; way++) {
        if (skipped(way))
            continue;
        double m[ROUNDS];
        memcpy(m, med[way], sizeof m);
        printf("%-17s rounds:", ways[way]);
        for (int k = 0; k < ROUNDS; k++)
            printf(" %5.2f", m[k]);
        qsort(m, ROUNDS, sizeof m[0], cmpd);
        printf(" | median %5.2f range %5.2f-%5.2f us\n", (m[ROUNDS / 2 - 1] + m[ROUNDS / 2]) / 2,
               m[0], m[ROUNDS - 1]);
    }
    for (int way = 0; way < WAYS; way++) {
        if (skipped(way))
            continue;
        for (int c = 0; c < CHECKS; c++)
            check(way);
    }
    printf("all data checked (%d fresh round trips a way)\n", CHECKS);
    return 0;
}
