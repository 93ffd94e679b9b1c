/* The cost model's calibration: times each lane's pieces moved directly and staged, through
 * the library's own batches with the strategy forced, at the model's piece sizes. About half a
 * second on an H200; done once per device model and driver (cost_models.c caches it). */
#define _POSIX_C_SOURCE 200809L
#include "plugin/api/calibrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/api/batch.h"
#include "plugin/core/alloc.h"
#include "plugin/core/clock.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/cuda/driver.h"
#include "plugin/plan/cost.h"

#define RUNS 5           /* timed, after one warm-up; the median counts */
#define WARM_UP_ROUNDS 30 /* bulk copies each way before anything is timed */
#define FIXED_PIECES 2   /* the probe that measures the fixed part */
#define GAP 64           /* between pieces, so no two merge */

/* Pieces per probe at each of ob_cost_sizes: megabytes of them, where the pack threads and the
 * bus reach their steady throughput (smaller probes measured half the H200's staged
 * bandwidth for 64 KiB pieces), and many small ones, where the cost per piece shows. */
static const size_t probe_pieces[OB_COST_SIZES] = {1024, 1024, 1024, 128, 16};

typedef struct buffers {
    CUdeviceptr device_a;
    CUdeviceptr device_b;
    void *pinned;
    unsigned char *pageable;
    size_t size;
} buffers;

static double now_us(void)
{
    return (double)ob_clock_ns() / 1e3;
}

static size_t stride_of(size_t bytes)
{
    return (bytes + GAP + 63) & ~(size_t)63;
}

static size_t footprint(void)
{
    size_t most = 0;
    for (int k = 0; k < OB_COST_SIZES; k++) {
        size_t need = probe_pieces[k] * stride_of(ob_cost_sizes[k]);
        most = need > most ? need : most;
    }
    return most;
}

/* A failure to free is logged where it fails and changes neither the calibration's result nor
 * the thread's message (after a failed allocation, that failure is the one reported). */
static void free_buffers(const ob_driver *driver, buffers *b)
{
    ob_error_saved before;
    ob_error_save(&before);
    if (b->device_a)
        (void)OB_CU(driver, cuMemFree, b->device_a);
    if (b->device_b)
        (void)OB_CU(driver, cuMemFree, b->device_b);
    if (b->pinned)
        (void)OB_CU(driver, cuMemFreeHost, b->pinned);
    free(b->pageable);
    (void)ob_error_restore(OMPBATCH_OK, &before);
}

static int alloc_buffers(const ob_driver *driver, buffers *b)
{
    memset(b, 0, sizeof(*b));
    b->size = footprint();
    if (driver->fn.cuMemAlloc == NULL || driver->fn.cuMemFree == NULL ||
        driver->fn.cuMemAllocHost == NULL || driver->fn.cuMemFreeHost == NULL)
        return ob_fail(OMPBATCH_ERR_UNSUPPORTED, "the driver cannot allocate for calibration");
    int status = OB_CU(driver, cuMemAlloc, &b->device_a, b->size);
    if (status == OMPBATCH_OK)
        status = OB_CU(driver, cuMemAlloc, &b->device_b, b->size);
    if (status == OMPBATCH_OK)
        status = OB_CU(driver, cuMemAllocHost, &b->pinned, b->size);
    if (status == OMPBATCH_OK && (b->pageable = ob_malloc(b->size)) == NULL)
        status = ob_fail(OMPBATCH_ERR_NO_MEMORY, "no memory for calibration");
    if (status == OMPBATCH_OK)
        memset(b->pageable, 0x5a, b->size); /* touched, as a program's data would be */
    if (status != OMPBATCH_OK)
        free_buffers(driver, b);
    return status;
}

/* Where a lane's pieces come from and go to. */
static void endpoints(const buffers *b, ob_lane lane, uintptr_t *dst, int *dst_device,
                      uintptr_t *src, int *src_device, int ordinal)
{
    uintptr_t a = (uintptr_t)b->device_a, other = (uintptr_t)b->device_b;
    uintptr_t pinned = (uintptr_t)b->pinned, pageable = (uintptr_t)b->pageable;
    *dst_device = *src_device = ordinal;
    switch (lane) {
    case OB_LANE_H2D_PAGEABLE:
    case OB_LANE_H2D_PINNED:
        *dst = a;
        *src = lane == OB_LANE_H2D_PINNED ? pinned : pageable;
        *src_device = OMPBATCH_HOST_DEVICE;
        break;
    case OB_LANE_D2H_PAGEABLE:
    case OB_LANE_D2H_PINNED:
        *src = a;
        *dst = lane == OB_LANE_D2H_PINNED ? pinned : pageable;
        *dst_device = OMPBATCH_HOST_DEVICE;
        break;
    default:
        *src = a;
        *dst = other;
        break;
    }
}

static int compare_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The median time of moving `count` pieces of `bytes` in the lane. */
static int time_probe(ompbatch_batch *batch, const buffers *b, ob_lane lane, int ordinal,
                      size_t count, size_t bytes, double *out)
{
    uintptr_t dst, src;
    int dst_device, src_device;
    endpoints(b, lane, &dst, &dst_device, &src, &src_device, ordinal);
    double times[RUNS];
    for (int run = -1; run < RUNS; run++) {
        double start = now_us();
        int status = OMPBATCH_OK;
        for (size_t i = 0; i < count && status == OMPBATCH_OK; i++)
            status = ompbatch_batch_add(batch, (void *)(dst + i * stride_of(bytes)), dst_device,
                                        (const void *)(src + i * stride_of(bytes)), src_device,
                                        bytes, 0);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_submit(batch);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(batch);
        double took = now_us() - start;
        int reset = ompbatch_batch_reset(batch);
        if (status != OMPBATCH_OK || reset != OMPBATCH_OK)
            return status != OMPBATCH_OK ? status : reset;
        if (run >= 0)
            times[run] = took;
    }
    qsort(times, RUNS, sizeof(times[0]), compare_double);
    *out = times[RUNS / 2];
    return OMPBATCH_OK;
}

