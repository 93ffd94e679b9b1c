/* Counts of the driver resources the library creates, for endurance tests and the verbose log:
 * a long-running program must see them stop growing once its batches are warm. */
#ifndef OMPBATCH_PLUGIN_RESOURCES_H
#define OMPBATCH_PLUGIN_RESOURCES_H

#include <stddef.h>

typedef struct ob_resource_counts {
    unsigned long streams_created;  /* the library's own streams (one per device used) */
    unsigned long modules_loaded;   /* copy-kernel modules (one per device used) */
    size_t kept_device_bytes;       /* device memory held by batches for kept descriptors */
    unsigned long kept_tables;      /* batches holding kept descriptors */
} ob_resource_counts;

void ob_resources_stream_created(void);
void ob_resources_module_loaded(void);
/* A batch allocated (bytes > 0) or freed (bytes < 0) kept descriptors. */
void ob_resources_kept(long bytes);
void ob_resources_get(ob_resource_counts *out);

#endif
