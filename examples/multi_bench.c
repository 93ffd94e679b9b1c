/*
 * multi_bench: many small host-to-device transfers to every GPU at once, per device and in
 * aggregate, for the ways a program can issue them:
 *
 *   per-copy    one cuMemcpyAsync per piece (what the OpenMP runtime does)
 *   direct      one ompbatch batch per device, OMPBATCH_STRATEGY_DIRECT (the plain batch)
 *   auto        one ompbatch batch per device, the library's choice
 *
 * each run two ways: one host thread per GPU (all start together), and one thread for all
 * (per-copy: the loops one after another; the batches: all submitted, then all waited for),
 * plus one batch of device 0 holding every GPU's copies (the library splits it per device).
 * Times are medians over rounds of the wall time from start to the last device's completion;
 * every device's bytes are checked after every way.
 *
 * usage: multi_bench [--devices N] [--count C] [--size BYTES] [--rounds R]
 *                    [--host pinned|pageable] [--json FILE] [--require-gpu]
 * Without a GPU it prints "no GPU: <reason>" and exits 0 (1 with --require-gpu).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_gpu.h"
#include "example_util.h"
#include "ompbatch.h"

#define PROGRAM "multi_bench"
#define MAX_GPUS 16
#define MAX_ROUNDS 101
#define GAP 64 /* bytes between pieces: nothing merges */

typedef struct device_data {
    int ordinal;
    ex_gpu gpu;             /* opened on the thread that allocated; streams are per device */
    unsigned char *host;    /* count pieces of size, GAP apart */
    CUdeviceptr device;
    unsigned char *check;
    ompbatch_batch *direct, *automatic;
    double us[MAX_ROUNDS];  /* this device's time in the current way, per round */
} device_data;

typedef enum way { WAY_PER_COPY, WAY_DIRECT, WAY_AUTO, WAY_COUNT } way;
static const char *const way_names[WAY_COUNT] = {"per-copy", "direct", "auto"};

static size_t count = 1024, size = 4096, stride;
static int rounds = 21;
static ex_host_kind host_kind = EX_HOST_PINNED;

/* Enqueues device d's copies in way w; does not wait. */
static int enqueue(device_data *d, way w)
{
    if (w == WAY_PER_COPY) {
        for (size_t i = 0; i < count; i++) {
            CUresult r = d->gpu.driver->fn.cuMemcpyAsync(
                d->device + i * stride, EX_DPTR(d->host + i * stride), size, d->gpu.stream);
            if (r != CUDA_SUCCESS)
                return ob_cu_check(d->gpu.driver, r, "cuMemcpyAsync");
        }
        return OMPBATCH_OK;
    }
    ompbatch_batch *b = w == WAY_DIRECT ? d->direct : d->automatic;
    int status = ompbatch_batch_reset(b);
    for (size_t i = 0; i < count && status == OMPBATCH_OK; i++)
        status = ompbatch_batch_add(b, EX_HPTR(d->device + i * stride), d->ordinal,
                                    d->host + i * stride, OMPBATCH_HOST_DEVICE, size, 0);
    return status == OMPBATCH_OK ? ompbatch_batch_submit(b) : status;
}

static int finish(device_data *d, way w)
{
    if (w == WAY_PER_COPY)
        return ob_cu_check(d->gpu.driver, d->gpu.driver->fn.cuStreamSynchronize(d->gpu.stream),
                           "cuStreamSynchronize");
    return ompbatch_batch_wait(w == WAY_DIRECT ? d->direct : d->automatic);
}

/* Runs op(d, w) with device d's context current. */
static int on_device(device_data *d, way w, int (*op)(device_data *, way))
{
    int status = ob_driver_push_context(d->ordinal);
    if (status != OMPBATCH_OK)
        return status;
    status = op(d, w);
    int popped = ob_driver_pop_context();
    return status != OMPBATCH_OK ? status : popped;
}

