#define _POSIX_C_SOURCE 200809L
#include "plugin/core/config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OB_DEFAULT_MAX_COPIES 4096
#define OB_DEFAULT_CUDA_LIBRARY "libcuda.so.1"
/* libomptarget makes the primary context CU_CTX_SCHED_BLOCKING_SYNC, under which every
 * cuStreamSynchronize sleeps until the GPU wakes the thread: tens of microseconds even for a
 * copy that took one. Small batches finish well inside this; long ones block after it. */
#define OB_DEFAULT_WAIT_POLL_US 200
/* Staged levels with at most this many packed and gathered KiB move them over the bus, by the
 * copy kernel alone (backend_staged.c says why this size). */
#define OB_DEFAULT_BUS_KB 1024

static ob_config current;
static unsigned long generation;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A bad value is a user mistake worth seeing even without OMPBATCH_VERBOSE, so it is printed
 * unconditionally, once per read of the environment. */
static void warn_bad_value(const char *name, const char *value, const char *expected)
{
    fprintf(stderr, "ompbatch: ignoring %s=\"%s\": expected %s\n", name, value, expected);
}

static long read_long(const char *name, long fallback, long min, long max)
{
    const char *value = getenv(name);
    if (value == NULL || value[0] == '\0')
        return fallback;
    char *end = NULL;
    errno = 0;
    long parsed = strtol(value, &end, 10);
    if (errno != 0 || *end != '\0' || parsed < min || parsed > max) {
        char expected[96];
        snprintf(expected, sizeof(expected), "an integer from %ld to %ld", min, max);
        warn_bad_value(name, value, expected);
        return fallback;
    }
    return parsed;
}

static ob_form_choice read_form(void)
{
    const char *value = getenv("OMPBATCH_BATCH_FORM");
    if (value == NULL || value[0] == '\0' || strcmp(value, "auto") == 0)
        return OB_FORM_AUTO;
    if (strcmp(value, "13000") == 0)
        return OB_FORM_FORCE_13000;
    if (strcmp(value, "12080") == 0)
        return OB_FORM_FORCE_12080;
    if (strcmp(value, "percopy") == 0)
        return OB_FORM_FORCE_PER_COPY;
    warn_bad_value("OMPBATCH_BATCH_FORM", value, "auto, 13000, 12080 or percopy");
    return OB_FORM_AUTO;
}

static ob_strategy_choice read_strategy(void)
{
    const char *value = getenv("OMPBATCH_STRATEGY");
    if (value == NULL || value[0] == '\0' || strcmp(value, "auto") == 0)
        return OB_STRATEGY_AUTO;
    if (strcmp(value, "direct") == 0)
        return OB_STRATEGY_DIRECT;
    if (strcmp(value, "staged") == 0)
        return OB_STRATEGY_STAGED;
    warn_bad_value("OMPBATCH_STRATEGY", value, "auto, direct or staged");
    return OB_STRATEGY_AUTO;
}

static ob_strided_choice read_strided(void)
{
    const char *value = getenv("OMPBATCH_STRIDED");
    if (value == NULL || value[0] == '\0' || strcmp(value, "runtime") == 0)
        return OB_STRIDED_RUNTIME;
    if (strcmp(value, "spec") == 0)
        return OB_STRIDED_SPEC;
    warn_bad_value("OMPBATCH_STRIDED", value, "runtime or spec");
    return OB_STRIDED_RUNTIME;
}

static ob_calibrate_choice read_calibrate(void)
{
    const char *value = getenv("OMPBATCH_CALIBRATE");
    if (value == NULL || value[0] == '\0' || strcmp(value, "1") == 0)
        return OB_CALIBRATE_ON;
    if (strcmp(value, "0") == 0)
        return OB_CALIBRATE_OFF;
    if (strcmp(value, "force") == 0)
        return OB_CALIBRATE_FORCE;
    warn_bad_value("OMPBATCH_CALIBRATE", value, "0, 1 or force");
    return OB_CALIBRATE_ON;
}

