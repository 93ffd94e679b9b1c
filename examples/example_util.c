#define _POSIX_C_SOURCE 200809L
#include "example_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double ex_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ex_median(double *values, size_t count)
{
    if (count == 0)
        return 0.0;
    qsort(values, count, sizeof(*values), compare_double);
    if (count % 2 == 1)
        return values[count / 2];
    return 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

double ex_min(const double *values, size_t count)
{
    double best = count ? values[0] : 0.0;
    for (size_t i = 1; i < count; i++)
        if (values[i] < best)
            best = values[i];
    return best;
}

void ex_fill_random(void *buf, size_t bytes, uint64_t *state)
{
    unsigned char *p = buf;
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ULL;
    while (bytes > 0) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t word = x * 0x2545F4914F6CDD1DULL;
        size_t n = bytes < sizeof(word) ? bytes : sizeof(word);
        memcpy(p, &word, n);
        p += n;
        bytes -= n;
    }
    *state = x;
}

int ex_check_pieces(const unsigned char *got, const unsigned char *expect, size_t count,
                    size_t size, size_t stride, char *why, size_t why_size)
{
    for (size_t i = 0; i < count; i++) {
        const unsigned char *g = got + i * stride;
        const unsigned char *e = expect + i * stride;
        if (memcmp(g, e, size) != 0) {
            size_t at = 0;
            while (g[at] == e[at])
                at++;
            snprintf(why, why_size, "piece %zu byte %zu is 0x%02x, expected 0x%02x%s", i, at,
                     g[at], e[at], g[at] == EX_POISON ? " (never written)" : "");
            return 0;
        }
        for (size_t at = size; at < stride; at++) {
            if (g[at] != EX_POISON) {
                snprintf(why, why_size,
                         "gap after piece %zu, byte %zu past its end, was overwritten (0x%02x)",
                         i, at - size, g[at]);
                return 0;
            }
        }
    }
    if (why_size > 0)
        why[0] = '\0';
    return 1;
}

const char *ex_form_name(int form)
{
    switch (form) {
    case OMPBATCH_FORM_NONE:
        return "none (host paths only)";
    case OMPBATCH_FORM_PER_COPY:
        return "per-copy cuMemcpyAsync";
    case OMPBATCH_FORM_V12080:
        return "cuMemcpyBatchAsync v12080";
    case OMPBATCH_FORM_V13000:
        return "cuMemcpyBatchAsync v13000";
    }
    return "unknown";
}

const char *ex_paths_name(unsigned paths, char *buf, size_t size)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {
        {OMPBATCH_PATH_BATCH, "batch"},   {OMPBATCH_PATH_PER_COPY, "per-copy"},
        {OMPBATCH_PATH_HOST, "host"},     {OMPBATCH_PATH_KERNEL, "kernel"},
        {OMPBATCH_PATH_STAGED, "staged"},
    };
    size_t used = 0;
    if (size == 0)
        return buf;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!(paths & names[i].bit))
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? "+" : "", names[i].name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(buf, size, "%s", paths ? "unknown" : "none");
    return buf;
}

const char *ex_size_name(size_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    size_t unit = 0;
    double value = (double)bytes;
    while (value >= 1024.0 && unit + 1 < sizeof(units) / sizeof(units[0])) {
        value /= 1024.0;
        unit++;
    }
    if (value == (double)(size_t)value)
        snprintf(buf, size, "%zu %s", (size_t)value, units[unit]);
    else
        snprintf(buf, size, "%.1f %s", value, units[unit]);
    return buf;
}

void ex_print_driver_info(FILE *out, const char *prefix, const ompbatch_driver_info *info)
{
    fprintf(out, "%sloaded=%d version=%d devices=%d form=%s%s library=%s", prefix,
            info->driver_loaded, info->driver_version, info->device_count,
            ex_form_name(info->batch_form), info->forced ? " (forced by OMPBATCH_BATCH_FORM)" : "",
            info->library ? info->library : "(none)");
    if (info->reason != NULL && info->reason[0] != '\0')
        fprintf(out, " reason=\"%s\"", info->reason);
    fputc('\n', out);
}

void ex_print_stats(FILE *out, const char *prefix, const ompbatch_stats *stats)
{
    char paths[48];
    fputs(prefix, out);
    const char *sep = "";
#define EX_PRINT_COUNT(field)                                                                   \
    fprintf(out, "%s" #field "=%llu", sep, (unsigned long long)stats->field), sep = " ";
#define EX_PRINT_PATHS(field)                                                                   \
    fprintf(out, "%s" #field "=%s", sep, ex_paths_name(stats->field, paths, sizeof(paths))),    \
        sep = " ";
    OMPBATCH_STATS_LIST(EX_PRINT_COUNT, EX_PRINT_PATHS)
#undef EX_PRINT_COUNT
#undef EX_PRINT_PATHS
    fputc('\n', out);
}

int ex_report_failure(const char *program, const char *what, int status)
{
    const char *message = ompbatch_last_error();
    fprintf(stderr, "%s: %s: %s: %s\n", program, what, ompbatch_err_name(status),
            message[0] ? message : ompbatch_strerror(status));
    return 1;
}
