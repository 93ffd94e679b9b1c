/* Host moves: packs of the program's pageable bytes into pinned staging and unpacks out of it,
 * on the calling thread or split across the pack threads (workers.h). */
#include "plugin/exec/host_moves.h"

#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/core/workers.h"
#include "plugin/exec/stream_copy.h"

/* From OB_PARALLEL_MOVE_BYTES (host_moves.h) a pack or unpack is a job for every pack
 * thread, in parts of OB_MOVE_PART_BYTES, several per thread: helpers that wake late still
 * find work. From OB_SHARED_MOVE_BYTES it is shared in parts of OB_SHARED_PART_BYTES with the
 * few helpers it needs, most of them still watching for work after the last pack; below that
 * it stays on the calling thread. A build may set the last two with -D to measure. */
#define OB_MOVE_PART_BYTES ((size_t)64 << 10)
#ifndef OB_SHARED_MOVE_BYTES
#define OB_SHARED_MOVE_BYTES ((size_t)32 << 10)
#endif
#ifndef OB_SHARED_PART_BYTES
#define OB_SHARED_PART_BYTES ((size_t)8 << 10)
#endif

static void copy_plain(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

/* Compact bytes [begin, end) of a move. */
static void move_range(const ob_host_move *m, size_t begin, size_t end, int into_staging,
                       void (*copy)(void *, const void *, size_t))
{
    if (m->walk == NULL)
        copy((char *)m->dst + begin, (const char *)m->src + begin, end - begin);
    else if (into_staging)
        ob_walk_copy(m->dst, NULL, m->src, m->walk, begin, end, copy);
    else
        ob_walk_copy(m->dst, m->walk, m->src, NULL, begin, end, copy);
}

/* Part k moves bytes [k * total / parts, (k + 1) * total / parts) of the concatenated moves. */
static void move_part(void *arg, size_t part, size_t parts)
{
    const ob_host_moves_job *job = arg;
    size_t rest = job->total % parts;
    size_t from = job->total / parts * part + (part < rest ? part : rest);
    size_t to = from + job->total / parts + (part < rest ? 1 : 0);
    /* The last move starting at or before `from`. */
    size_t lo = 0, hi = job->count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (job->starts[mid] <= from)
            lo = mid;
        else
            hi = mid;
    }
    for (size_t i = lo; i < job->count && job->starts[i] < to; i++) {
        const ob_host_move *m = &job->moves[i];
        size_t at = job->starts[i];
        size_t begin = from > at ? from - at : 0;
        size_t end = to - at < m->bytes ? to - at : m->bytes;
        if (begin < end)
            move_range(m, begin, end, job->into_staging, job->copy);
    }
}

/* Sets the job up; returns the parts to split it into, 0 to run it on the caller. */
static size_t job_setup(ob_host_moves_job *job, const ob_host_move *moves, size_t count,
                        ob_move_kind kind)
{
    *job = (ob_host_moves_job){.moves = moves, .count = count};
    job->into_staging = kind != OB_MOVE_UNPACK;
    job->copy = kind == OB_MOVE_PACK_STREAMING ? ob_copy_streaming : copy_plain;
    for (size_t i = 0; i < count; i++)
        job->total += moves[i].bytes;
    job->shared = job->total < OB_PARALLEL_MOVE_BYTES;
    size_t parts = job->total / (job->shared ? OB_SHARED_PART_BYTES : OB_MOVE_PART_BYTES);
    size_t most = (job->shared ? 1 : 4) * ob_workers_threads();
    if (parts > most)
        parts = most;
    if (parts <= 1 || job->total < OB_SHARED_MOVE_BYTES ||
        (job->starts = ob_malloc(count * sizeof(*job->starts))) == NULL)
        return 0;
    for (size_t i = 0, at = 0; i < count; at += moves[i++].bytes)
        job->starts[i] = at;
    return parts;
}

static void run_on_caller(const ob_host_moves_job *job)
{
    for (size_t i = 0; i < job->count; i++)
        move_range(&job->moves[i], 0, job->moves[i].bytes, job->into_staging, job->copy);
}

void ob_host_moves_run(const ob_host_move *moves, size_t count, ob_move_kind kind)
{
    ob_host_moves_job job;
    size_t parts = job_setup(&job, moves, count, kind);
    if (parts == 0) {
        run_on_caller(&job);
        return;
    }
    if (job.shared)
        ob_workers_share(move_part, &job, parts);
    else
        ob_workers_run(move_part, &job, parts);
    free(job.starts);
}

void ob_host_moves_begin(ob_host_moves_job *job, const ob_host_move *moves, size_t count,
                         ob_move_kind kind)
{
    size_t parts = job_setup(job, moves, count, kind);
    job->split = parts > 0;
    if (job->split)
        ob_workers_begin(&job->workers, move_part, job, parts);
}

void ob_host_moves_join(ob_host_moves_job *job)
{
    if (!job->split) {
        run_on_caller(job);
        return;
    }
    ob_workers_join(&job->workers);
    free(job->starts);
    job->starts = NULL;
}

void ob_host_unpack_range(const ob_host_move *move, size_t begin, size_t end)
{
    move_range(move, begin, end, 0, copy_plain);
}
