#define _POSIX_C_SOURCE 200809L
#include "cost.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "driver.h"
#include "error.h"
#include "log.h"

const size_t ob_cost_sizes[OB_COST_SIZES] = {16, 256, 4096, 65536, 1048576};

#define OB_COST_FORMAT "ompbatch-cost-model 1"
#define OB_COST_MAX_DEVICES 64

static const char *const lane_names[OB_LANE_COUNT] = {
    [OB_LANE_H2D_PAGEABLE] = "h2d_pageable", [OB_LANE_H2D_PINNED] = "h2d_pinned",
    [OB_LANE_D2H_PAGEABLE] = "d2h_pageable", [OB_LANE_D2H_PINNED] = "d2h_pinned",
    [OB_LANE_D2D] = "d2d",
};
static const char *const way_names[OB_WAY_COUNT] = {[OB_WAY_DIRECT] = "direct",
                                                    [OB_WAY_STAGED] = "staged"};

ob_lane ob_cost_lane(ob_category category)
{
    switch (category) {
    case OB_CAT_H2D_PAGEABLE:
        return OB_LANE_H2D_PAGEABLE;
    case OB_CAT_H2D_PINNED:
        return OB_LANE_H2D_PINNED;
    case OB_CAT_D2H_PAGEABLE:
        return OB_LANE_D2H_PAGEABLE;
    case OB_CAT_D2H_PINNED:
        return OB_LANE_D2H_PINNED;
    case OB_CAT_D2D:
        return OB_LANE_D2D;
    default:
        return OB_LANE_NONE;
    }
}

const char *ob_lane_name(ob_lane lane)
{
    return (unsigned)lane < OB_LANE_COUNT ? lane_names[lane] : "none";
}

const char *ob_way_name(ob_way way)
{
    return (unsigned)way < OB_WAY_COUNT ? way_names[way] : "unknown";
}

/* The H200's figures: per-piece microseconds at 16 B, 256 B, 4 KiB, 64 KiB and 1 MiB, measured
 * with 1024 pieces per way (direct batches and per-copy loops, staged packs with one packing
 * thread), bulk bandwidth for 1 MiB; docs/strategies.md, "Auto and the cost model", has the
 * table. */
static const ob_cost_curve builtin[OB_LANE_COUNT][OB_WAY_COUNT] = {
    [OB_LANE_H2D_PAGEABLE] = {{8.0, {0.85, 0.90, 1.22, 10.9, 166.0}},
                              {15.0, {0.03, 0.04, 0.42, 12.0, 105.0}}},
    [OB_LANE_H2D_PINNED] = {{8.0, {0.42, 0.99, 1.32, 1.93, 19.5}},
                            {10.0, {0.015, 0.02, 0.098, 1.30, 21.0}}},
    [OB_LANE_D2H_PAGEABLE] = {{8.0, {6.8, 6.8, 7.2, 16.7, 100.0}},
                              {15.0, {0.04, 0.046, 0.44, 12.0, 105.0}}},
    [OB_LANE_D2H_PINNED] = {{8.0, {0.39, 0.39, 0.45, 1.56, 19.5}},
                            {10.0, {0.015, 0.02, 0.10, 1.30, 21.0}}},
    [OB_LANE_D2D] = {{8.0, {3.5, 3.5, 3.88, 3.56, 4.2}}, {10.0, {0.01, 0.01, 0.01, 0.05, 1.0}}},
};

void ob_cost_builtin(ob_cost_model *model)
{
    memset(model, 0, sizeof(*model));
    memcpy(model->curve, builtin, sizeof(builtin));
    snprintf(model->source, sizeof(model->source), "built-in (H200)");
}

double ob_cost_piece(const ob_cost_curve *curve, size_t bytes)
{
    const size_t *s = ob_cost_sizes;
    const double *p = curve->piece_us;
    if (bytes <= s[0])
        return p[0];
    for (int k = 1; k < OB_COST_SIZES; k++) {
        if (bytes <= s[k]) {
            double t = (double)(bytes - s[k - 1]) / (double)(s[k] - s[k - 1]);
            return p[k - 1] + t * (p[k] - p[k - 1]);
        }
    }
    /* Past the largest size a piece costs what its bytes cost there. */
    return p[OB_COST_SIZES - 1] * (double)bytes / (double)s[OB_COST_SIZES - 1];
}