static int measure_curve(const buffers *b, ob_lane lane, ob_way way, int ordinal,
                         ob_cost_curve *curve)
{
    ob_device device = {.kind = OB_DEVICE_CUDA, .ordinal = ordinal, .number = ordinal};
    ompbatch_batch_options options = {
        .struct_size = sizeof(options),
        .strategy = way == OB_WAY_STAGED ? OMPBATCH_STRATEGY_STAGED : OMPBATCH_STRATEGY_DIRECT};
    ompbatch_batch *batch = NULL;
    int status = ob_batch_create_on(&batch, &device, NULL, &options);
    if (status != OMPBATCH_OK)
        return status;
    ob_batch_set_label(batch, "calibration");
    double fixed_total = 0.0, t[OB_COST_SIZES];
    status = time_probe(batch, b, lane, ordinal, FIXED_PIECES, ob_cost_sizes[0], &fixed_total);
    for (int k = 0; k < OB_COST_SIZES && status == OMPBATCH_OK; k++)
        status = time_probe(batch, b, lane, ordinal, probe_pieces[k], ob_cost_sizes[k], &t[k]);
    if ((status = ob_batch_destroy_after(batch, status)) != OMPBATCH_OK)
        return status;
    /* Two probes of the smallest pieces separate the fixed part from the per-piece part. */
    double smallest = (t[0] - fixed_total) / (double)(probe_pieces[0] - FIXED_PIECES);
    if (smallest < 0.0)
        smallest = 0.0;
    double fixed = fixed_total - FIXED_PIECES * smallest;
    curve->fixed_us = fixed > 0.0 ? fixed : 0.0;
    for (int k = 0; k < OB_COST_SIZES; k++) {
        double per = (t[k] - curve->fixed_us) / (double)probe_pieces[k];
        curve->piece_us[k] = per > 0.0 ? per : 0.0;
    }
    return OMPBATCH_OK;
}

/* An idle GPU and bus run slower for their first milliseconds of work (clocks and link power
 * states ramp up): moved through bulk copies before anything is timed. */
static int warm_up(const ob_driver *driver, const buffers *b, int ordinal)
{
    CUstream stream = NULL;
    int status = OMPBATCH_OK;
    for (int round = 0; round < WARM_UP_ROUNDS && status == OMPBATCH_OK; round++) {
        if (stream == NULL && (status = ob_driver_own_stream(ordinal, &stream)) !=
                                  OMPBATCH_OK)
            break;
        status = OB_CU(driver, cuMemcpyAsync, b->device_a, (CUdeviceptr)(uintptr_t)b->pinned,
                       b->size, stream);
        if (status == OMPBATCH_OK)
            status = OB_CU(driver, cuMemcpyAsync, (CUdeviceptr)(uintptr_t)b->pinned, b->device_b,
                           b->size, stream);
        if (status == OMPBATCH_OK)
            status = OB_CU(driver, cuStreamSynchronize, stream);
    }
    return status;
}

int ob_cost_calibrate(int ordinal, ob_cost_model *model)
{
    const ob_driver *driver = ob_driver_get();
    if (!driver->loaded)
        return ob_fail(OMPBATCH_ERR_NO_DRIVER, "no driver to calibrate with");
    buffers b;
    int status = alloc_buffers(driver, &b);
    if (status != OMPBATCH_OK)
        return status;
    double start = now_us();
    if ((status = warm_up(driver, &b, ordinal)) != OMPBATCH_OK) {
        free_buffers(driver, &b);
        return status;
    }
    ob_cost_model measured;
    memset(&measured, 0, sizeof(measured));
    for (int lane = 0; lane < OB_LANE_COUNT && status == OMPBATCH_OK; lane++)
        for (int way = 0; way < OB_WAY_COUNT && status == OMPBATCH_OK; way++)
            status = measure_curve(&b, (ob_lane)lane, (ob_way)way, ordinal,
                                   &measured.curve[lane][way]);
    free_buffers(driver, &b);
    if (status != OMPBATCH_OK)
        return status;
    snprintf(measured.source, sizeof(measured.source), "calibrated on device %d in %.0f ms",
             ordinal, (now_us() - start) / 1000.0);
    *model = measured;
    ob_log(1, "device %d: cost model %s", ordinal, model->source);
    for (int lane = 0; lane < OB_LANE_COUNT; lane++)
        for (int way = 0; way < OB_WAY_COUNT; way++) {
            const ob_cost_curve *c = &model->curve[lane][way];
            ob_log(2, "  %s %s: fixed %.2f us, per piece %.3f %.3f %.3f %.3f %.3f us",
                   ob_lane_name((ob_lane)lane), ob_way_name((ob_way)way), c->fixed_us,
                   c->piece_us[0], c->piece_us[1], c->piece_us[2], c->piece_us[3],
                   c->piece_us[4]);
        }
    return OMPBATCH_OK;
}
