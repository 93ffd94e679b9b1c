/*
 * Diagnostic for the H200's two speeds of cuMemcpyBatchAsync: times 1024 pinned host-to-device
 * copies of SIZE bytes as a per-copy loop, through ompbatch, and as raw cuMemcpyBatchAsync calls
 * (srcAccessOrder STREAM and ANY) on STREAMS fresh non-blocking streams, after a trajectory of
 * 300 raw batches on one stream (medians of blocks of 50). Run it in several processes to see
 * the speed change from one process, or stream, to the next.
 *
 *   bazel run -c opt //examples:batch_modes -- [STREAMS [SIZE]]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/example_util.h"
#include "ompbatch.h"
#include "plugin/cuda/driver.h"

#define PIECES 1024
#define RUNS 15
#define WARMUP 3

typedef struct pieces {
    CUdeviceptr dsts[PIECES];
    CUdeviceptr srcs[PIECES];
    size_t sizes[PIECES];
    size_t size;
} pieces;

static int raw_batch(const ob_driver *d, pieces *p, CUmemcpySrcAccessOrder order, CUstream s,
                     double *us)
{
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = order;
    size_t first = 0;
    double start = ex_now_us();
    int status = OB_CU(d, cuMemcpyBatchAsync_v13000, p->dsts, p->srcs, p->sizes, PIECES, &attr,
                       &first, 1, s);
    if (status == OMPBATCH_OK)
        status = OB_CU(d, cuStreamSynchronize, s);
    *us = ex_now_us() - start;
    return status;
}

static int per_copy(const ob_driver *d, pieces *p, CUstream s, double *us)
{
    double start = ex_now_us();
    int status = OMPBATCH_OK;
    for (size_t i = 0; i < PIECES && status == OMPBATCH_OK; i++)
        status = OB_CU(d, cuMemcpyAsync, p->dsts[i], p->srcs[i], p->size, s);
    if (status == OMPBATCH_OK)
        status = OB_CU(d, cuStreamSynchronize, s);
    *us = ex_now_us() - start;
    return status;
}

static int library(ompbatch_batch *b, pieces *p, double *us)
{
    int status = ompbatch_batch_reset(b);
    double start = ex_now_us();
    for (size_t i = 0; i < PIECES && status == OMPBATCH_OK; i++)
        status = ompbatch_batch_add(b, (void *)(uintptr_t)p->dsts[i], 0,
                                    (const void *)(uintptr_t)p->srcs[i], OMPBATCH_HOST_DEVICE,
                                    p->size, 0);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(b);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(b);
    *us = ex_now_us() - start;
    return status;
}

static int trajectory(const ob_driver *d, pieces *p)
{
    CUstream s;
    int status = OB_CU(d, cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
    if (status != OMPBATCH_OK)
        return status;
    printf("trajectory %zu B:", p->size);
    for (int block = 0; block < 6 && status == OMPBATCH_OK; block++) {
        double t[50];
        for (int r = 0; r < 50 && status == OMPBATCH_OK; r++)
            status = raw_batch(d, p, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s, &t[r]);
        printf(" %.0f", ex_median(t, 50));
    }
    printf(" us\n");
    int destroyed = OB_CU(d, cuStreamDestroy, s);
    return status != OMPBATCH_OK ? status : destroyed;
}

static int one_stream(const ob_driver *d, pieces *p, int index)
{
    CUstream s;
    int status = OB_CU(d, cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
    if (status != OMPBATCH_OK)
        return status;
    ompbatch_batch *b = NULL;
    if ((status = ompbatch_batch_create(&b, 0, s, NULL)) != OMPBATCH_OK)
        goto destroy_stream;
    double loop[RUNS], lib[RUNS], stream_order[RUNS], any_order[RUNS], ignored;
    for (int r = 0; r < WARMUP + RUNS && status == OMPBATCH_OK; r++) {
        int k = r - WARMUP;
        double *slots[4] = {&ignored, &ignored, &ignored, &ignored};
        if (k >= 0) {
            slots[0] = &loop[k];
            slots[1] = &lib[k];
            slots[2] = &stream_order[k];
            slots[3] = &any_order[k];
        }
        status = per_copy(d, p, s, slots[0]);
        if (status == OMPBATCH_OK)
            status = library(b, p, slots[1]);
        if (status == OMPBATCH_OK)
            status = raw_batch(d, p, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s, slots[2]);
        if (status == OMPBATCH_OK)
            status = raw_batch(d, p, CU_MEMCPY_SRC_ACCESS_ORDER_ANY, s, slots[3]);
    }
    if (status == OMPBATCH_OK)
        printf("stream %d, %zu B: per-copy %.0f us | ompbatch %.0f us | raw batch STREAM %.0f us, "
               "ANY %.0f us\n",
               index, p->size, ex_median(loop, RUNS), ex_median(lib, RUNS),
               ex_median(stream_order, RUNS), ex_median(any_order, RUNS));
    int destroyed = ompbatch_batch_destroy(b);
    if (status == OMPBATCH_OK)
        status = destroyed;
destroy_stream:;
    int stream_status = OB_CU(d, cuStreamDestroy, s);
    return status != OMPBATCH_OK ? status : stream_status;
}

int main(int argc, char **argv)
{
    int streams = argc > 1 ? atoi(argv[1]) : 2;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 8;
    if (streams < 1 || size < 1 || size > (1 << 20)) {
        fprintf(stderr, "usage: batch_modes [STREAMS >= 1 [SIZE 1..1048576]]\n");
        return 2;
    }
    const ob_driver *d = ob_driver_get();
    if (!d->loaded || d->device_count == 0 || d->fn.cuMemcpyBatchAsync_v13000 == NULL) {
        printf("no GPU with cuMemcpyBatchAsync v13000: %s\n", d->loaded ? "" : d->reason);
        return 0;
    }
    static pieces p;
    p.size = size;
    size_t stride = size + 64;
    void *host = NULL;
    CUdeviceptr dev = 0;
    int status = ob_driver_push_context(0);
    if (status != OMPBATCH_OK)
        return ex_report_failure("batch_modes", "making device 0 current", status);
    if ((status = OB_CU(d, cuMemAllocHost, &host, PIECES * stride)) != OMPBATCH_OK ||
        (status = OB_CU(d, cuMemAlloc, &dev, PIECES * stride)) != OMPBATCH_OK)
        goto out;
    memset(host, 0x5a, PIECES * stride);
    for (size_t i = 0; i < PIECES; i++) {
        p.dsts[i] = dev + i * stride;
        p.srcs[i] = (CUdeviceptr)(uintptr_t)((char *)host + i * stride);
        p.sizes[i] = size;
    }
    status = trajectory(d, &p);
    for (int i = 0; i < streams && status == OMPBATCH_OK; i++)
        status = one_stream(d, &p, i);
out:
    if (status != OMPBATCH_OK)
        ex_report_failure("batch_modes", "timing", status);
    if (dev != 0)
        (void)OB_CU(d, cuMemFree, dev);
    if (host != NULL)
        (void)OB_CU(d, cuMemFreeHost, host);
    (void)ob_driver_pop_context();
    return status == OMPBATCH_OK ? 0 : 1;
}
