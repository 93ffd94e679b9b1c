/* Waiting for a CUDA stream the way every part of the library does: polling first, then
 * blocking in the driver. */
#ifndef OMPBATCH_PLUGIN_STREAM_WAIT_H
#define OMPBATCH_PLUGIN_STREAM_WAIT_H

#include "plugin/cuda/driver.h"

/* Waits for everything enqueued on stream: polls for OMPBATCH_WAIT_POLL_US, then blocks. */
int ob_stream_wait(const ob_driver *driver, CUstream stream);

#endif