/* ---- OMPBATCH_COST ------------------------------------------------------------------------- */

static int find_name(const char *const *names, int count, const char *name, size_t length)
{
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == length && strncmp(names[i], name, length) == 0)
            return i;
    return -1;
}

/* One "lane.way.key=value" entry into *slot. */
static int parse_entry(ob_cost_model *model, const char *entry, size_t length, double **slot,
                       double *value)
{
    char text[128];
    if (length >= sizeof(text))
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "OMPBATCH_COST entry is too long");
    memcpy(text, entry, length);
    text[length] = '\0';
    char *dot1 = strchr(text, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    char *equals = dot2 ? strchr(dot2 + 1, '=') : NULL;
    if (equals == NULL)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "OMPBATCH_COST entry \"%s\" is not lane.way.key=microseconds", text);
    int lane = find_name(lane_names, OB_LANE_COUNT, text, (size_t)(dot1 - text));
    int way = find_name(way_names, OB_WAY_COUNT, dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (lane < 0 || way < 0)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "OMPBATCH_COST entry \"%s\": unknown %s", text, lane < 0 ? "lane" : "way");
    *equals = '\0';
    char *end = NULL;
    errno = 0;
    *value = strtod(equals + 1, &end);
    if (errno != 0 || end == equals + 1 || *end != '\0' || !(*value >= 0.0))
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "OMPBATCH_COST entry \"%s\": the value is not a number of microseconds",
                       entry);
    ob_cost_curve *curve = &model->curve[lane][way];
    const char *key = dot2 + 1;
    if (strcmp(key, "fixed") == 0) {
        *slot = &curve->fixed_us;
        return OMPBATCH_OK;
    }
    unsigned long size = strtoul(key, &end, 10);
    for (int k = 0; k < OB_COST_SIZES && *end == '\0'; k++) {
        if (ob_cost_sizes[k] == size) {
            *slot = &curve->piece_us[k];
            return OMPBATCH_OK;
        }
    }
    return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                   "OMPBATCH_COST entry \"%.*s\": key \"%s\" is neither fixed nor one of the "
                   "sizes 16, 256, 4096, 65536, 1048576",
                   (int)length, entry, key);
}

int ob_cost_apply_overrides(ob_cost_model *model, const char *text)
{
    ob_cost_model changed = *model;
    int applied = 0;
    for (const char *at = text; at != NULL && *at != '\0';) {
        const char *comma = strchr(at, ',');
        size_t length = comma ? (size_t)(comma - at) : strlen(at);
        if (length > 0) {
            double *slot = NULL, value = 0.0;
            int status = parse_entry(&changed, at, length, &slot, &value);
            if (status != OMPBATCH_OK)
                return status;
            *slot = value;
            applied++;
        }
        at = comma ? comma + 1 : NULL;
    }
    if (applied > 0) {
        *model = changed;
        size_t used = strlen(model->source);
        snprintf(model->source + used, sizeof(model->source) - used, " + OMPBATCH_COST");
    }
    return applied;
}

/* ---- the cache file ------------------------------------------------------------------------ */

int ob_cost_write(const ob_cost_model *model, const char *path)
{
    char temporary[600];
    snprintf(temporary, sizeof(temporary), "%s.%ld.tmp", path, (long)getpid());
    FILE *file = fopen(temporary, "w");
    if (file == NULL)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "cannot write %s: %s", temporary,
                       strerror(errno));
    fprintf(file, "%s\n", OB_COST_FORMAT);
    for (int lane = 0; lane < OB_LANE_COUNT; lane++) {
        for (int way = 0; way < OB_WAY_COUNT; way++) {
            const ob_cost_curve *c = &model->curve[lane][way];
            fprintf(file, "%s %s %.4f", lane_names[lane], way_names[way], c->fixed_us);
            for (int k = 0; k < OB_COST_SIZES; k++)
                fprintf(file, " %.4f", c->piece_us[k]);
            fprintf(file, "\n");
        }
    }
    int failed = ferror(file);
    failed |= fclose(file) != 0;
    /* Renamed into place whole, so a concurrent reader never sees half a model. */
    if (failed || rename(temporary, path) != 0) {
        remove(temporary);
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "cannot write %s", path);
    }
    return OMPBATCH_OK;
}

