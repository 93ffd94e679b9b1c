/* Run-time tunables, read from the environment once (ob_config_reload reads them again).
 * config.c names every OMPBATCH_* variable with its default and range; the only other
 * variables the library reads are NVTX_INJECTION64_PATH (nvtx.c), OMP_TARGET_OFFLOAD,
 * LIBOMPTARGET_INFO and LIBOMPTARGET_DEBUG (omp_hook.c), and XDG_CACHE_HOME and HOME (the
 * cost cache's default place). docs/configuration.md lists them all (tests/docs checks). */
#ifndef OMPBATCH_PLUGIN_CONFIG_H
#define OMPBATCH_PLUGIN_CONFIG_H

#include <stddef.h>

typedef enum ob_form_choice {
    OB_FORM_AUTO = 0,
    OB_FORM_FORCE_13000,
    OB_FORM_FORCE_12080,
    OB_FORM_FORCE_PER_COPY
} ob_form_choice;

typedef enum ob_strategy_choice {
    OB_STRATEGY_AUTO = 0,
    OB_STRATEGY_DIRECT,
    OB_STRATEGY_STAGED
} ob_strategy_choice;

typedef enum ob_calibrate_choice {
    OB_CALIBRATE_OFF = 0,   /* the built-in model (H200 measurements) */
    OB_CALIBRATE_ON,        /* measure once per device model and driver, cache the result */
    OB_CALIBRATE_FORCE      /* measure again, replacing the cache */
} ob_calibrate_choice;

typedef enum ob_strided_choice {
    OB_STRIDED_RUNTIME = 0, /* copy what libomptarget copies; batch where that is the spec's */
    OB_STRIDED_SPEC         /* copy what the OpenMP specification says, for every shape */
} ob_strided_choice;

typedef enum ob_host_busy_choice {
    OB_HOST_BUSY_AUTO = 0, /* busy while every processor has a runnable thread (/proc/loadavg) */
    OB_HOST_BUSY_NEVER,
    OB_HOST_BUSY_ALWAYS
} ob_host_busy_choice;

typedef enum ob_direct_regions_choice {
    OB_DIRECT_REGIONS_TIMED = 0, /* per kernel, whichever way its regions ran faster */
    OB_DIRECT_REGIONS_NEVER,
    OB_DIRECT_REGIONS_ALWAYS
} ob_direct_regions_choice;

typedef struct ob_config {
    int disable;             /* OMPBATCH_DISABLE: every device copy goes per-copy */
    int verbose;             /* OMPBATCH_VERBOSE */
    int stats;               /* OMPBATCH_STATS: print the hook's statistics at exit */
    int nvtx;                /* OMPBATCH_NVTX: 0 keeps submissions out of NVTX profiles */
    size_t max_copies;       /* OMPBATCH_MAX_COPIES: copies per driver batch call */
    long wait_poll_us;       /* OMPBATCH_WAIT_POLL_US: how long a wait polls before blocking */
    size_t staging_bytes;    /* OMPBATCH_STAGING_MB: pinned staging, and device staging, each */
    ob_strategy_choice strategy; /* OMPBATCH_STRATEGY */
    size_t pack_threads;     /* OMPBATCH_PACK_THREADS: threads that pack and unpack */
    size_t bus_bytes;        /* OMPBATCH_BUS_KB: staged levels this small skip the bulk copy */
    ob_host_busy_choice host_busy; /* OMPBATCH_HOST_BUSY */
    ob_direct_regions_choice direct_regions; /* OMPBATCH_DIRECT_REGIONS */
    ob_calibrate_choice calibrate; /* OMPBATCH_CALIBRATE */
    char cost_cache[512];    /* OMPBATCH_COST_CACHE: the calibration cache directory, or "" */
    char cost[512];          /* OMPBATCH_COST: "name=value,..." overrides of the cost model */
    ob_form_choice form;     /* OMPBATCH_BATCH_FORM */
    char cuda_library[512];  /* OMPBATCH_CUDA_LIBRARY */
    ob_strided_choice strided; /* OMPBATCH_STRIDED: the pieces of non-contiguous updates */
    size_t register_bytes;   /* OMPBATCH_REGISTER_MB: mapped host ranges the hook may register
                                with the driver, in all; 0 registers none */
} ob_config;

/* The configuration, read on first use (thread-safe). */
const ob_config *ob_config_get(void);

/* Reads the environment again. Not thread-safe: for tests that change variables between
 * cases, and for the driver loader's reload. */
void ob_config_reload(void);

/* How many times the environment was read: what was decided from an older reading (a batch's
 * reusable plan) is stale. */
unsigned long ob_config_generation(void);

#endif
