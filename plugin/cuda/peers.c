#include "plugin/cuda/peers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/core/log.h"

enum { PEER_UNASKED = 0, PEER_ENABLED, PEER_UNAVAILABLE };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void ob_peers_enable(const ob_driver *driver, int from, int to)
{
    ob_device_slot *slot = ob_driver_slot(from);
    if (slot == NULL || ob_driver_slot(to) == NULL || driver->fn.cuDeviceCanAccessPeer == NULL ||
        driver->fn.cuCtxEnablePeerAccess == NULL)
        return;
    pthread_mutex_lock(&lock);
    if (slot->peers == NULL)
        slot->peers = ob_calloc((size_t)driver->device_count, 1);
    /* Without the table the pair is asked again next time: the driver answers the same. */
    if (slot->peers == NULL || slot->peers[to] == PEER_UNASKED) {
        int can = 0;
        CUcontext theirs = NULL;
        CUresult r = driver->fn.cuDeviceCanAccessPeer(&can, from, to);
        if (r == CUDA_SUCCESS && can && ob_driver_primary_context(to, &theirs) == OMPBATCH_OK)
            r = driver->fn.cuCtxEnablePeerAccess(theirs, 0);
        int enabled = r == CUDA_SUCCESS && can && theirs != NULL;
        if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
            enabled = 1;
        if (slot->peers != NULL)
            slot->peers[to] = enabled ? PEER_ENABLED : PEER_UNAVAILABLE;
        ob_log(1, "device %d -> device %d: peer access %s", from, to,
               enabled ? "enabled" : "not available: the driver stages copies through the host");
    }
    pthread_mutex_unlock(&lock);
}

void ob_peers_forget_for_testing(void)
{
    const ob_driver *driver = ob_driver_get();
    pthread_mutex_lock(&lock);
    for (int i = 0; driver->loaded && i < driver->device_count; i++) {
        ob_device_slot *slot = ob_driver_slot(i);
        free(slot->peers);
        slot->peers = NULL;
    }
    pthread_mutex_unlock(&lock);
}
