/* The staged backend's wait (staged_wait.h): the words in pinned staging that say a launch's
 * bytes landed, the unpacks of gathered pieces whose blocks said so and of gathered rectangles
 * chunk by chunk while their launch still runs, the stream's wait, then the remaining unpacks
 * and the staging given back. */
#include "plugin/exec/staged_wait.h"

#include <stdint.h>

#include "plugin/core/clock.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/phase_time.h"
#include "plugin/cuda/staging.h"
#include "plugin/cuda/stream_wait.h"
#include "plugin/exec/host_moves.h"

/* Unpacks the rectangle's landed chunks from the first not unpacked up to `to`. */
static void unpack_chunks(ob_host_move *move, ob_rect_progress *p, size_t to)
{
    size_t begin = p->unpacked * p->chunk_bytes, end = to * p->chunk_bytes;
    if (end > move->bytes)
        end = move->bytes;
    if (begin < end)
        ob_host_unpack_range(move, begin, end);
    p->unpacked = to;
}

/* How many of the rectangle's chunks, from the first, have landed. */
static size_t chunks_landed(const ob_rect_progress *p)
{
    size_t landed = p->unpacked;
    while (landed < p->chunks && __atomic_load_n(&p->flags[landed], __ATOMIC_ACQUIRE) != 0)
        landed++;
    return landed;
}

/* Looks at the words this many times between two stream queries while no chunk lands: a
 * look costs nanoseconds, a query about a microsecond. */
#define OB_LOOKS_PER_QUERY 64
/* Landed chunks are unpacked once they hold this much, or when they are the last ones. */
#define OB_UNPACK_AT_LEAST ((size_t)16 << 10)

/* What a wait that watches words in pinned memory does next (between_looks). */
enum { OB_LOOK_AGAIN = 1, OB_STREAM_OVER, OB_STOP_LOOKING };

/* Between two looks at words in pinned memory: every OB_LOOKS_PER_QUERY looks, whether more
 * than `budget` ns went by since `since`, and if not, whether the stream failed or finished.
 * The budget comes first, so that the words are looked at once more after every query (a
 * query can take long enough for the words to land meanwhile). Returns OB_LOOK_AGAIN,
 * OB_STREAM_OVER (exec->stream_busy is then cleared), OB_STOP_LOOKING (the budget is spent: the
 * wait blocks), or a negative status when the stream failed. */
static int between_looks(ob_exec *exec, size_t *looks, uint64_t since, uint64_t budget)
{
    const ob_driver *driver = exec->driver;
    if (++*looks % OB_LOOKS_PER_QUERY != 0)
        return OB_LOOK_AGAIN;
    if (ob_clock_ns() - since > budget)
        return OB_STOP_LOOKING;
    if (driver->fn.cuStreamQuery != NULL) {
        CUresult r = driver->fn.cuStreamQuery(exec->stream);
        if (r == CUDA_SUCCESS) {
            exec->stream_busy = 0;
            return OB_STREAM_OVER;
        }
        if (r != CUDA_ERROR_NOT_READY)
            return ob_cu_check(driver, r, "cuStreamQuery");
    }
    return OB_LOOK_AGAIN;
}

/* While the stream runs, unpacks the gathered rectangles chunk by chunk as their words say
 * the chunks landed, one rectangle after the other (their launches run in that order). Stops
 * when all are unpacked, when a query finds the stream done (exec->stream_busy is then
 * cleared), or when no chunk landed for OMPBATCH_WAIT_POLL_US: the wait then blocks, and
 * complete unpacks what is left. The time is the poll's, but for the unpacks'. */
static int unpack_as_chunks_land(ob_exec *exec)
{
    const ob_driver *driver = exec->driver;
    if (driver->fn.cuStreamQuery == NULL)
        return OMPBATCH_OK; /* nothing would end the loop if the words never came */
    uint64_t budget = (uint64_t)ob_config_get()->wait_poll_us * 1000u;
    uint64_t started = ob_phase_start(), unpacking = 0;
    uint64_t quiet_since = ob_clock_ns();
    size_t looks = 0;
    int status = OMPBATCH_OK;
    for (size_t k = 0; k < exec->progress_count && exec->stream_busy;) {
        ob_rect_progress *p = &exec->progress[k];
        size_t landed = chunks_landed(p);
        if (landed == p->chunks || (landed - p->unpacked) * p->chunk_bytes >= OB_UNPACK_AT_LEAST) {
            uint64_t unpack_started = ob_phase_start();
            unpack_chunks(&exec->moves[p->move], p, landed);
            if (unpack_started != 0) {
                ob_phase_end(OB_PHASE_UNPACK, unpack_started);
                unpacking += ob_clock_ns() - unpack_started;
            }
            quiet_since = ob_clock_ns();
            k += landed == p->chunks;
            continue;
        }
        int next = between_looks(exec, &looks, quiet_since, budget);
        if (next < 0)
            status = next;
        if (next < 0 || next == OB_STOP_LOOKING)
            break;
    }
    if (started != 0)
        ob_phase_add(OB_PHASE_POLL, ob_clock_ns() - started - unpacking);
    return status;
}

