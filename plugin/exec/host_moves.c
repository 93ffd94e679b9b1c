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

typedef struct move_job {
    const ob_host_move *moves;
    const size_t *starts; /* starts[i]: bytes of the moves before move i */
    size_t count;
    size_t total;
    int into_staging;
    void (*copy)(void *, const void *, size_t);
} move_job;

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
    const move_job *job = arg;
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

void ob_host_moves_run(const ob_host_move *moves, size_t count, ob_move_kind kind)
{
    int into_staging = kind != OB_MOVE_UNPACK;
    void (*copy)(void *, const void *, size_t) =
        kind == OB_MOVE_PACK_STREAMING ? ob_copy_streaming : copy_plain;
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += moves[i].bytes;
    int shared = total < OB_PARALLEL_MOVE_BYTES;
    size_t parts = total / (shared ? OB_SHARED_PART_BYTES : OB_MOVE_PART_BYTES);
    size_t most = (shared ? 1 : 4) * ob_workers_threads();
    if (parts > most)
        parts = most;
    size_t *starts = parts > 1 && total >= OB_SHARED_MOVE_BYTES
                         ? ob_malloc(count * sizeof(*starts))
                         : NULL;
    if (starts == NULL) {
        for (size_t i = 0; i < count; i++)
            move_range(&moves[i], 0, moves[i].bytes, into_staging, copy);
        return;
    }
    for (size_t i = 0, at = 0; i < count; at += moves[i++].bytes)
        starts[i] = at;
    move_job job = {moves, starts, count, total, into_staging, copy};
    if (shared)
        ob_workers_share(move_part, &job, parts);
    else
        ob_workers_run(move_part, &job, parts);
    free(starts);
}

void ob_host_unpack_range(const ob_host_move *move, size_t begin, size_t end)
{
    move_range(move, begin, end, 0, copy_plain);
}
