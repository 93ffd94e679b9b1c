/* Quick start: `bazel run //examples:quickstart`.
 *
 * With a GPU, 1024 pieces of 4 KiB move between pinned host memory and device 0, first as a loop
 * of cuMemcpyAsync calls (what a program does without ompbatch), then as one ompbatch batch. It
 * prints both times and the speed-up, checks a round trip byte for byte, and shows the plan the
 * library made and the driver it found.
 *
 * Without a GPU (no driver, or no device), it says why in one line and runs a small plan on the
 * host backend instead: host-to-host copies that merge, a zero-byte copy, and a copy that reads
 * what an earlier one wrote, so the plan has two dependency levels.
 *
 * Exit status 0 on success; 1 with the library's message on any failure. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_gpu.h"
#include "example_util.h"
#include "ompbatch.h"

#define QS_PROGRAM "quickstart"
#define QS_PLAN_LINES 15

/* Prints the batch's plan, at most max_lines lines of it (0: all), then its statistics. */
static int print_plan(ompbatch_batch *batch, size_t max_lines)
{
    size_t needed = 0;
    int status = ompbatch_batch_describe(batch, NULL, 0, &needed);
    if (status != OMPBATCH_OK)
        return ex_report_failure(QS_PROGRAM, "ompbatch_batch_describe", status);
    char *text = malloc(needed + 1);
    if (text == NULL) {
        fprintf(stderr, QS_PROGRAM ": out of memory for a plan of %zu bytes\n", needed);
        return 1;
    }
    if ((status = ompbatch_batch_describe(batch, text, needed + 1, NULL)) != OMPBATCH_OK) {
        free(text);
        return ex_report_failure(QS_PROGRAM, "ompbatch_batch_describe", status);
    }
    size_t lines = 0, shown = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    const char *line = text;
    while (*line && (max_lines == 0 || shown < max_lines)) {
        const char *end = strchr(line, '\n');
        int length = end ? (int)(end - line) : (int)strlen(line);
        printf("  | %.*s\n", length, line);
        shown++;
        line = end ? end + 1 : line + length;
    }
    if (shown < lines)
        printf("  | ... (%zu more lines)\n", lines - shown);
    free(text);

    ompbatch_stats stats;
    memset(&stats, 0, sizeof(stats));
    stats.struct_size = sizeof(stats);
    if ((status = ompbatch_batch_get_stats(batch, &stats)) != OMPBATCH_OK)
        return ex_report_failure(QS_PROGRAM, "ompbatch_batch_get_stats", status);
    ex_print_stats(stdout, "stats: ", &stats);
    return 0;
}

/* ---- without a GPU: the host backend ----------------------------------------------------- */

enum {
    HOST_BYTES = 2048,
    HOST_MERGED_PIECES = 8,   /* contiguous on both sides: become one copy */
    HOST_MERGED_PIECE = 64,
    HOST_GAPPED_PIECES = 4,   /* a gap on both sides: stay separate */
    HOST_GAPPED_PIECE = 48,
    HOST_GAPPED_STRIDE = 128,
    HOST_GAPPED_AT = 1024,
    HOST_DEPENDENT_BYTES = 128 /* reads dst[0, 128), written by the first merged pieces */
};

