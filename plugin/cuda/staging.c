#include "plugin/cuda/staging.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"

/* Areas come in powers of two from 1 MiB, so a batch that grows a little reuses its region. */
#define OB_STAGING_MIN_AREA ((size_t)1 << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ob_staging *regions;
static ob_staging_totals totals;
static int exit_handler_registered;

static size_t area_size(size_t bytes)
{
    if (bytes == 0)
        return 0;
    size_t size = OB_STAGING_MIN_AREA;
    while (size < bytes && size <= SIZE_MAX / 2)
        size *= 2;
    return size < bytes ? bytes : size;
}

/* Frees a region's areas; the lock is held. The region's context is made current for it.
 * Nothing here can fail its caller (a region outgrown, the pool emptied at exit): a failed
 * driver call is logged where it fails, and its memory is left to the driver. */
static void free_areas(ob_staging *region)
{
    const ob_driver *driver = ob_driver_get();
    int pushed = 0;
    if (ob_driver_enter_context(region->ordinal, &pushed) == OMPBATCH_OK) {
        if (region->host != NULL)
            (void)OB_CU(driver, cuMemFreeHost, region->host);
        if (region->device != 0)
            (void)OB_CU(driver, cuMemFree, region->device);
        (void)ob_driver_leave_context(pushed, OMPBATCH_OK);
    }
    totals.host_bytes -= region->host_size;
    totals.device_bytes -= region->device_size;
    region->host = NULL;
    region->device = 0;
    region->host_size = region->device_size = 0;
}

static void free_idle_locked(void)
{
    ob_staging **link = &regions;
    while (*link != NULL) {
        ob_staging *region = *link;
        if (region->in_use) {
            link = &region->next;
            continue;
        }
        free_areas(region);
        *link = region->next;
        totals.regions--;
        free(region);
    }
}

void ob_staging_free_idle(void)
{
    pthread_mutex_lock(&lock);
    free_idle_locked();
    pthread_mutex_unlock(&lock);
}

/* Registered after the first allocation, so after cuInit: exit handlers run in reverse, so
 * this one runs while the driver still works. */
static void free_at_exit(void)
{
    ob_staging_free_idle();
}

/* Whether `extra` more bytes fit beside `held` under the cap; frees idle regions to make room
 * when they would not. The lock is held. */
static int fits(const size_t *held, size_t extra)
{
    size_t cap = ob_config_get()->staging_bytes;
    if (*held + extra <= cap)
        return 1;
    free_idle_locked();
    return *held + extra <= cap;
}

/* The two areas of a region differ only in how the driver allocates them. */
typedef struct area_kind {
    const char *what;  /* for messages */
    size_t *total;     /* in totals, against the cap */
    int (*alloc)(const ob_driver *driver, size_t size, uintptr_t *out);
    void (*release)(const ob_driver *driver, uintptr_t ptr);
} area_kind;

static int alloc_pinned(const ob_driver *driver, size_t size, uintptr_t *out)
{
    if (driver->fn.cuMemAllocHost == NULL || driver->fn.cuMemFreeHost == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "the driver has no cuMemAllocHost");
    void *ptr = NULL;
    int status = OB_CU(driver, cuMemAllocHost, &ptr, size);
    *out = (uintptr_t)ptr;
    return status;
}

/* Freeing an area being replaced: a failure is logged where it fails, and the new area is
 * used regardless. */
static void release_pinned(const ob_driver *driver, uintptr_t ptr)
{
    (void)OB_CU(driver, cuMemFreeHost, (void *)ptr);
}

static int alloc_device(const ob_driver *driver, size_t size, uintptr_t *out)
{
    if (driver->fn.cuMemAlloc == NULL || driver->fn.cuMemFree == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "the driver has no cuMemAlloc");
    CUdeviceptr ptr = 0;
    int status = OB_CU(driver, cuMemAlloc, &ptr, size);
    *out = (uintptr_t)ptr;
    return status;
}

static void release_device(const ob_driver *driver, uintptr_t ptr)
{
    (void)OB_CU(driver, cuMemFree, (CUdeviceptr)ptr);
}

static const area_kind pinned_kind = {"pinned", &totals.host_bytes, alloc_pinned,
                                      release_pinned};
static const area_kind device_kind = {"device", &totals.device_bytes, alloc_device,
                                      release_device};

