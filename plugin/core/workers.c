#include "plugin/core/workers.h"

#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "plugin/core/clock.h"
#include "plugin/core/config.h"
#include "plugin/core/log.h"

#define OB_MAX_WORKERS 64
/* After a job, helpers watch for the next one this long before sleeping: waking a sleeping
 * thread takes tens of microseconds, a large share of a pack of a few megabytes, and packs
 * come in bursts (one per construct or submit). */
#define OB_SPIN_NS 100000

typedef struct pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    size_t started;          /* helper threads running */
    ob_work_fn fn;
    void *arg;
    size_t parts;
    size_t next_part;        /* parts handed out so far */
    size_t finished;         /* parts done */
} pool;

/* Helpers that come late -- descheduled because the program's own threads hold every core --
 * keep the caller waiting for the parts they took, up to a scheduler time slice. After a job
 * whose helpers kept the caller waiting longer than it worked itself, and over OB_LATE_NS, jobs
 * run on the caller alone for OB_ALONE_NS (the driver's own staging is one thread too); then
 * helpers are tried again: under lasting contention one job in that time pays for it. */
#define OB_LATE_NS 50000
#define OB_ALONE_NS 200000000ull

/* Bumped for every job; spinning helpers watch it without the lock. */
static atomic_ulong generation;
static _Atomic uint64_t alone_until; /* ob_clock_ns() before which jobs run on the caller */
static atomic_long awake_helpers;     /* helpers working or spinning: runnable, but ours */

static pool workers = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};
/* One job at a time; a caller that finds the pool taken works alone. */
static atomic_flag busy = ATOMIC_FLAG_INIT;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

size_t ob_workers_threads(void)
{
    size_t threads = ob_config_get()->pack_threads;
    return threads < 1 ? 1 : threads > OB_MAX_WORKERS ? OB_MAX_WORKERS : threads;
}

/* Takes the next part of the current job; the lock is held. */
static int take_part(size_t *part)
{
    if (workers.fn == NULL || workers.next_part >= workers.parts)
        return 0;
    *part = workers.next_part++;
    return 1;
}

/* Waits, without the lock, up to OB_SPIN_NS for a job newer than `seen`. */
static void spin_for_job(unsigned long seen)
{
    uint64_t start = ob_clock_ns();
    while (atomic_load_explicit(&generation, memory_order_acquire) == seen &&
           ob_clock_ns() - start < OB_SPIN_NS)
        ;
}

static void *worker_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&workers.lock);
    for (;;) {
        size_t part;
        if (!take_part(&part)) {
            unsigned long seen = atomic_load_explicit(&generation, memory_order_acquire);
            pthread_mutex_unlock(&workers.lock);
            spin_for_job(seen);
            pthread_mutex_lock(&workers.lock);
            while (!take_part(&part)) {
                atomic_fetch_sub_explicit(&awake_helpers, 1, memory_order_relaxed);
                pthread_cond_wait(&workers.wake, &workers.lock);
                atomic_fetch_add_explicit(&awake_helpers, 1, memory_order_relaxed);
            }
        }
        ob_work_fn fn = workers.fn;
        void *arg = workers.arg;
        size_t parts = workers.parts;
        pthread_mutex_unlock(&workers.lock);
        fn(arg, part, parts);
        pthread_mutex_lock(&workers.lock);
        if (++workers.finished == parts)
            pthread_cond_signal(&workers.done);
    }
    return NULL;
}

/* A forked child has none of the parent's threads. */
static void after_fork_in_child(void)
{
    atomic_store(&awake_helpers, 0);
    pthread_mutex_init(&workers.lock, NULL);
    pthread_cond_init(&workers.wake, NULL);
    pthread_cond_init(&workers.done, NULL);
    workers.started = 0;
    workers.fn = NULL;
    atomic_flag_clear(&busy);
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

/* Starts helpers until `want` run; the lock is held. Returns how many run. */
static size_t start_helpers(size_t want)
{
    while (workers.started < want) {
        pthread_t thread;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0)
            break;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        atomic_fetch_add_explicit(&awake_helpers, 1, memory_order_relaxed);
        int failed = pthread_create(&thread, &attr, worker_main, NULL);
        pthread_attr_destroy(&attr);
        if (failed) {
            atomic_fetch_sub_explicit(&awake_helpers, 1, memory_order_relaxed);
            ob_log(1, "cannot start a pack thread (error %d); packing with %zu", failed,
                   workers.started + 1);
            break;
        }
        workers.started++;
    }
    return workers.started;
}

