#include "plugin/core/workers.h"

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
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
    pthread_mutex_t lock;    /* guards started and the sleeps on wake and done */
    pthread_cond_t wake;
    pthread_cond_t done;
    size_t started;          /* helper threads running */
    ob_work_fn fn;           /* the current job: written before its ticket is published */
    void *arg;
    atomic_size_t finished;  /* the current job's parts done */
} pool;

/* Helpers that come late -- descheduled because the program's own threads hold every core --
 * keep the caller waiting for the parts they took, up to a scheduler time slice. After a job
 * whose helpers kept the caller waiting longer than it worked itself, and over OB_LATE_NS, jobs
 * run on the caller alone for OB_ALONE_NS (the driver's own staging is one thread too); then
 * helpers are tried again: under lasting contention one job in that time pays for it.
 * Only a job whose helpers were all awake when it began is judged: one that had to wake a
 * helper waits for the wake-up too, 20-150 us on an idle build machine, as long as a part of a
 * pipelined 4 MiB chunk takes, and that says nothing about the host's load. Under contention the
 * jobs that follow one another within OB_SPIN_NS (a pipeline's chunks, a burst of constructs)
 * find their helpers awake. */
#define OB_LATE_NS 50000
#define OB_ALONE_NS 200000000ull

/* The current job's ticket: its generation (high 32 bits), its parts (next 16) and the next
 * part to hand out (low 16). A part is claimed by a compare-and-swap of the whole ticket, so
 * the threads taking the parts of a pack of a few microseconds do not queue on a lock, and a
 * helper that read an older job's ticket cannot claim a part of a newer one. */
static _Atomic uint64_t ticket;
#define OB_TICKET_PARTS_MAX 0xffffu

static uint32_t ticket_generation(uint64_t t)
{
    return (uint32_t)(t >> 32);
}

static size_t ticket_parts(uint64_t t)
{
    return (size_t)((t >> 16) & OB_TICKET_PARTS_MAX);
}

static size_t ticket_next(uint64_t t)
{
    return (size_t)(t & OB_TICKET_PARTS_MAX);
}

static _Atomic uint64_t alone_until; /* ob_clock_ns() before which jobs run on the caller */
static atomic_long awake_helpers;     /* helpers working or spinning: runnable, but ours */
static atomic_uint starts_to_fail;    /* tests: thread starts that fail before any is tried */

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

/* Claims the next part of the current job, if any is left; *seen: the ticket looked at last.
 * The acquiring swap makes the job's fn and arg, written before its ticket, visible. */
static int take_part(size_t *part, size_t *parts, uint64_t *seen)
{
    uint64_t t = atomic_load_explicit(&ticket, memory_order_relaxed);
    while (ticket_next(t) < ticket_parts(t)) {
        if (atomic_compare_exchange_weak_explicit(&ticket, &t, t + 1, memory_order_acquire,
                                                  memory_order_relaxed)) {
            *part = ticket_next(t);
            *parts = ticket_parts(t);
            *seen = t + 1;
            return 1;
        }
    }
    *seen = t;
    return 0;
}

/* A part is done; the helper that ends the job tells a caller asleep on `done`. */
static void finish_part(size_t parts)
{
    if (atomic_fetch_add_explicit(&workers.finished, 1, memory_order_acq_rel) + 1 == parts) {
        pthread_mutex_lock(&workers.lock);
        pthread_cond_signal(&workers.done);
        pthread_mutex_unlock(&workers.lock);
    }
}

/* Waits up to OB_SPIN_NS for a job of another generation than `seen`'s; returns whether one
 * came. */
static int spin_for_job(uint32_t seen)
{
    uint64_t start = ob_clock_ns();
    do {
        uint64_t t = atomic_load_explicit(&ticket, memory_order_relaxed);
        if (ticket_generation(t) != seen)
            return 1;
    } while (ob_clock_ns() - start < OB_SPIN_NS);
    return 0;
}