/* Poisons the device copy before a timed round; checks it after. */
static int poison(device_data *d, way w)
{
    (void)w;
    memset(d->check, 0x5A, count * stride);
    return ex_gpu_copy(&d->gpu, d->device, EX_DPTR(d->check), count * stride);
}

/* The caller names the way that failed. */
static int verify(device_data *d, way w)
{
    (void)w;
    int status = ex_gpu_copy(&d->gpu, EX_DPTR(d->check), d->device, count * stride);
    for (size_t i = 0; i < count && status == OMPBATCH_OK; i++)
        if (memcmp(d->check + i * stride, d->host + i * stride, size) != 0) {
            fprintf(stderr, PROGRAM ": device %d piece %zu differs\n", d->ordinal, i);
            status = OMPBATCH_ERR_INVALID_ARGUMENT;
        }
    return status;
}

/* ---- one thread per GPU ---------------------------------------------------------------------- */

typedef struct thread_job {
    device_data *d;
    way w;
    int round;
    pthread_barrier_t *start;
    int status;
    double began, ended; /* absolute, ex_now_us */
} thread_job;

static void *device_thread(void *arg)
{
    thread_job *job = arg;
    device_data *d = job->d;
    /* The primary context is pushed on the thread that opened the device; this one pushes its
     * own. */
    job->status = ob_driver_push_context(d->ordinal);
    pthread_barrier_wait(job->start);
    job->began = ex_now_us();
    if (job->status == OMPBATCH_OK)
        job->status = enqueue(d, job->w);
    if (job->status == OMPBATCH_OK)
        job->status = finish(d, job->w);
    job->ended = ex_now_us();
    d->us[job->round] = job->ended - job->began;
    int popped = ob_driver_pop_context();
    if (job->status == OMPBATCH_OK)
        job->status = popped;
    return NULL;
}

static int run_threads(device_data *devs, int n, way w, int round, double *wall)
{
    pthread_t threads[MAX_GPUS];
    thread_job jobs[MAX_GPUS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    for (int k = 0; k < n; k++) {
        jobs[k] = (thread_job){&devs[k], w, round, &start, OMPBATCH_OK, 0, 0};
        pthread_create(&threads[k], NULL, device_thread, &jobs[k]);
    }
    pthread_barrier_wait(&start);
    int status = OMPBATCH_OK;
    /* From the first thread's start to the last one's end, as the threads saw them (this thread
     * may wake late from the barrier). */
    double first = 0, last = 0;
    for (int k = 0; k < n; k++) {
        pthread_join(threads[k], NULL);
        if (status == OMPBATCH_OK)
            status = jobs[k].status;
        first = k == 0 || jobs[k].began < first ? jobs[k].began : first;
        last = jobs[k].ended > last ? jobs[k].ended : last;
    }
    *wall = last - first;
    pthread_barrier_destroy(&start);
    return status;
}

/* ---- one thread for all --------------------------------------------------------------------- */

static int run_one_thread(device_data *devs, int n, way w, double *wall)
{
    double t0 = ex_now_us();
    int status = OMPBATCH_OK;
    for (int k = 0; k < n && status == OMPBATCH_OK; k++)
        status = on_device(&devs[k], w, enqueue);
    for (int k = 0; k < n && status == OMPBATCH_OK; k++)
        status = on_device(&devs[k], w, finish);
    *wall = ex_now_us() - t0;
    return status;
}

/* One batch of device 0 with every GPU's copies: the library splits it per device. */
static int run_one_batch(ompbatch_batch *all, device_data *devs, int n, double *wall)
{
    double t0 = ex_now_us();
    int status = ompbatch_batch_reset(all);
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < count && status == OMPBATCH_OK; i++)
            status = ompbatch_batch_add(all, EX_HPTR(devs[k].device + i * stride),
                                        devs[k].ordinal, devs[k].host + i * stride,
                                        OMPBATCH_HOST_DEVICE, size, 0);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(all);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(all);
    *wall = ex_now_us() - t0;
    return status;
}

