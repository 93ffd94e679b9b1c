/*
 * rect_bench: a face of a 3-D array of doubles on the GPU copied into pageable host memory with
 * ompbatch_batch_add_rect, against one bulk copy of the same bytes into pinned memory (the floor:
 * what the bytes cost when they are already contiguous). Faces:
 *
 *   x   [0:n][0:n][k:1]   n * n pieces of 8 B   (the hard one: 65 536 for n = 256)
 *   y   [0:n][k:1][0:n]   n pieces of 8n B
 *   z   [k:1][0:n][0:n]   one piece of 8n^2 B
 *
 * Each round times the rectangle (batch refilled, submitted, waited for) and the bulk copy,
 * alternating; medians of the rounds. Every face is checked byte for byte against the device
 * array's contents after every round, on a host face poisoned before each copy.
 *
 * With --phases (and OMPBATCH_STATS=1, which turns the library's phase clocks on) it also
 * prints where each face's rectangle time went, per round after the first (which pays the
 * calibration): adding and planning, enqueueing (packing, launches), waiting (polling,
 * blocking) and unpacking into the pageable face.
 *
 * usage: rect_bench [--n N] [--rounds R] [--phases] [--require-gpu]
 * Without a GPU it prints "no GPU: <reason>" and exits 0 (1 with --require-gpu).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_gpu.h"
#include "example_util.h"
#include "ompbatch.h"

#define PROGRAM "rect_bench"
#define MAX_ROUNDS 101

static size_t n = 256;
static int rounds = 11;
static int phases;

typedef struct face {
    const char *name;
    size_t volume[3], offset[3];
    size_t pieces; /* contiguous runs on the device side */
} face;

/* The face's bytes from the host copy of the whole array, in face order. */
static void expected_face(const face *f, const double *all, double *out)
{
    size_t k = 0;
    for (size_t a = 0; a < f->volume[0]; a++)
        for (size_t b = 0; b < f->volume[1]; b++)
            for (size_t c = 0; c < f->volume[2]; c++)
                out[k++] = all[((f->offset[0] + a) * n + f->offset[1] + b) * n + f->offset[2] + c];
}

/* The library's phase clocks over the face's rounds after the first, per round, in microseconds. */
static int print_phases(const face *f)
{
    ompbatch_hook_stats s = {.struct_size = sizeof(s)};
    int status = ompbatch_hook_get_stats(&s);
    if (status != OMPBATCH_OK)
        return ex_report_failure(PROGRAM, "ompbatch_hook_get_stats", status);
    double per = 1e3 * (rounds > 1 ? rounds - 1 : 1);
    printf("%-4s phases per round: add %.1f us, plan %.1f, enqueue %.1f, poll %.1f, block %.1f, "
           "unpack %.1f\n",
           f->name, s.time_add_ns / per, s.time_plan_ns / per, s.time_enqueue_ns / per,
           s.time_poll_ns / per, s.time_block_ns / per, s.time_unpack_ns / per);
    return 0;
}

static int time_face(ex_gpu *gpu, const face *f, CUdeviceptr block, const double *host_block,
                     double *pageable, unsigned char *pinned, double *want, ompbatch_batch *batch)
{
    size_t face_bytes = n * n * sizeof(double);
    size_t dims[3] = {n, n, n}, zero[3] = {0, 0, 0};
    size_t face_dims[3] = {f->volume[0], f->volume[1], f->volume[2]};
    double rect_us[MAX_ROUNDS], bulk_us[MAX_ROUNDS];
    expected_face(f, host_block, want);
    int status = OMPBATCH_OK;
    unsigned paths_used = 0;
    for (int r = 0; r < rounds && status == OMPBATCH_OK; r++) {
        /* The first round pays the calibration and the first launches: the phases leave it out. */
        if (phases && r == 1 && (status = ompbatch_hook_reset_stats()) != OMPBATCH_OK)
            return ex_report_failure(PROGRAM, "ompbatch_hook_reset_stats", status);
        memset(pageable, EX_POISON, face_bytes);
        double t0 = ex_now_us();
        status = ompbatch_batch_add_rect(batch, pageable, OMPBATCH_HOST_DEVICE, EX_HPTR(block),
                                         gpu->ordinal, sizeof(double), 3, f->volume, zero,
                                         f->offset, face_dims, dims, OMPBATCH_MAP_FROM);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_submit(batch);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(batch);
        rect_us[r] = ex_now_us() - t0;
        ompbatch_stats stats = {.struct_size = sizeof(stats)};
        if (status == OMPBATCH_OK && ompbatch_batch_get_stats(batch, &stats) == OMPBATCH_OK)
            paths_used |= stats.paths;
        int reset = ompbatch_batch_reset(batch);
        if (status == OMPBATCH_OK)
            status = reset;
        if (status != OMPBATCH_OK)
            return ex_report_failure(PROGRAM, "the rectangle", status);
        if (memcmp(pageable, want, face_bytes) != 0) {
            fprintf(stderr, PROGRAM ": face %s: the host face differs from the device array\n",
                    f->name);
            return 1;
        }
        /* The floor: the same number of bytes, contiguous, into pinned memory. */
        t0 = ex_now_us();
        status = ex_gpu_copy(gpu, EX_DPTR(pinned), block, face_bytes);
        bulk_us[r] = ex_now_us() - t0;
        if (status != OMPBATCH_OK)
            return ex_report_failure(PROGRAM, "the bulk copy", status);
    }
    char paths[64];
    double rect = ex_median(rect_us, (size_t)rounds), bulk = ex_median(bulk_us, (size_t)rounds);
    printf("%-4s %8zu pieces %10zu B | rect %9.1f us (min %9.1f) | bulk pinned %8.1f us (min "
           "%8.1f) | %5.2fx the bulk copy | %s\n",
           f->name, f->pieces, face_bytes, rect, ex_min(rect_us, (size_t)rounds), bulk,
           ex_min(bulk_us, (size_t)rounds), rect / bulk,
           ex_paths_name(paths_used, paths, sizeof(paths)));
    return phases ? print_phases(f) : 0;
}

