#define _POSIX_C_SOURCE 200809L
#include "plugin/api/cost_models.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/api/calibrate.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/cuda/driver.h"

/* Each device's model lives in its slot (driver.h), built under this lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

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

/* Applies OMPBATCH_COST to a model; under the lock. A bad variable is said once per read of
 * the environment, not once per model (one per device, and one for host batches). */
static void apply_overrides(ob_cost_model *model)
{
    static int warned;
    static unsigned long warned_generation;
    char why[256];
    if (ob_cost_apply_overrides(model, ob_config_get()->cost, why, sizeof(why)) >= 0)
        return;
    if (warned && warned_generation == ob_config_generation())
        return;
    warned = 1;
    warned_generation = ob_config_generation();
    fprintf(stderr, "ompbatch: ignoring OMPBATCH_COST: %s\n", why);
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
    apply_overrides(model);
}

/* The model of batches with no CUDA device behind them (host batches, no driver): the
 * built-in figures and OMPBATCH_COST, built once. */
static ob_cost_model without_device;
static int without_device_built;

const ob_cost_model *ob_cost_model_for(int ordinal)
{
    static ob_cost_model no_memory; /* the built-in figures when a model cannot be allocated */
    ob_device_slot *slot = ob_driver_slot(ordinal);
    pthread_mutex_lock(&lock);
    ob_cost_model *model = NULL;
    if (slot == NULL) {
        if (!without_device_built) {
            ob_cost_builtin(&without_device);
            apply_overrides(&without_device);
            without_device_built = 1;
        }
        model = &without_device;
    } else if ((model = slot->model) == NULL) {
        model = malloc(sizeof(*model));
        if (model != NULL) {
            /* Calibration submits batches of its own, which never ask for the model (their
             * strategy is forced), so holding the lock cannot deadlock. */
            build_model(ordinal, model);
            slot->model = model;
            slot->release_model = free;
        } else {
            ob_cost_builtin(&no_memory);
            model = &no_memory;
        }
    }
    pthread_mutex_unlock(&lock);
    return model;
}

void ob_cost_reset_for_testing(void)
{
    const ob_driver *driver = ob_driver_get();
    pthread_mutex_lock(&lock);
    for (int i = 0; driver->loaded && i < driver->device_count; i++) {
        ob_device_slot *slot = ob_driver_slot(i);
        if (slot->model != NULL && slot->release_model != NULL)
            slot->release_model(slot->model);
        slot->model = NULL;
    }
    without_device_built = 0;
    pthread_mutex_unlock(&lock);
}
