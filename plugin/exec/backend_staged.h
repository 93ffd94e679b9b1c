/* The staged backend: packs of small pieces through pinned staging and the copy kernel, its
 * halves around a level's other steps (its host moves: host_moves.h; its wait:
 * staged_wait.h). */
#ifndef OMPBATCH_PLUGIN_BACKEND_STAGED_H
#define OMPBATCH_PLUGIN_BACKEND_STAGED_H

#include <stddef.h>

#include "plugin/exec/backend.h"

/* A level goes over the bus with at most this many packed bytes, whatever OMPBATCH_BUS_KB
 * allows: reading them over the bus loses to the bulk copy sooner than writing gathered bytes
 * does. On an H100 (2026-12-05 23:14, hook_bench): 64 constructs of 64 KiB `to` took
 * 1307-1331 us over the bus against 1810-1825 by the bulk copy, 16 of 512 KiB 1121-1141
 * against 990-1035; gathers of 512 KiB written over the bus won, 917-981 against 1230-1297. */
#define OB_BUS_PACK_MAX ((size_t)256 << 10)

/* The staged step of a level runs in two halves around the level's other steps: prepare packs,
 * writes descriptors and launches the in-place and gather kernel, leaving the bulk copies in
 * exec->extra_*; the first batch call of the level takes them (or flush_extras sends them);
 * finish launches the scatter kernel. */
int ob_staged_prepare(ob_exec *exec, const ob_plan *plan, const ob_step *step);
int ob_staged_finish(ob_exec *exec);

/* A level failed after the staged step's prepare: its bulk copies or its scatter may never
 * have been enqueued, so the pinned staging holds what an earlier batch left there. Its unpacks
 * are dropped (the destinations keep their bytes) and its copies are not counted as done. */
void ob_staged_abandon(ob_exec *exec);

/* Sends bulk copies no batch call took. */
int ob_staged_flush_extras(ob_exec *exec);

/* Frees the kept descriptors; the device's context is current. */
void ob_staged_drop_kept(ob_exec *exec);

/* Tries stream memory operations again after one failed (tests). */
void ob_staged_forget_stream_words_for_testing(void);

#endif