static int run_host(void)
{
    static unsigned char src[HOST_BYTES], dst[HOST_BYTES], out[HOST_BYTES];
    uint64_t seed = 0x0b5eed;
    ex_fill_random(src, sizeof(src), &seed);
    memset(dst, EX_POISON, sizeof(dst));
    memset(out, EX_POISON, sizeof(out));

    ompbatch_batch *batch = NULL;
    int status = ompbatch_batch_create(&batch, OMPBATCH_HOST_DEVICE, NULL, NULL);
    if (status != OMPBATCH_OK)
        return ex_report_failure(QS_PROGRAM, "ompbatch_batch_create(host)", status);
    const int host = OMPBATCH_HOST_DEVICE;
    for (size_t i = 0; i < HOST_MERGED_PIECES && status == OMPBATCH_OK; i++) {
        size_t at = i * HOST_MERGED_PIECE;
        status = ompbatch_batch_add(batch, dst + at, host, src + at, host, HOST_MERGED_PIECE, 0);
    }
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_add(batch, NULL, host, NULL, host, 0, 0);
    for (size_t i = 0; i < HOST_GAPPED_PIECES && status == OMPBATCH_OK; i++) {
        size_t at = HOST_GAPPED_AT + i * HOST_GAPPED_STRIDE;
        status = ompbatch_batch_add(batch, dst + at, host, src + at, host, HOST_GAPPED_PIECE, 0);
    }
    /* Added last but depends on the first pieces: the library must run it after them. */
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_add(batch, out, host, dst, host, HOST_DEPENDENT_BYTES, 0);
    if (status != OMPBATCH_OK) {
        int rc = ex_report_failure(QS_PROGRAM, "ompbatch_batch_add", status);
        ompbatch_batch_destroy(batch);
        return rc;
    }
    if ((status = ompbatch_batch_submit(batch)) != OMPBATCH_OK ||
        (status = ompbatch_batch_wait(batch)) != OMPBATCH_OK) {
        int rc = ex_report_failure(QS_PROGRAM, "ompbatch_batch_submit/wait", status);
        ompbatch_batch_destroy(batch);
        return rc;
    }

    /* The expected bytes: the pieces of src where they were copied, poison everywhere else. */
    static unsigned char want_dst[HOST_BYTES], want_out[HOST_BYTES];
    memset(want_dst, EX_POISON, sizeof(want_dst));
    memset(want_out, EX_POISON, sizeof(want_out));
    memcpy(want_dst, src, HOST_MERGED_PIECES * HOST_MERGED_PIECE);
    for (size_t i = 0; i < HOST_GAPPED_PIECES; i++) {
        size_t at = HOST_GAPPED_AT + i * HOST_GAPPED_STRIDE;
        memcpy(want_dst + at, src + at, HOST_GAPPED_PIECE);
    }
    memcpy(want_out, src, HOST_DEPENDENT_BYTES);
    size_t bytes = HOST_MERGED_PIECES * HOST_MERGED_PIECE +
                   HOST_GAPPED_PIECES * HOST_GAPPED_PIECE + HOST_DEPENDENT_BYTES;
    if (memcmp(dst, want_dst, sizeof(dst)) != 0 || memcmp(out, want_out, sizeof(out)) != 0) {
        fprintf(stderr, QS_PROGRAM ": host backend: the copied bytes are wrong\n");
        ompbatch_batch_destroy(batch);
        return 1;
    }
    printf("host backend: %d copies (%d contiguous, 1 zero-byte, %d with gaps, 1 dependent), "
           "%zu bytes: byte-exact, gaps untouched\n",
           HOST_MERGED_PIECES + 1 + HOST_GAPPED_PIECES + 1, HOST_MERGED_PIECES,
           HOST_GAPPED_PIECES, bytes);
    printf("plan:\n");
    int rc = print_plan(batch, 0);
    if ((status = ompbatch_batch_destroy(batch)) != OMPBATCH_OK && rc == 0)
        rc = ex_report_failure(QS_PROGRAM, "ompbatch_batch_destroy", status);
    return rc;
}

/* ---- with a GPU: per-copy loop against one batch ----------------------------------------- */

enum {
    GPU_PIECES = 1024,
    GPU_PIECE = 4096,
    /* Pieces sit apart so that none is contiguous with the next: contiguous pieces would be
     * merged into one copy, and this would measure merging instead of batching. */
    GPU_STRIDE = GPU_PIECE + 256,
    GPU_WARMUP = 3,
    GPU_REPEATS = 21
};

typedef struct qs_gpu {
    ex_gpu gpu;
    unsigned char *host;  /* pinned: the pieces to send, random */
    unsigned char *back;  /* pinned: where they come back */
    CUdeviceptr dev;
    ompbatch_batch *batch;
} qs_gpu;

