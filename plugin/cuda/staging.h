/* Staging for the staged strategy: per CUDA device, a pool of regions that each pair a pinned,
 * device-mapped host area with a device area. A batch takes one region for a submit and gives
 * it back after waiting, so concurrent batches never share a region in flight. Regions are
 * reused across batches, grown on demand, counted against OMPBATCH_STAGING_MB (pinned and
 * device memory separately) and freed at exit. */
#ifndef OMPBATCH_PLUGIN_STAGING_H
#define OMPBATCH_PLUGIN_STAGING_H

#include <stddef.h>

#include "plugin/cuda/driver.h"

typedef struct ob_staging {
    int ordinal;
    unsigned char *host;   /* cuMemAllocHost: the GPU reaches it at the same address */
    size_t host_size;
    CUdeviceptr device;
    size_t device_size;
    int in_use;
    struct ob_staging *next;
} ob_staging;

/* A region of CUDA device `ordinal` with at least host_bytes of pinned and device_bytes of
 * device memory (either may be 0). The device's context must be current. Fails with
 * OMPBATCH_ERR_NO_MEMORY when the cap refuses or the driver cannot allocate; the caller then
 * copies directly. */
int ob_staging_acquire(int ordinal, size_t host_bytes, size_t device_bytes, ob_staging **out);

/* Gives a region back once nothing in flight uses it. NULL is allowed. */
void ob_staging_release(ob_staging *region);

typedef struct ob_staging_totals {
    size_t regions;        /* regions held, in use or idle */
    size_t in_use;
    size_t host_bytes;     /* pinned memory held */
    size_t device_bytes;   /* device memory held */
    size_t allocations;    /* areas allocated since start (growth counts) */
} ob_staging_totals;

void ob_staging_get_totals(ob_staging_totals *out);

/* Frees every idle region (regions in use stay). Runs at exit; tests call it to start over. */
void ob_staging_free_idle(void);

#endif