static void *worker_main(void *unused)
{
    (void)unused;
    for (;;) {
        size_t part, parts;
        uint64_t seen;
        while (take_part(&part, &parts, &seen)) {
            workers.fn(workers.arg, part, parts);
            finish_part(parts);
        }
        if (spin_for_job(ticket_generation(seen)))
            continue;
        pthread_mutex_lock(&workers.lock);
        while (ticket_generation(atomic_load_explicit(&ticket, memory_order_relaxed)) ==
               ticket_generation(seen)) {
            atomic_fetch_sub_explicit(&awake_helpers, 1, memory_order_relaxed);
            pthread_cond_wait(&workers.wake, &workers.lock);
            atomic_fetch_add_explicit(&awake_helpers, 1, memory_order_relaxed);
        }
        pthread_mutex_unlock(&workers.lock);
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
    /* A job the parent was running is no child's: its parts are left to no one. */
    uint64_t t = atomic_load(&ticket);
    atomic_store(&ticket, (uint64_t)ticket_generation(t) << 32);
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
        unsigned injected = atomic_load(&starts_to_fail);
        while (injected > 0 && !atomic_compare_exchange_weak(&starts_to_fail, &injected,
                                                             injected - 1))
            ;
        int failed = injected > 0 ? EAGAIN : pthread_create(&thread, &attr, worker_main, NULL);
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
 * between taking a part and finishing it. Read at most every OB_LOAD_CHECK_NS, by one pread of
 * a descriptor kept open and with the processor count asked again every OB_CPUS_EVERY reads:
 * opening the file through stdio and asking the count at each read made every region of a
 * program whose threads filled the host about 1 us slower (hook_bench r-present, host offload,
 * 2 processors; why a read every 20 ms reaches the regions between is not understood). */
#define OB_LOAD_CHECK_NS 20000000ull
#define OB_CPUS_EVERY 64
static _Atomic uint64_t load_checked_at;
static atomic_int saturated;
static const char *load_path = "/proc/loadavg";
static atomic_int load_fd = -1;
static atomic_long cpus_online;
static atomic_uint load_reads;

/* The file behind load_fd when it was opened: a program that closes every descriptor may open
 * something else at the same number, which is then the program's and is left alone. */
static _Atomic uint64_t load_dev, load_ino;

/* Whether fd is still the descriptor opened on the load file. */
static int still_load_file(int fd)
{
    struct stat now;
    return fstat(fd, &now) == 0 && (uint64_t)now.st_dev == atomic_load(&load_dev) &&
           (uint64_t)now.st_ino == atomic_load(&load_ino);
}

/* The load file's descriptor, opened if there is none; -1 when it cannot be opened. */
static int load_file(void)
{
    int fd = atomic_load(&load_fd);
    if (fd >= 0)
        return fd;
    int opened = open(load_path, O_RDONLY | O_CLOEXEC);
    struct stat at_open;
    if (opened < 0)
        return -1;
    if (fstat(opened, &at_open) != 0) {
        close(opened);
        return -1;
    }
    /* Two threads opening at once open the same file: either's identity is the file's. */
    atomic_store(&load_dev, (uint64_t)at_open.st_dev);
    atomic_store(&load_ino, (uint64_t)at_open.st_ino);
    if (atomic_compare_exchange_strong(&load_fd, &fd, opened))
        return opened;
    close(opened); /* another thread's is kept; fd holds it now */
    return fd;
}

/* The runnable threads the load file counts, or 0 when it cannot be read or is no load line
 * ("0.50 0.40 0.30 3/812 4242"). Only a read that gives no load line asks whether the
 * descriptor is still the load file: one that is not (the program closed it, and may have
 * opened something else at its number) is let go without closing it, and the file opened
 * again. pread leaves a file's offset alone, and fails on a pipe or socket without taking
 * anything from it. */
static long runnable_threads(void)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = load_file();
        if (fd < 0)
            return 0;
        char text[128];
        ssize_t got = pread(fd, text, sizeof text - 1, 0);
        if (got > 0) {
            text[got] = '\0';
            double loads[3];
            long running = 0, total = 0, last_pid = 0;
            if (sscanf(text, "%lf %lf %lf %ld/%ld %ld", &loads[0], &loads[1], &loads[2],
                       &running, &total, &last_pid) == 6)
                return running;
        }
        if (still_load_file(fd))
            return 0; /* the load file itself says nothing usable */
        atomic_compare_exchange_strong(&load_fd, &fd, -1);
    }
    return 0;
}

int ob_host_saturated(void)
{
    switch (ob_config_get()->host_busy) {
    case OB_HOST_BUSY_NEVER:
        return 0;
    case OB_HOST_BUSY_ALWAYS:
        return 1;
    case OB_HOST_BUSY_AUTO:
        break;
    }
    uint64_t now = ob_clock_ns();
    uint64_t last = atomic_load_explicit(&load_checked_at, memory_order_relaxed);
    if (now - last < OB_LOAD_CHECK_NS ||
        !atomic_compare_exchange_strong(&load_checked_at, &last, now))
        return atomic_load_explicit(&saturated, memory_order_relaxed);
    long running = runnable_threads();
    long cpus = atomic_load_explicit(&cpus_online, memory_order_relaxed);
    if (cpus <= 0 || atomic_fetch_add(&load_reads, 1) % OB_CPUS_EVERY == 0) {
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
        atomic_store_explicit(&cpus_online, cpus, memory_order_relaxed);
    }
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
           ob_host_saturated();
}