static CUdeviceptr host_piece(const unsigned char *base, size_t i)
{
    return EX_DPTR(base + i * GPU_STRIDE);
}

static int per_copy_once(qs_gpu *q, int to_device, double *us)
{
    const ob_driver *driver = q->gpu.driver;
    double start = ex_now_us();
    for (size_t i = 0; i < GPU_PIECES; i++) {
        CUdeviceptr dev = q->dev + i * GPU_STRIDE;
        int status = to_device
                         ? OB_CU(driver, cuMemcpyAsync, dev, host_piece(q->host, i), GPU_PIECE,
                                 q->gpu.stream)
                         : OB_CU(driver, cuMemcpyAsync, host_piece(q->back, i), dev, GPU_PIECE,
                                 q->gpu.stream);
        if (status != OMPBATCH_OK)
            return status;
    }
    int status = OB_CU(driver, cuStreamSynchronize, q->gpu.stream);
    *us = ex_now_us() - start;
    return status;
}

static int batch_once(qs_gpu *q, int to_device, double *us)
{
    int status = ompbatch_batch_reset(q->batch);
    if (status != OMPBATCH_OK)
        return status;
    const int dev_num = q->gpu.ordinal;
    double start = ex_now_us();
    for (size_t i = 0; i < GPU_PIECES && status == OMPBATCH_OK; i++) {
        void *dev = EX_HPTR(q->dev + i * GPU_STRIDE);
        status = to_device ? ompbatch_batch_add(q->batch, dev, dev_num, q->host + i * GPU_STRIDE,
                                                OMPBATCH_HOST_DEVICE, GPU_PIECE, 0)
                           : ompbatch_batch_add(q->batch, q->back + i * GPU_STRIDE,
                                                OMPBATCH_HOST_DEVICE, dev, dev_num, GPU_PIECE, 0);
    }
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(q->batch);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(q->batch);
    *us = ex_now_us() - start;
    return status;
}

/* Times both ways of moving the pieces in one direction; runs alternate so that drift in the
 * machine's state hits both alike. */
static int time_direction(qs_gpu *q, int to_device)
{
    double per_copy[GPU_REPEATS], batched[GPU_REPEATS], ignored;
    int status = OMPBATCH_OK;
    for (int w = 0; w < GPU_WARMUP && status == OMPBATCH_OK; w++) {
        if ((status = per_copy_once(q, to_device, &ignored)) == OMPBATCH_OK)
            status = batch_once(q, to_device, &ignored);
    }
    for (int r = 0; r < GPU_REPEATS && status == OMPBATCH_OK; r++) {
        if ((status = per_copy_once(q, to_device, &per_copy[r])) == OMPBATCH_OK)
            status = batch_once(q, to_device, &batched[r]);
    }
    if (status != OMPBATCH_OK)
        return ex_report_failure(QS_PROGRAM, to_device ? "timing H2D" : "timing D2H", status);
    double loop = ex_median(per_copy, GPU_REPEATS);
    double batch = ex_median(batched, GPU_REPEATS);
    printf("  %s  per-copy loop %9.1f us   ompbatch batch %9.1f us   speed-up %5.2fx\n",
           to_device ? "H2D" : "D2H", loop, batch, loop / batch);
    return 0;
}

/* H2D then D2H through the library into poisoned destinations, then byte-by-byte comparison. */
static int check_round_trip(qs_gpu *q)
{
    const size_t slab = (size_t)GPU_PIECES * GPU_STRIDE;
    double ignored;
    memset(q->back, EX_POISON, slab);
    int status = ex_gpu_copy(&q->gpu, q->dev, EX_DPTR(q->back), slab);
    if (status == OMPBATCH_OK)
        status = batch_once(q, 1, &ignored);
    if (status == OMPBATCH_OK) {
        memset(q->back, EX_POISON, slab);
        status = batch_once(q, 0, &ignored);
    }
    if (status != OMPBATCH_OK)
        return ex_report_failure(QS_PROGRAM, "round trip", status);
    char why[160];
    if (!ex_check_pieces(q->back, q->host, GPU_PIECES, GPU_PIECE, GPU_STRIDE, why, sizeof(why))) {
        fprintf(stderr, QS_PROGRAM ": round trip: %s\n", why);
        return 1;
    }
    printf("round trip: %d x %d B H2D then D2H into poisoned buffers: byte-exact, gaps untouched\n",
           GPU_PIECES, GPU_PIECE);
    return 0;
}

