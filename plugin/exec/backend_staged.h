/* The staged backend: packs of small pieces through pinned staging and the copy kernel, its
 * halves around a level's other steps, and the host moves (packs and unpacks) it and the
 * pipelined backend run on the pack threads. */
#ifndef OMPBATCH_PLUGIN_BACKEND_STAGED_H
#define OMPBATCH_PLUGIN_BACKEND_STAGED_H

#include <stddef.h>

#include "plugin/exec/backend.h"

/* The staged step of a level runs in two halves around the level's other steps: prepare packs,
 * writes descriptors and launches the in-place and gather kernel, leaving the bulk copies in
 * exec->extra_*; the first batch call of the level takes them (or flush_extras sends them);
 * finish launches the scatter kernel. */
int ob_staged_prepare(ob_exec *exec, const ob_plan *plan, const ob_step *step);
int ob_staged_finish(ob_exec *exec);

/* Sends bulk copies no batch call took. */
int ob_staged_flush_extras(ob_exec *exec);

/* Frees the kept descriptors; the device's context is current. */
void ob_staged_drop_kept(ob_exec *exec);

/* Moves the unpacks pending after the stream is idle, and gives the staging back. */
void ob_staged_complete(ob_exec *exec);

/* Runs host moves, split across the pack threads when large. into_staging: the destinations
 * are staging the copy engine reads next, written with streaming stores (stream_copy.h). */
void ob_host_moves_run(const ob_host_move *moves, size_t count, int into_staging);

/* Waits for the device work of exec's stream (no-op when none is outstanding), then moves the
 * staged unpacks and gives the staging back (what ob_exec_wait does; the host and staged
 * backends wait through it before they reuse memory the stream may still read). */
int ob_staged_wait(ob_exec *exec);

#endif
