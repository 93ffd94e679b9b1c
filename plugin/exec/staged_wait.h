/* The staged backend's wait (staged_wait.c): what ob_exec_wait does. */
#ifndef OMPBATCH_PLUGIN_EXEC_STAGED_WAIT_H
#define OMPBATCH_PLUGIN_EXEC_STAGED_WAIT_H

#include "plugin/exec/backend.h"

/* Waits for the device work of exec's stream (no-op when none is outstanding), then moves the
 * staged unpacks and gives the staging back (what ob_exec_wait does; the host and staged
 * backends wait through it before they reuse memory the stream may still read). */
int ob_staged_wait(ob_exec *exec);

/* Moves the unpacks pending after the stream is idle, and gives the staging back. */
void ob_staged_complete(ob_exec *exec);

#endif