void ob_staged_complete(ob_exec *exec)
{
    /* What the waits left of the rectangles unpacked as their chunks landed; discarded
     * unpacks (a failed wait) are past move_count. */
    for (size_t k = 0; k < exec->progress_count; k++) {
        ob_rect_progress *p = &exec->progress[k];
        if (p->move < exec->move_count) {
            unpack_chunks(&exec->moves[p->move], p, p->chunks);
            exec->moves[p->move].bytes = 0;
        }
    }
    exec->progress_count = 0;
    exec->unpack_word_count = 0;
    if (exec->move_count > exec->unpack_begin)
        ob_host_moves_run(exec->moves + exec->unpack_begin, exec->move_count - exec->unpack_begin,
                          OB_MOVE_UNPACK);
    exec->move_count = exec->unpack_begin = 0;
    exec->word_after = NULL;
    ob_staging_release(exec->staging);
    exec->staging = NULL;
}

/* Unpacks one move whose words (exec->unpack_words) are all among `landed`, the words set so
 * far; its bytes are then in pinned staging for good (each block sets its word after a
 * system-wide fence), so the unpack stands even should the stream fail later. One at a time:
 * the words are looked at again between two unpacks. Returns whether it unpacked one. */
static int unpack_one_landed(ob_exec *exec, uint64_t landed)
{
    for (size_t j = 0; j < exec->unpack_word_count; j++) {
        uint64_t needs = exec->unpack_words[j];
        if (needs == 0 || (needs & ~landed) != 0)
            continue;
        ob_host_move *move = &exec->moves[exec->unpack_begin + j];
        ob_host_unpack_range(move, 0, move->bytes);
        move->bytes = 0;
        exec->unpack_words[j] = 0;
        return 1;
    }
    return 0;
}

/* Watches the words of the stream's last launch (kernels.h): once every block has set its
 * own, the launch's bytes are in place and nothing of the batch is left on the stream but the
 * launch's own end, so the batch stops waiting for it (exec->stream_busy is cleared). Meanwhile
 * an unpack whose blocks have all set their words is done at once, overlapping the bytes of the
 * others still on the bus; the rest are left to ob_staged_complete, which shares them among
 * the pack threads. A query every OB_LOOKS_PER_QUERY looks finds an error, or the stream over
 * first (a driver call made after the launch voids the words; this is the guard for anything
 * else); after OMPBATCH_WAIT_POLL_US without a word the wait blocks as it would without
 * words. */
static int watch_done_words(ob_exec *exec)
{
    const uint32_t *words = exec->done_words;
    size_t count = exec->done_word_count, looks = 0;
    exec->done_words = NULL;
    uint64_t budget = (uint64_t)ob_config_get()->wait_poll_us * 1000u;
    if (budget == 0 || exec->done_after_calls != exec->driver_calls)
        return OMPBATCH_OK;
    /* An inline launch has a block (and a word) a piece, at most OB_INLINE_PIECES. */
    uint64_t all = (UINT64_C(1) << count) - 1, landed = 0, tried = 0;
    uint64_t started = ob_phase_start(), since = ob_clock_ns(), unpacking = 0;
    int status = OMPBATCH_OK;
    for (;;) {
        for (size_t b = 0; b < count; b++)
            if ((landed >> b & 1) == 0 && __atomic_load_n(&words[b], __ATOMIC_ACQUIRE) != 0)
                landed |= UINT64_C(1) << b;
        if (landed == all) {
            exec->stream_busy = 0;
            break;
        }
        if (landed != tried) {
            uint64_t unpack_started = ob_phase_start();
            if (unpack_one_landed(exec, landed)) {
                if (unpack_started != 0) {
                    ob_phase_end(OB_PHASE_UNPACK, unpack_started);
                    unpacking += ob_clock_ns() - unpack_started;
                }
                since = ob_clock_ns();
                continue;
            }
            tried = landed;
        }
        int next = between_looks(exec, &looks, since, budget);
        if (next < 0)
            status = next;
        if (next != OB_LOOK_AGAIN)
            break;
    }
    if (started != 0)
        ob_phase_add(OB_PHASE_POLL, ob_clock_ns() - started - unpacking);
    return status;
}

int ob_staged_wait(ob_exec *exec)
{
    int status = OMPBATCH_OK;
    if (exec->stream_busy && exec->done_words != NULL)
        status = watch_done_words(exec);
    exec->done_words = NULL;
    if (exec->stream_busy && exec->progress_count > 0 && status == OMPBATCH_OK)
        status = unpack_as_chunks_land(exec);
    if (exec->stream_busy && status == OMPBATCH_OK)
        status = ob_stream_wait(exec->driver, exec->stream);
    /* A failed synchronisation leaves the stream in an unknown state; asking again would
     * report the same error, so the batch stops treating it as busy either way. */
    exec->stream_busy = 0;
    /* Staged bytes gathered for pageable destinations are only theirs after a good wait, but
     * for those the kernel said had landed (unpacked already). */
    if (status != OMPBATCH_OK)
        exec->move_count = exec->unpack_begin;
    if (exec->staging != NULL || exec->move_count > 0) {
        uint64_t started = ob_phase_start();
        ob_staged_complete(exec);
        ob_phase_end(OB_PHASE_UNPACK, started);
    }
    return status;
}