/* Whether the library takes the host for busy (workers.c, ob_host_saturated): by its load, or
 * always or never, for programs that know better and for tests whose counts must not depend
 * on what else the machine runs. */
static ob_host_busy_choice read_host_busy(void)
{
    const char *value = getenv("OMPBATCH_HOST_BUSY");
    if (value == NULL || value[0] == '\0' || strcmp(value, "auto") == 0)
        return OB_HOST_BUSY_AUTO;
    if (strcmp(value, "0") == 0)
        return OB_HOST_BUSY_NEVER;
    if (strcmp(value, "1") == 0)
        return OB_HOST_BUSY_ALWAYS;
    warn_bad_value("OMPBATCH_HOST_BUSY", value, "auto, 0 or 1");
    return OB_HOST_BUSY_AUTO;
}

/* $XDG_CACHE_HOME/ompbatch, else $HOME/.cache/ompbatch; "off" or no home: no cache. */
static void read_cost_cache(char *out, size_t size)
{
    const char *value = getenv("OMPBATCH_COST_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    out[0] = '\0';
    if (value != NULL && value[0] != '\0') {
        if (strcmp(value, "off") != 0)
            snprintf(out, size, "%s", value);
    } else if (xdg != NULL && xdg[0] == '/') {
        snprintf(out, size, "%s/ompbatch", xdg);
    } else if (home != NULL && home[0] == '/') {
        snprintf(out, size, "%s/.cache/ompbatch", home);
    }
}

/* Half the processors, at most 8: packing is bound by memory bandwidth, which a few threads
 * saturate, and an OpenMP program's own threads need the rest. */
static long default_pack_threads(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long threads = cpus > 1 ? cpus / 2 : 1;
    return threads > 8 ? 8 : threads;
}

static void read_environment(void)
{
    current.disable = (int)read_long("OMPBATCH_DISABLE", 0, 0, 1);
    current.verbose = (int)read_long("OMPBATCH_VERBOSE", 0, 0, 3);
    current.stats = (int)read_long("OMPBATCH_STATS", 0, 0, 1);
    current.nvtx = (int)read_long("OMPBATCH_NVTX", 1, 0, 1);
    current.max_copies = (size_t)read_long("OMPBATCH_MAX_COPIES", OB_DEFAULT_MAX_COPIES, 1,
                                           1L << 24);
    current.wait_poll_us = read_long("OMPBATCH_WAIT_POLL_US", OB_DEFAULT_WAIT_POLL_US, 0, 1000000);
    current.staging_bytes = (size_t)read_long("OMPBATCH_STAGING_MB", 256, 0, 1L << 20) << 20;
    current.strategy = read_strategy();
    current.pack_threads = (size_t)read_long("OMPBATCH_PACK_THREADS", default_pack_threads(), 1,
                                             64);
    current.bus_bytes = (size_t)read_long("OMPBATCH_BUS_KB", OB_DEFAULT_BUS_KB, 0, 1L << 20) << 10;
    current.calibrate = read_calibrate();
    current.host_busy = read_host_busy();
    read_cost_cache(current.cost_cache, sizeof(current.cost_cache));
    const char *cost = getenv("OMPBATCH_COST");
    snprintf(current.cost, sizeof(current.cost), "%s", cost != NULL ? cost : "");
    current.form = read_form();
    const char *library = getenv("OMPBATCH_CUDA_LIBRARY");
    if (library == NULL || library[0] == '\0')
        library = OB_DEFAULT_CUDA_LIBRARY;
    snprintf(current.cuda_library, sizeof(current.cuda_library), "%s", library);
    current.strided = read_strided();
}

const ob_config *ob_config_get(void)
{
    pthread_once(&once, read_environment);
    return &current;
}

void ob_config_reload(void)
{
    pthread_once(&once, read_environment);
    read_environment();
    generation++;
}

unsigned long ob_config_generation(void)
{
    return generation;
}