static void run_alone(ob_work_fn fn, void *arg, size_t parts)
{
    for (size_t k = 0; k < parts; k++)
        fn(arg, k, parts);
}

/* Runs the job with the helpers, waking at most `wake` of those asleep. */
static void run_job(ob_work_fn fn, void *arg, size_t parts, size_t wake)
{
    pthread_once(&atfork_once, register_atfork);
    if (parts == 1 || parts > OB_TICKET_PARTS_MAX || ob_workers_late() ||
        atomic_flag_test_and_set(&busy)) {
        run_alone(fn, arg, parts);
        return;
    }
    pthread_mutex_lock(&workers.lock);
    size_t helpers = start_helpers(ob_workers_threads() - 1);
    pthread_mutex_unlock(&workers.lock);
    if (helpers == 0) {
        atomic_flag_clear(&busy);
        run_alone(fn, arg, parts);
        return;
    }
    workers.fn = fn;
    workers.arg = arg;
    atomic_store_explicit(&workers.finished, 0, memory_order_relaxed);
    uint64_t generation = ticket_generation(atomic_load_explicit(&ticket, memory_order_relaxed));
    uint64_t started = ob_clock_ns();
    atomic_store_explicit(&ticket, ((generation + 1) & 0xffffffffu) << 32 | (uint64_t)parts << 16,
                          memory_order_release);
    long asleep = (long)helpers - atomic_load_explicit(&awake_helpers, memory_order_relaxed);
    int woken = asleep > 0 && wake > 0;
    if (woken) {
        pthread_mutex_lock(&workers.lock);
        if (wake >= (size_t)asleep)
            pthread_cond_broadcast(&workers.wake);
        else
            for (size_t k = 0; k < wake; k++)
                pthread_cond_signal(&workers.wake);
        pthread_mutex_unlock(&workers.lock);
    }
    /* The caller works too, taking parts like any helper. */
    size_t part, n;
    uint64_t seen;
    while (take_part(&part, &n, &seen)) {
        fn(arg, part, parts);
        atomic_fetch_add_explicit(&workers.finished, 1, memory_order_relaxed);
    }
    uint64_t mine_done = ob_clock_ns();
    /* The helpers' last parts end about when the caller's do: a sleep on `done` would add a
     * wake-up of tens of microseconds to a job of a few. */
    while (atomic_load_explicit(&workers.finished, memory_order_acquire) < parts &&
           ob_clock_ns() - mine_done < OB_SPIN_NS)
        ;
    if (atomic_load_explicit(&workers.finished, memory_order_acquire) < parts) {
        pthread_mutex_lock(&workers.lock);
        while (atomic_load_explicit(&workers.finished, memory_order_acquire) < parts)
            pthread_cond_wait(&workers.done, &workers.lock);
        pthread_mutex_unlock(&workers.lock);
    }
    atomic_flag_clear(&busy);
    uint64_t waited = ob_clock_ns() - mine_done, worked = mine_done - started;
    if (!woken && waited > OB_LATE_NS && waited > worked) {
        atomic_store_explicit(&alone_until, ob_clock_ns() + OB_ALONE_NS, memory_order_relaxed);
        ob_log(2, "pack threads came late (waited %llu us after %llu us of the caller's own "
                  "part): packing alone for %llu ms",
               (unsigned long long)(waited / 1000), (unsigned long long)(worked / 1000),
               OB_ALONE_NS / 1000000);
    }
}

void ob_workers_run(ob_work_fn fn, void *arg, size_t parts)
{
    if (parts > 0)
        run_job(fn, arg, parts, OB_MAX_WORKERS);
}

void ob_workers_share(ob_work_fn fn, void *arg, size_t parts)
{
    if (parts > 0)
        run_job(fn, arg, parts, parts - 1);
}

void ob_workers_forget_lateness_for_testing(void)
{
    atomic_store(&alone_until, 0);
    atomic_store(&saturated, 0);
    atomic_store(&load_checked_at, ob_clock_ns());
}

void ob_workers_load_file_for_testing(const char *path)
{
    int fd = atomic_exchange(&load_fd, -1);
    if (fd >= 0)
        close(fd);
    load_path = path != NULL ? path : "/proc/loadavg";
    atomic_store(&saturated, 0);
    atomic_store(&load_checked_at, ob_clock_ns() - OB_LOAD_CHECK_NS);
}

void ob_workers_mark_late_for_testing(void)
{
    atomic_store(&alone_until, ob_clock_ns() + 60000000000ull);
}

void ob_workers_fail_starts_for_testing(unsigned count)
{
    atomic_store(&starts_to_fail, count);
}