/* ---- main ------------------------------------------------------------------------------------ */

typedef struct result {
    const char *way, *mode;
    double wall_us;             /* median */
    double device_us[MAX_GPUS]; /* medians, one thread per GPU only */
} result;

int main(int argc, char **argv)
{
    int want = 0, require_gpu = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--require-gpu") == 0) {
            require_gpu = 1;
        } else if (v != NULL && strcmp(a, "--devices") == 0) {
            want = atoi(v), i++;
        } else if (v != NULL && strcmp(a, "--count") == 0) {
            count = strtoull(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(a, "--size") == 0) {
            size = strtoull(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(a, "--rounds") == 0) {
            rounds = atoi(v), i++;
        } else if (v != NULL && strcmp(a, "--json") == 0) {
            json = v, i++;
        } else if (v != NULL && strcmp(a, "--host") == 0) {
            host_kind = strcmp(v, "pageable") == 0 ? EX_HOST_PAGEABLE : EX_HOST_PINNED, i++;
        } else {
            fprintf(stderr, "usage: " PROGRAM " [--devices N] [--count C] [--size BYTES] "
                            "[--rounds R] [--host pinned|pageable] [--json FILE] "
                            "[--require-gpu]\n");
            return 2;
        }
    }
    if (count == 0 || size == 0 || rounds < 1 || rounds > MAX_ROUNDS || want < 0) {
        fprintf(stderr, PROGRAM ": --count and --size must be positive, --rounds 1..%d\n",
                MAX_ROUNDS);
        return 2;
    }
    stride = size + GAP;
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
    int n = want > 0 && want < info.device_count ? want : info.device_count;
    if (n > MAX_GPUS)
        n = MAX_GPUS;
    static device_data devs[MAX_GPUS];
    uint64_t seed = 0x5eed;
    for (int k = 0; k < n && status == OMPBATCH_OK; k++) {
        device_data *d = &devs[k];
        d->ordinal = k;
        ompbatch_batch_options direct = {.struct_size = sizeof(direct),
                                         .strategy = OMPBATCH_STRATEGY_DIRECT};
        ompbatch_batch_options automatic = {.struct_size = sizeof(automatic),
                                            .strategy = OMPBATCH_STRATEGY_AUTO};
        if ((status = ex_gpu_open(k, &d->gpu)) == OMPBATCH_OK &&
            (status = ex_gpu_alloc_host(&d->gpu, host_kind, count * stride, &d->host)) ==
                OMPBATCH_OK &&
            (status = ex_gpu_alloc_device(&d->gpu, count * stride, &d->device)) == OMPBATCH_OK &&
            (status = ompbatch_batch_create(&d->direct, k, NULL, &direct)) == OMPBATCH_OK)
            status = ompbatch_batch_create(&d->automatic, k, NULL, &automatic);
        d->check = malloc(count * stride);
        if (status == OMPBATCH_OK && d->check == NULL)
            status = OMPBATCH_ERR_NO_MEMORY;
        if (status == OMPBATCH_OK)
            ex_fill_random(d->host, count * stride, &seed);
        ex_gpu_close(&d->gpu); /* each timed part pushes the context it needs */
    }
    ompbatch_batch *all = NULL;
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_create(&all, 0, NULL, NULL);
    if (status != OMPBATCH_OK)
        return ex_report_failure(PROGRAM, "setting up the devices", status);

    char size_name[32];
    printf(PROGRAM ": %d GPU(s) (%s, driver %d), %zu x %s %s -> device per GPU, median of %d "
                   "rounds (+1 warm-up)\n",
           n, devs[0].gpu.name, info.driver_version, count,
           ex_size_name(size, size_name, sizeof(size_name)), ex_host_kind_name(host_kind), rounds);
    result results[2 * WAY_COUNT + 1];
    int nresults = 0;
    double walls[MAX_ROUNDS];
    for (int mode = 0; mode < 3 && status == OMPBATCH_OK; mode++) {
        for (int w = 0; w < (mode == 2 ? 1 : WAY_COUNT) && status == OMPBATCH_OK; w++) {
            result *r = &results[nresults++];
            memset(r, 0, sizeof(*r));
            r->way = mode == 2 ? "one batch" : way_names[w];
            r->mode = mode == 0 ? "thread per GPU" : "one thread";
            for (int round = -1; round < rounds && status == OMPBATCH_OK; round++) {
                for (int k = 0; k < n && status == OMPBATCH_OK; k++)
                    status = on_device(&devs[k], (way)w, poison);
                double wall = 0;
                if (status == OMPBATCH_OK)
                    status = mode == 0   ? run_threads(devs, n, (way)w, round < 0 ? 0 : round,
                                                       &wall)
                             : mode == 1 ? run_one_thread(devs, n, (way)w, &wall)
                                         : run_one_batch(all, devs, n, &wall);
                for (int k = 0; k < n && status == OMPBATCH_OK; k++)
                    status = on_device(&devs[k], (way)w, verify);
                if (status != OMPBATCH_OK)
                    fprintf(stderr, PROGRAM ": %s issued by %s failed\n", r->way, r->mode);
                if (round >= 0)
                    walls[round] = wall;
            }
            if (status != OMPBATCH_OK)
                break;
            r->wall_us = ex_median(walls, (size_t)rounds);
            if (mode == 0)
                for (int k = 0; k < n; k++)
                    r->device_us[k] = ex_median(devs[k].us, (size_t)rounds);
        }
    }
    if (status != OMPBATCH_OK)
        return ex_report_failure(PROGRAM, "a timed way", status);

    double bytes = (double)n * (double)count * (double)size;
    printf("%-10s %-15s %12s %12s  per device (thread per GPU), us\n", "way", "issued by",
           "wall us", "aggr GB/s");
    for (int i = 0; i < nresults; i++) {
        const result *r = &results[i];
        printf("%-10s %-15s %12.1f %12.2f ", r->way, r->mode, r->wall_us,
               bytes / r->wall_us / 1e3);
        for (int k = 0; k < n && strcmp(r->mode, "thread per GPU") == 0; k++)
            printf(" %.1f", r->device_us[k]);
        printf("\n");
    }
    printf("all bytes checked\n");
    if (json != NULL) {
        FILE *f = fopen(json, "w");
        if (f == NULL)
            return ex_report_failure(PROGRAM, "opening the JSON file", OMPBATCH_ERR_INVALID_ARGUMENT);
        fprintf(f, "{\"gpus\": %d, \"gpu\": \"%s\", \"driver\": %d, \"count\": %zu, \"size\": %zu, "
                   "\"host\": \"%s\", \"rounds\": %d, \"results\": [",
                n, devs[0].gpu.name, info.driver_version, count, size,
                ex_host_kind_name(host_kind), rounds);
        for (int i = 0; i < nresults; i++) {
            const result *r = &results[i];
            fprintf(f, "%s{\"way\": \"%s\", \"issued_by\": \"%s\", \"wall_us\": %.3f, "
                       "\"aggregate_gb_s\": %.4f, \"device_us\": [",
                    i ? ", " : "", r->way, r->mode, r->wall_us, bytes / r->wall_us / 1e3);
            for (int k = 0; k < n && strcmp(r->mode, "thread per GPU") == 0; k++)
                fprintf(f, "%s%.3f", k ? ", " : "", r->device_us[k]);
            fprintf(f, "]}");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    ompbatch_batch_destroy(all);
    for (int k = 0; k < n; k++) {
        ompbatch_batch_destroy(devs[k].direct);
        ompbatch_batch_destroy(devs[k].automatic);
        free(devs[k].check);
    }
    return 0;
}
