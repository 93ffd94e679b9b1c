/* Run-time tunables, read from the environment once. The table in config.c is the single
 * place that names every variable, its default and its range. */
#ifndef OMPBATCH_PLUGIN_CONFIG_H
#define OMPBATCH_PLUGIN_CONFIG_H

#include <stddef.h>

typedef enum ob_form_choice {
    OB_FORM_AUTO = 0,
    OB_FORM_FORCE_13000,
    OB_FORM_FORCE_12080,
    OB_FORM_FORCE_PER_COPY
} ob_form_choice;

typedef struct ob_config {
    int disable;             /* OMPBATCH_DISABLE: every device copy goes per-copy */
    int verbose;             /* OMPBATCH_VERBOSE */
    int stats;               /* OMPBATCH_STATS: print the hook's statistics at exit */
    size_t max_copies;       /* OMPBATCH_MAX_COPIES: copies per driver batch call */
    long wait_poll_us;       /* OMPBATCH_WAIT_POLL_US: how long a wait polls before blocking */
    size_t staging_bytes;    /* OMPBATCH_STAGING_MB: pinned staging of all threads together */
    int scatter;             /* OMPBATCH_SCATTER: the hook's device scatter kernel */
    ob_form_choice form;     /* OMPBATCH_BATCH_FORM */
    char cuda_library[512];  /* OMPBATCH_CUDA_LIBRARY */
} ob_config;

/* The configuration, read on first use (thread-safe). */
const ob_config *ob_config_get(void);

/* Reads the environment again. Not thread-safe: for tests that change variables between
 * cases, and for the driver loader's reload. */
void ob_config_reload(void);

#endif
