/* Internal entry points of batch objects for other library files. */
#ifndef OMPBATCH_PLUGIN_BATCH_H
#define OMPBATCH_PLUGIN_BATCH_H

#include "device.h"
#include "ompbatch.h"

/* ompbatch_batch_destroy without clearing the thread's message: for cleanup after an earlier
 * failure whose message must survive. */
int ob_batch_destroy(ompbatch_batch *batch);

/* ompbatch_batch_create for a device already resolved (the hook knows better than the device
 * number which kind of device executes an OpenMP device's copies); options must be complete. */
int ob_batch_create_on(ompbatch_batch **out, const ob_device *device, void *stream,
                       const ompbatch_batch_options *options);

#endif