/* The host's processors are all taken when the runnable threads (the fourth field of
 * /proc/loadavg, "running/total") reach their number: helpers would then be descheduled
 * between taking a part and finishing it. Read at most every OB_LOAD_CHECK_NS. */
#define OB_LOAD_CHECK_NS 20000000ull
static _Atomic uint64_t load_checked_at;
static atomic_int saturated;
static atomic_int load_ignored; /* tests that need the helpers whatever else runs */

static int host_saturated(void)
{
    if (atomic_load_explicit(&load_ignored, memory_order_relaxed))
        return 0;
    uint64_t now = ob_clock_ns(), last = atomic_load_explicit(&load_checked_at, memory_order_relaxed);
    if (now - last < OB_LOAD_CHECK_NS ||
        !atomic_compare_exchange_strong(&load_checked_at, &last, now))
        return atomic_load_explicit(&saturated, memory_order_relaxed);
    FILE *f = fopen("/proc/loadavg", "r");
    long running = 0;
    if (f != NULL) {
        if (fscanf(f, "%*s %*s %*s %ld/", &running) != 1)
            running = 0;
        fclose(f);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* The caller is one of the runnable threads; the helpers still spinning from the last job
     * are too, and do not count against themselves. */
    running -= atomic_load_explicit(&awake_helpers, memory_order_relaxed);
    int busy_host = cpus > 1 && running >= cpus;
    atomic_store_explicit(&saturated, busy_host, memory_order_relaxed);
    return busy_host;
}

int ob_workers_late(void)
{
    return ob_clock_ns() < atomic_load_explicit(&alone_until, memory_order_relaxed) ||
           host_saturated();
}

void ob_workers_run(ob_work_fn fn, void *arg, size_t parts)
{
    if (parts == 0)
        return;
    pthread_once(&atfork_once, register_atfork);
    if (parts == 1 || ob_workers_late() || atomic_flag_test_and_set(&busy)) {
        for (size_t k = 0; k < parts; k++)
            fn(arg, k, parts);
        return;
    }
    pthread_mutex_lock(&workers.lock);
    size_t helpers = start_helpers(ob_workers_threads() - 1);
    if (helpers == 0) {
        pthread_mutex_unlock(&workers.lock);
        atomic_flag_clear(&busy);
        for (size_t k = 0; k < parts; k++)
            fn(arg, k, parts);
        return;
    }
    workers.fn = fn;
    workers.arg = arg;
    workers.parts = parts;
    workers.next_part = 0;
    workers.finished = 0;
    uint64_t started = ob_clock_ns();
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
    pthread_cond_broadcast(&workers.wake);
    /* The caller works too, taking parts like any helper. */
    size_t part;
    while (take_part(&part)) {
        pthread_mutex_unlock(&workers.lock);
        fn(arg, part, parts);
        pthread_mutex_lock(&workers.lock);
        ++workers.finished;
    }
    uint64_t mine_done = ob_clock_ns();
    while (workers.finished < parts)
        pthread_cond_wait(&workers.done, &workers.lock);
    workers.fn = NULL;
    pthread_mutex_unlock(&workers.lock);
    atomic_flag_clear(&busy);
    uint64_t waited = ob_clock_ns() - mine_done, worked = mine_done - started;
    if (waited > OB_LATE_NS && waited > worked) {
        atomic_store_explicit(&alone_until, ob_clock_ns() + OB_ALONE_NS, memory_order_relaxed);
        ob_log(2, "pack threads came late (waited %llu us after %llu us of the caller's own "
                  "part): packing alone for %llu ms",
               (unsigned long long)(waited / 1000), (unsigned long long)(worked / 1000),
               OB_ALONE_NS / 1000000);
    }
}

void ob_workers_forget_lateness_for_testing(void)
{
    atomic_store(&alone_until, 0);
    atomic_store(&saturated, 0);
    atomic_store(&load_checked_at, ob_clock_ns());
}

void ob_workers_ignore_load_for_testing(int ignore)
{
    atomic_store(&load_ignored, ignore);
}

void ob_workers_mark_late_for_testing(void)
{
    atomic_store(&alone_until, ob_clock_ns() + 60000000000ull);
}
