/* Running a plan: its steps level by level through the backends, and the batch's wait. */
#ifndef OMPBATCH_PLUGIN_EXEC_H
#define OMPBATCH_PLUGIN_EXEC_H

#include "plugin/exec/backend.h"

/* Runs every step of a plan in order. The caller has made the device's context current when
 * exec->driver is set. */
int ob_exec_run(ob_exec *exec, const ob_plan *plan);

/* Whether a wait has anything to do: device work, staging held or unpacks owed. */
int ob_exec_pending(const ob_exec *exec);

/* Waits for the device work of the batch (no-op when none is outstanding), then moves the
 * staged unpacks and gives the staging back. */
int ob_exec_wait(ob_exec *exec);

/* What the backends keep across runs of the same plan (kept descriptors) is given back; the
 * device's context is current. */
void ob_exec_release(ob_exec *exec);

void ob_exec_free(ob_exec *exec);

#endif
