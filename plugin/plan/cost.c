#define _POSIX_C_SOURCE 200809L
#include "plugin/plan/cost.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/cuda/driver.h"

const size_t ob_cost_sizes[OB_COST_SIZES] = {16, 256, 4096, 65536, 1048576};

/* 2: staged levels of up to OMPBATCH_BUS_KB move over the bus, which a model measured before
 * (format 1) does not know; such a file is measured again. */
#define OB_COST_FORMAT "ompbatch-cost-model 2"

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

/* Says why an entry is not one, in why; returns -1. */
static int bad_entry(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad_entry(char *why, size_t why_size, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, why_size, fmt, args);
    va_end(args);
    return -1;
}

/* One "lane.way.key=value" entry into *slot; 0, or -1 with why it is not one in why. */
static int parse_entry(ob_cost_model *model, const char *entry, size_t length, double **slot,
                       double *value, char *why, size_t why_size)
{
    char text[128];
    if (length >= sizeof(text))
        return bad_entry(why, why_size,
                         "OMPBATCH_COST entry \"%.*s\" is longer than %zu characters",
                         (int)length, entry, sizeof(text) - 1);
    memcpy(text, entry, length);
    text[length] = '\0';
    char *dot1 = strchr(text, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    char *equals = dot2 ? strchr(dot2 + 1, '=') : NULL;
    if (equals == NULL)
        return bad_entry(why, why_size,
                         "OMPBATCH_COST entry \"%s\" is not lane.way.key=microseconds", text);
    int lane = find_name(lane_names, OB_LANE_COUNT, text, (size_t)(dot1 - text));
    int way = find_name(way_names, OB_WAY_COUNT, dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (lane < 0 || way < 0)
        return bad_entry(why, why_size, "OMPBATCH_COST entry \"%s\": unknown %s", text,
                         lane < 0 ? "lane" : "way");
    *equals = '\0';
    char *end = NULL;
    errno = 0;
    *value = strtod(equals + 1, &end);
    if (errno != 0 || end == equals + 1 || *end != '\0' || !(*value >= 0.0))
        return bad_entry(why, why_size,
                         "OMPBATCH_COST entry \"%.*s\": the value is not a number of "
                         "microseconds",
                         (int)length, entry);
    ob_cost_curve *curve = &model->curve[lane][way];
    const char *key = dot2 + 1;
    if (strcmp(key, "fixed") == 0) {
        *slot = &curve->fixed_us;
        return 0;
    }
    unsigned long size = strtoul(key, &end, 10);
    for (int k = 0; k < OB_COST_SIZES && *end == '\0'; k++) {
        if (ob_cost_sizes[k] == size) {
            *slot = &curve->piece_us[k];
            return 0;
        }
    }
    return bad_entry(why, why_size,
                     "OMPBATCH_COST entry \"%.*s\": key \"%s\" is neither fixed nor one of the "
                     "sizes 16, 256, 4096, 65536, 1048576",
                     (int)length, entry, key);
}

int ob_cost_apply_overrides(ob_cost_model *model, const char *text, char *why, size_t why_size)
{
    ob_cost_model changed = *model;
    int applied = 0;
    for (const char *at = text; at != NULL && *at != '\0';) {
        const char *comma = strchr(at, ',');
        size_t length = comma ? (size_t)(comma - at) : strlen(at);
        if (length > 0) {
            double *slot = NULL, value = 0.0;
            if (parse_entry(&changed, at, length, &slot, &value, why, why_size) != 0)
                return -1;
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