int ob_cost_read(ob_cost_model *model, const char *path)
{
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "cannot read %s", path);
    char line[512];
    int seen[OB_LANE_COUNT][OB_WAY_COUNT] = {{0}};
    int status = OMPBATCH_OK, lines = 0;
    ob_cost_model read;
    memset(&read, 0, sizeof(read));
    if (fgets(line, sizeof(line), file) == NULL || strncmp(line, OB_COST_FORMAT,
                                                           strlen(OB_COST_FORMAT)) != 0)
        status = ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "%s is not a cost model", path);
    while (status == OMPBATCH_OK && fgets(line, sizeof(line), file) != NULL) {
        char lane_name[32], way_name[32];
        double v[1 + OB_COST_SIZES];
        int n = sscanf(line, "%31s %31s %lf %lf %lf %lf %lf %lf", lane_name, way_name, &v[0],
                       &v[1], &v[2], &v[3], &v[4], &v[5]);
        int lane = find_name(lane_names, OB_LANE_COUNT, lane_name, strlen(lane_name));
        int way = find_name(way_names, OB_WAY_COUNT, way_name, strlen(way_name));
        int ok = n == 2 + 1 + OB_COST_SIZES && lane >= 0 && way >= 0;
        for (int k = 0; ok && k < 1 + OB_COST_SIZES; k++)
            ok = v[k] >= 0.0 && v[k] < 1e9;
        if (!ok) {
            status = ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: bad line %d", path, lines + 2);
            break;
        }
        read.curve[lane][way].fixed_us = v[0];
        memcpy(read.curve[lane][way].piece_us, &v[1], sizeof(double) * OB_COST_SIZES);
        seen[lane][way] = 1;
        lines++;
    }
    fclose(file);
    for (int lane = 0; status == OMPBATCH_OK && lane < OB_LANE_COUNT; lane++)
        for (int way = 0; way < OB_WAY_COUNT; way++)
            if (!seen[lane][way])
                status = ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "%s lacks %s %s", path,
                                 lane_names[lane], way_names[way]);
    if (status != OMPBATCH_OK)
        return status;
    snprintf(read.source, sizeof(read.source), "cache %.140s", path);
    *model = read;
    return OMPBATCH_OK;
}

/* ---- per device ------------------------------------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ob_cost_model *models[OB_COST_MAX_DEVICES];

/* "-blocking" or "-yield" for a primary context whose waits block or yield, "" for one that
 * spins (CUDA's automatic choice, for fewer contexts than cores), NULL when the driver cannot
 * say. A model measured in one mode misleads in another: libomptarget sets
 * CU_CTX_SCHED_BLOCKING_SYNC, and there a direct copy into pageable memory, in which the driver
 * waits, measured 18-53 us a piece on the H200 against 6.6-7.3 us in the benchmark's context;
 * with the benchmark's model the hook sent 2-item 'update from' constructs direct, 2-5x slower
 * than staged (benchmarks/2026-12-02-h200-2205/). */
static const char *sched_suffix(const ob_driver *driver, CUdevice device)
{
    unsigned flags = 0;
    int active = 0;
    if (driver->fn.cuDevicePrimaryCtxGetState == NULL ||
        OB_CU(driver, cuDevicePrimaryCtxGetState, device, &flags, &active) != OMPBATCH_OK)
        return NULL;
    switch (flags & CU_CTX_SCHED_MASK) {
    case CU_CTX_SCHED_BLOCKING_SYNC:
        return "-blocking";
    case CU_CTX_SCHED_YIELD:
        return "-yield";
    default:
        return "";
    }
}

/* <cache dir>/<device name>-<driver version><sched_suffix>.cost, with anything but
 * [A-Za-z0-9._-] in the name as '_'. */