/* Grows one area of an idle region (*ptr, *size) to `want` bytes; the lock is held. A
 * refusal is said by ob_staging_acquire at OMPBATCH_VERBOSE=2 (the pieces go direct), a
 * driver's failure where it fails. */
static int grow(const area_kind *kind, uintptr_t *ptr, size_t *size, size_t want)
{
    if (*size >= want)
        return OMPBATCH_OK;
    size_t grown = area_size(want);
    if (!fits(kind->total, grown))
        return ob_fail_quiet(OMPBATCH_ERR_NO_MEMORY,
                             "%zu bytes of %s staging would pass OMPBATCH_STAGING_MB (%zu MiB)",
                             grown, kind->what, ob_config_get()->staging_bytes >> 20);
    const ob_driver *driver = ob_driver_get();
    uintptr_t fresh = 0;
    int status = kind->alloc(driver, grown, &fresh);
    if (status != OMPBATCH_OK)
        return ob_fail_context(OMPBATCH_ERR_NO_MEMORY, "%s staging of %zu bytes: ", kind->what,
                               grown);
    if (*ptr != 0)
        kind->release(driver, *ptr);
    *kind->total += grown - *size;
    totals.allocations++;
    *ptr = fresh;
    *size = grown;
    return OMPBATCH_OK;
}

static int grow_host(ob_staging *region, size_t want)
{
    uintptr_t ptr = (uintptr_t)region->host;
    int status = grow(&pinned_kind, &ptr, &region->host_size, want);
    region->host = (unsigned char *)ptr;
    return status;
}

static int grow_device(ob_staging *region, size_t want)
{
    uintptr_t ptr = (uintptr_t)region->device;
    int status = grow(&device_kind, &ptr, &region->device_size, want);
    region->device = (CUdeviceptr)ptr;
    return status;
}

/* The idle region of the device that needs the least growth; NULL when all are in use. */
static ob_staging *best_idle(int ordinal, size_t host_bytes, size_t device_bytes)
{
    ob_staging *best = NULL;
    size_t best_cost = SIZE_MAX;
    for (ob_staging *r = regions; r != NULL; r = r->next) {
        if (r->in_use || r->ordinal != ordinal)
            continue;
        size_t cost = (r->host_size < host_bytes ? host_bytes : 0) +
                      (r->device_size < device_bytes ? device_bytes : 0);
        /* Among regions that fit, the smallest, so large ones stay for large batches. */
        cost = cost * 4 + (r->host_size + r->device_size) / 1024;
        if (cost < best_cost) {
            best = r;
            best_cost = cost;
        }
    }
    return best;
}

int ob_staging_acquire(int ordinal, size_t host_bytes, size_t device_bytes, ob_staging **out)
{
    *out = NULL;
    pthread_mutex_lock(&lock);
    ob_staging *region = best_idle(ordinal, host_bytes, device_bytes);
    if (region == NULL) {
        region = ob_calloc(1, sizeof(*region));
        if (region == NULL) {
            pthread_mutex_unlock(&lock);
            return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate a staging region");
        }
        region->ordinal = ordinal;
        region->next = regions;
        regions = region;
        totals.regions++;
    }
    /* Taken before growing, so that freeing idle regions to make room spares it. */
    region->in_use = 1;
    int status = grow_host(region, host_bytes);
    if (status == OMPBATCH_OK)
        status = grow_device(region, device_bytes);
    if (status != OMPBATCH_OK) {
        region->in_use = 0;
        pthread_mutex_unlock(&lock);
        ob_log(2, "staging refused: %s", ompbatch_last_error());
        return status;
    }
    totals.in_use++;
    if (!exit_handler_registered)
        exit_handler_registered = atexit(free_at_exit) == 0;
    pthread_mutex_unlock(&lock);
    *out = region;
    return OMPBATCH_OK;
}

void ob_staging_release(ob_staging *region)
{
    if (region == NULL)
        return;
    pthread_mutex_lock(&lock);
    region->in_use = 0;
    totals.in_use--;
    pthread_mutex_unlock(&lock);
}

void ob_staging_get_totals(ob_staging_totals *out)
{
    pthread_mutex_lock(&lock);
    *out = totals;
    pthread_mutex_unlock(&lock);
}
