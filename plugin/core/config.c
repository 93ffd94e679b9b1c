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
    /* strtol would also take leading blanks and a plus sign. */
    int digits_first = value[0] == '-' || (value[0] >= '0' && value[0] <= '9');
    if (!digits_first || errno != 0 || *end != '\0' || parsed < min || parsed > max) {
        char expected[96];
        snprintf(expected, sizeof(expected), "an integer from %ld to %ld", min, max);
        warn_bad_value(name, value, expected);
        return fallback;
    }
    return parsed;
}

/* One word a variable may hold, and what it stands for. */
typedef struct ob_word {
    const char *word;
    int value;
} ob_word;

/* What the word in variable `name` stands for among words[count], or `fallback` when it is
 * unset, empty or none of them (then named, with the words in their order). */
static int read_word(const char *name, const ob_word *words, size_t count, int fallback)
{
    const char *value = getenv(name);
    if (value == NULL || value[0] == '\0')
        return fallback;
    for (size_t i = 0; i < count; i++)
        if (strcmp(value, words[i].word) == 0)
            return words[i].value;
    char expected[96];
    size_t used = 0;
    for (size_t i = 0; i < count && used < sizeof(expected); i++)
        used += (size_t)snprintf(expected + used, sizeof(expected) - used, "%s%s",
                                 i == 0 ? "" : i + 1 == count ? " or " : ", ", words[i].word);
    warn_bad_value(name, value, expected);
    return fallback;
}

#define OB_WORDS(words) words, sizeof(words) / sizeof((words)[0])

static const ob_word form_words[] = {{"auto", OB_FORM_AUTO},
                                     {"13000", OB_FORM_FORCE_13000},
                                     {"12080", OB_FORM_FORCE_12080},
                                     {"percopy", OB_FORM_FORCE_PER_COPY}};
static const ob_word strategy_words[] = {
    {"auto", OB_STRATEGY_AUTO}, {"direct", OB_STRATEGY_DIRECT}, {"staged", OB_STRATEGY_STAGED}};
static const ob_word strided_words[] = {{"runtime", OB_STRIDED_RUNTIME},
                                        {"spec", OB_STRIDED_SPEC}};
static const ob_word calibrate_words[] = {
    {"0", OB_CALIBRATE_OFF}, {"1", OB_CALIBRATE_ON}, {"force", OB_CALIBRATE_FORCE}};
/* Whether the library takes the host for busy (workers.c, ob_host_saturated): by its load, or
 * always or never, for programs that know better and for tests whose counts must not depend
 * on what else the machine runs. */
static const ob_word host_busy_words[] = {
    {"auto", OB_HOST_BUSY_AUTO}, {"0", OB_HOST_BUSY_NEVER}, {"1", OB_HOST_BUSY_ALWAYS}};
/* Whether the hook runs regions on present data with device addresses (hook_direct_choice.h):
 * timed per kernel, or always or never, for tests whose counts must not depend on timing. */
static const ob_word direct_regions_words[] = {{"timed", OB_DIRECT_REGIONS_TIMED},
                                               {"0", OB_DIRECT_REGIONS_NEVER},
                                               {"1", OB_DIRECT_REGIONS_ALWAYS}};

/* The value of the string variable `name` when set, not empty and no longer than the `size`
 * bytes kept for it allow; NULL otherwise. A value cut short would name another file or
 * directory, or turn the last cost override into another number, so a long one is refused
 * whole. */
static const char *read_string(const char *name, size_t size)
{
    const char *value = getenv(name);
    if (value == NULL || value[0] == '\0')
        return NULL;
    if (strlen(value) >= size) {
        char expected[64];
        snprintf(expected, sizeof(expected), "at most %zu characters", size - 1);
        warn_bad_value(name, value, expected);
        return NULL;
    }
    return value;
}

/* $XDG_CACHE_HOME/ompbatch, else $HOME/.cache/ompbatch; "off" or no home: no cache. */
static void read_cost_cache(char *out, size_t size)
{
    const char *value = read_string("OMPBATCH_COST_CACHE", size);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    out[0] = '\0';
    if (value != NULL) {
        if (strcmp(value, "off") != 0)
            snprintf(out, size, "%s", value);
    } else if (xdg != NULL && xdg[0] == '/') {
        if ((size_t)snprintf(out, size, "%s/ompbatch", xdg) >= size)
            out[0] = '\0'; /* a directory cut short is another one: no cache */
    } else if (home != NULL && home[0] == '/') {
        if ((size_t)snprintf(out, size, "%s/.cache/ompbatch", home) >= size)
            out[0] = '\0';
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
    current.strategy = read_word("OMPBATCH_STRATEGY", OB_WORDS(strategy_words), OB_STRATEGY_AUTO);
    current.pack_threads = (size_t)read_long("OMPBATCH_PACK_THREADS", default_pack_threads(), 1,
                                             64);
    current.bus_bytes = (size_t)read_long("OMPBATCH_BUS_KB", OB_DEFAULT_BUS_KB, 0, 1L << 20) << 10;
    current.calibrate = read_word("OMPBATCH_CALIBRATE", OB_WORDS(calibrate_words), OB_CALIBRATE_ON);
    current.host_busy =
        read_word("OMPBATCH_HOST_BUSY", OB_WORDS(host_busy_words), OB_HOST_BUSY_AUTO);
    current.direct_regions = read_word("OMPBATCH_DIRECT_REGIONS", OB_WORDS(direct_regions_words),
                                       OB_DIRECT_REGIONS_TIMED);
    read_cost_cache(current.cost_cache, sizeof(current.cost_cache));
    const char *cost = read_string("OMPBATCH_COST", sizeof(current.cost));
    snprintf(current.cost, sizeof(current.cost), "%s", cost != NULL ? cost : "");
    current.form = read_word("OMPBATCH_BATCH_FORM", OB_WORDS(form_words), OB_FORM_AUTO);
    const char *library = read_string("OMPBATCH_CUDA_LIBRARY", sizeof(current.cuda_library));
    if (library == NULL)
        library = OB_DEFAULT_CUDA_LIBRARY;
    snprintf(current.cuda_library, sizeof(current.cuda_library), "%s", library);
    current.strided = read_word("OMPBATCH_STRIDED", OB_WORDS(strided_words), OB_STRIDED_RUNTIME);
    current.register_bytes = (size_t)read_long("OMPBATCH_REGISTER_MB", 0, 0, 1L << 24) << 20;
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