static int run_gpu(int ordinal)
{
    const size_t slab = (size_t)GPU_PIECES * GPU_STRIDE;
    qs_gpu q;
    memset(&q, 0, sizeof(q));
    int rc = 1;
    int status = ex_gpu_open(ordinal, &q.gpu);
    if (status != OMPBATCH_OK) {
        rc = ex_report_failure(QS_PROGRAM, "opening the GPU", status);
        goto close_gpu;
    }
    if ((status = ex_gpu_alloc_host(&q.gpu, EX_HOST_PINNED, slab, &q.host)) != OMPBATCH_OK ||
        (status = ex_gpu_alloc_host(&q.gpu, EX_HOST_PINNED, slab, &q.back)) != OMPBATCH_OK ||
        (status = ex_gpu_alloc_device(&q.gpu, slab, &q.dev)) != OMPBATCH_OK) {
        rc = ex_report_failure(QS_PROGRAM, "allocating memory", status);
        goto free_memory;
    }
    uint64_t seed = 0x0b5eed;
    ex_fill_random(q.host, slab, &seed);
    if ((status = ompbatch_batch_create(&q.batch, ordinal, NULL, NULL)) != OMPBATCH_OK) {
        rc = ex_report_failure(QS_PROGRAM, "ompbatch_batch_create", status);
        goto free_memory;
    }

    printf("GPU: %s (device %d); %d pieces of %d B between pinned host memory and the device\n",
           q.gpu.name, ordinal, GPU_PIECES, GPU_PIECE);
    printf("median of %d runs after %d warm-ups, enqueue to stream synchronisation:\n",
           GPU_REPEATS, GPU_WARMUP);
    if ((rc = time_direction(&q, 1)) != 0 || (rc = time_direction(&q, 0)) != 0 ||
        (rc = check_round_trip(&q)) != 0)
        goto destroy_batch;
    printf("plan of the last batch (D2H):\n");
    rc = print_plan(q.batch, QS_PLAN_LINES);

destroy_batch:
    if ((status = ompbatch_batch_destroy(q.batch)) != OMPBATCH_OK && rc == 0)
        rc = ex_report_failure(QS_PROGRAM, "ompbatch_batch_destroy", status);
free_memory:
    ex_gpu_free_device(&q.gpu, q.dev);
    ex_gpu_free_host(&q.gpu, EX_HOST_PINNED, q.back);
    ex_gpu_free_host(&q.gpu, EX_HOST_PINNED, q.host);
close_gpu:
    ex_gpu_close(&q.gpu);
    return rc;
}

int main(void)
{
    int version = ompbatch_version();
    printf("ompbatch %d.%d.%d quick start\n", version / 10000, version / 100 % 100, version % 100);
    ompbatch_driver_info info;
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    int status = ompbatch_get_driver_info(&info);
    if (status != OMPBATCH_OK)
        return ex_report_failure(QS_PROGRAM, "ompbatch_get_driver_info", status);

    int rc;
    if (info.driver_loaded && info.device_count > 0) {
        rc = run_gpu(0);
    } else {
        printf("no GPU: %s; running the plan on the host backend instead\n",
               info.driver_loaded ? "the CUDA driver reports no devices" : info.reason);
        rc = run_host();
    }
    ex_print_driver_info(stdout, "driver: ", &info);
    if (rc == 0)
        printf("quickstart: OK\n");
    return rc;
}
