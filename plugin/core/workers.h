/* A small pool of threads that share the CPU side of the staged strategy: packing pageable
 * pieces into pinned staging and unpacking them. One memcpy thread moves ~10 GB/s on the H200
 * host, a fifth of the link (docs/strategies.md), so large packs are split across threads. */
#ifndef OMPBATCH_PLUGIN_WORKERS_H
#define OMPBATCH_PLUGIN_WORKERS_H

#include <stddef.h>

/* Does part `part` of `parts` of a job. */
typedef void (*ob_work_fn)(void *arg, size_t part, size_t parts);

/* Runs fn(arg, k, parts) for every k < parts and returns when all are done. The calling thread
 * takes parts like the pool's threads. When the pool is busy with another caller's job, its
 * threads cannot start, or they came late to a recent job (descheduled: workers.c), the caller
 * runs every part itself. */
void ob_workers_run(ob_work_fn fn, void *arg, size_t parts);

/* The same for a job of a few microseconds: it wakes at most parts - 1 helpers (a wake-up costs
 * the caller about what one part does), and the helpers still watching for work after the
 * previous job take parts at once. */
void ob_workers_share(ob_work_fn fn, void *arg, size_t parts);

/* Whether helpers would come late: they did to a recent job, or every processor of the host
 * has a runnable thread (/proc/loadavg). Jobs then run on their callers, and what relies on
 * parallel packing (the pipelined path) is not worth taking. */
int ob_workers_late(void);

/* Whether every processor of the host has a runnable thread (/proc/loadavg, read at most every
 * 20 ms), or what OMPBATCH_HOST_BUSY says instead. */
int ob_host_saturated(void);

/* Tests: forget that helpers came late, or have them late for a minute. (Tests that must not
 * depend on the host's load, since tests run beside each other, set OMPBATCH_HOST_BUSY=0.) */
void ob_workers_forget_lateness_for_testing(void);
void ob_workers_mark_late_for_testing(void);

/* Tests: read the load from `path` instead of /proc/loadavg (NULL: /proc/loadavg again), the
 * next ob_host_saturated() at once. */
void ob_workers_load_file_for_testing(const char *path);

/* Tests: the next `count` attempts to start a pack thread fail as pthread_create would without
 * resources (EAGAIN). */
void ob_workers_fail_starts_for_testing(unsigned count);

/* Threads a job may use, the caller included: OMPBATCH_PACK_THREADS. */
size_t ob_workers_threads(void);

#endif
