/* Internal entry points of batch objects for other library files. */
#ifndef OMPBATCH_PLUGIN_BATCH_H
#define OMPBATCH_PLUGIN_BATCH_H

#include "ompbatch.h"

/* ompbatch_batch_destroy without clearing the thread's message: for cleanup after an earlier
 * failure whose message must survive. */
int ob_batch_destroy(ompbatch_batch *batch);

#endif
