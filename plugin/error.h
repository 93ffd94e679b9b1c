/* Status helpers shared by every file of the library. */
#ifndef OMPBATCH_PLUGIN_ERROR_H
#define OMPBATCH_PLUGIN_ERROR_H

#include "ompbatch.h"

/* Records a message for the calling thread (ompbatch_last_error) and returns status, so that
 * the place deciding an error can write `return ob_fail(OMPBATCH_ERR_X, "...", ...);`. The
 * message is also logged at verbose level 1. */
int ob_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the calling thread's current message with more context ("copy 3: " + message). */
int ob_fail_context(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));


#endif