static int cache_path(int ordinal, char *out, size_t size)
{
    const ob_config *config = ob_config_get();
    const ob_driver *driver = ob_driver_get();
    if (config->cost_cache[0] == '\0' || driver->fn.cuDeviceGetName == NULL)
        return 0;
    CUdevice device;
    char name[128] = "";
    const char *sched = NULL;
    /* Without the name or the scheduling mode there is no cache file to trust: the model is
     * measured again. */
    if (OB_CU(driver, cuDeviceGet, &device, ordinal) != OMPBATCH_OK ||
        OB_CU(driver, cuDeviceGetName, name, (int)sizeof(name), device) != OMPBATCH_OK ||
        (sched = sched_suffix(driver, device)) == NULL) {
        ob_log(1, "device %d: no calibration cache (%s)", ordinal,
               driver->fn.cuDevicePrimaryCtxGetState == NULL
                   ? "the driver cannot say how the context waits"
                   : ompbatch_last_error());
        return 0;
    }
    for (char *c = name; *c != '\0'; c++) {
        int keep = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                   (*c >= '0' && *c <= '9') || *c == '.' || *c == '-';
        if (!keep)
            *c = '_';
    }
    int n = snprintf(out, size, "%s/%s-%d%s.cost", config->cost_cache, name, driver->version,
                     sched);
    return n > 0 && (size_t)n < size;
}

/* mkdir -p for the cache directory. */
static void make_directories(const char *dir)
{
    char path[512];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *slash = path + 1; *slash != '\0'; slash++) {
        if (*slash == '/') {
            *slash = '\0';
            mkdir(path, 0755);
            *slash = '/';
        }
    }
    mkdir(path, 0755);
}

static void build_model(int ordinal, ob_cost_model *model)
{
    const ob_config *config = ob_config_get();
    ob_cost_builtin(model);
    if (config->calibrate != OB_CALIBRATE_OFF) {
        char path[600];
        int cached = cache_path(ordinal, path, sizeof(path));
        /* No file yet is the first run's normal case, not an error worth a log line. */
        if (cached && config->calibrate == OB_CALIBRATE_ON && access(path, F_OK) == 0 &&
            ob_cost_read(model, path) == OMPBATCH_OK) {
            ob_log(1, "device %d: cost model from %s", ordinal, path);
        } else if (ob_cost_calibrate(ordinal, model) == OMPBATCH_OK) {
            if (cached) {
                make_directories(config->cost_cache);
                if (ob_cost_write(model, path) != OMPBATCH_OK)
                    ob_log(1, "device %d: calibration not cached: %s", ordinal,
                           ompbatch_last_error());
            }
        } else {
            ob_log(1, "device %d: calibration failed (%s); using the built-in cost model",
                   ordinal, ompbatch_last_error());
            ob_cost_builtin(model);
        }
    }
    int applied = ob_cost_apply_overrides(model, config->cost);
    if (applied < 0)
        fprintf(stderr, "ompbatch: ignoring OMPBATCH_COST: %s\n", ompbatch_last_error());
}

const ob_cost_model *ob_cost_model_for(int ordinal)
{
    static ob_cost_model fallback; /* out-of-range ordinals and allocation failures */
    if (ordinal < 0 || ordinal >= OB_COST_MAX_DEVICES) {
        pthread_mutex_lock(&lock);
        ob_cost_builtin(&fallback);
        pthread_mutex_unlock(&lock);
        return &fallback;
    }
    pthread_mutex_lock(&lock);
    ob_cost_model *model = models[ordinal];
    if (model == NULL) {
        model = malloc(sizeof(*model));
        if (model != NULL) {
            /* Calibration submits batches of its own, which never ask for the model (their
             * strategy is forced), so holding the lock cannot deadlock. */
            build_model(ordinal, model);
            models[ordinal] = model;
        } else {
            ob_cost_builtin(&fallback);
            model = &fallback;
        }
    }
    pthread_mutex_unlock(&lock);
    return model;
}

void ob_cost_reset_for_testing(void)
{
    for (int i = 0; i < OB_COST_MAX_DEVICES; i++) {
        free(models[i]);
        models[i] = NULL;
    }
}