int main(int argc, char **argv)
{
    int require_gpu = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--require-gpu") == 0) {
            require_gpu = 1;
        } else if (strcmp(a, "--phases") == 0) {
            phases = 1;
        } else if (v != NULL && strcmp(a, "--n") == 0) {
            n = strtoull(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(a, "--rounds") == 0) {
            rounds = atoi(v), i++;
        } else {
            fprintf(stderr,
                    "usage: " PROGRAM " [--n N] [--rounds R] [--phases] [--require-gpu]\n");
            return 2;
        }
    }
    if (n < 2 || n > 1024 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, PROGRAM ": --n must be 2..1024, --rounds 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    ompbatch_driver_info info;
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    int status = ompbatch_get_driver_info(&info);
    if (status != OMPBATCH_OK)
        return ex_report_failure(PROGRAM, "ompbatch_get_driver_info", status);
    if (!info.driver_loaded || info.device_count < 1) {
        printf("no GPU: %s\n", info.driver_loaded ? "the driver reports no device" : info.reason);
        return require_gpu ? 1 : 0;
    }
    ex_gpu gpu;
    if ((status = ex_gpu_open(0, &gpu)) != OMPBATCH_OK)
        return ex_report_failure(PROGRAM, "opening device 0", status);
    size_t block_bytes = n * n * n * sizeof(double), face_bytes = n * n * sizeof(double);
    CUdeviceptr block = 0;
    unsigned char *pinned = NULL;
    double *host_block = malloc(block_bytes), *pageable = malloc(face_bytes),
           *want = malloc(face_bytes);
    ompbatch_batch *batch = NULL;
    ompbatch_batch_options options = {.struct_size = sizeof(options), .synchronous = 1};
    if (host_block == NULL || pageable == NULL || want == NULL)
        status = OMPBATCH_ERR_NO_MEMORY;
    if (status == OMPBATCH_OK)
        status = ex_gpu_alloc_device(&gpu, block_bytes, &block);
    if (status == OMPBATCH_OK)
        status = ex_gpu_alloc_host(&gpu, EX_HOST_PINNED, face_bytes, &pinned);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_create(&batch, 0, NULL, &options);
    uint64_t seed = 0x4ec7;
    if (status == OMPBATCH_OK) {
        ex_fill_random(host_block, block_bytes, &seed);
        status = ex_gpu_copy(&gpu, block, EX_DPTR(host_block), block_bytes);
    }
    int failed = status != OMPBATCH_OK ? ex_report_failure(PROGRAM, "setting up", status) : 0;
    printf(PROGRAM ": %s, %zu^3 doubles, device -> pageable host, medians of %d rounds\n",
           gpu.name, n, rounds);
    const face faces[] = {
        {"x", {n, n, 1}, {0, 0, 1}, n * n},
        {"y", {n, 1, n}, {0, 1, 0}, n},
        {"z", {1, n, n}, {1, 0, 0}, 1},
    };
    for (size_t k = 0; k < 3 && !failed; k++)
        failed = time_face(&gpu, &faces[k], block, host_block, pageable, pinned, want, batch);
    if (!failed)
        printf(PROGRAM ": every face checked byte for byte\n");
    if (batch != NULL)
        ompbatch_batch_destroy(batch);
    if (pinned != NULL)
        ex_gpu_free_host(&gpu, EX_HOST_PINNED, pinned);
    if (block != 0)
        ex_gpu_free_device(&gpu, block);
    ex_gpu_close(&gpu);
    free(host_block);
    free(pageable);
    free(want);
    return failed;
}
