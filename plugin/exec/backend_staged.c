/* The staged strategy's execution (docs/strategies.md, "Direct and staged"). Per level, with
 * one region of staging (host part: descriptor tables, then packed pieces, then gathered
 * pieces; device part: packed, then gathered pieces):
 *   1. pack:   pageable (and must-read-now) host sources -> pinned staging, by the CPU;
 *   2. kernel: in-place pieces (device, mapped pinned memory) and gathers into device staging;
 *   3. the level's cuMemcpyBatchAsync carries the bulk copies: packed bytes to the device,
 *      gathered bytes to pinned staging;
 *   4. kernel: scatter from device staging to the destinations;
 *   5. at the wait (staged_wait.c): unpack gathered bytes into their destinations, give the
 *      staging back.
 * A level whose packed and gathered bytes are few (OMPBATCH_BUS_KB) skips 3 and 4: its one
 * kernel reads the packed bytes from pinned staging and writes the gathered ones into it over
 * the bus, with no device staging at all. The copy kernel reaches mapped pinned memory about as
 * fast as the copy engine does (the calibrated pinned lanes on the H200: a 1 MiB piece in
 * 20.9 us by the kernel, 19.6 us by the engine), and the bulk copy, the second kernel and the
 * wait between them only add their latencies, several microseconds against a small
 * construct's tens. Larger levels keep the copy engine, whose one bulk copy of 4 MiB ran
 * 14-18% faster than the kernel's 1024 pieces (the grid of 2026-12-02).
 * A rectangle (walk.h) is one launch of the rectangle kernel instead of descriptors: packed by
 * the CPU along its source's walk and scattered after the bulk copy (or straight from pinned
 * staging), gathered by the kernel straight into pinned staging and unpacked along its
 * destination's walk -- chunk by chunk while the launch still runs, each chunk saying when it
 * landed -- or moved in place. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/core/phase_time.h"
#include "plugin/cuda/kernel_module.h"
#include "plugin/cuda/resources.h"
#include "plugin/cuda/stream_wait.h"
#include "plugin/exec/backend_staged.h"
#include "plugin/exec/host_moves.h"
#include "plugin/exec/staged_wait.h"

/* Pieces longer than a chunk are cut into several descriptors, one block each, so that a few
 * large pieces still keep many blocks busy: the chunk is a level's staged bytes over
 * OB_CHUNK_TARGET_BLOCKS, in 4 KiB steps from 4 KiB to 64 KiB (16 pieces of 64 KiB as 16
 * blocks left most of an H200 idle and lost to the copy engine). */
#define OB_CHUNK_MIN ((size_t)4 << 10)
#define OB_CHUNK_MAX ((size_t)64 << 10)
#define OB_CHUNK_TARGET_BLOCKS 1024
#define OB_KERNEL_MAX_BLOCKS 65535u

static size_t align_up(size_t value, size_t to)
{
    return (value + to - 1) & ~(to - 1);
}

/* A build may set it with -D to measure the table read over the bus again (0: never). */
#ifndef OB_INLINE_LAUNCH_MAX
#define OB_INLINE_LAUNCH_MAX OB_INLINE_PIECES
#endif

/* One launch of the copy kernel over `count` descriptors at `table`, an address the GPU
 * reaches. `host_table`, when not NULL, is the same descriptors where the CPU reads them: a
 * launch of few pieces then carries them as its parameter, and, given `done_words` (room for
 * OB_INLINE_PIECES words in pinned staging), has its blocks say there when its bytes are in
 * place (kernels.h): the wait watches them while this launch is the stream's last work. */
static int launch(ob_exec *exec, CUdeviceptr table, const ob_piece *host_table, size_t count,
                  uint32_t *done_words)
{
    if (count == 0)
        return OMPBATCH_OK;
    unsigned int n = (unsigned int)count;
    unsigned int blocks = n < OB_KERNEL_MAX_BLOCKS ? n : OB_KERNEL_MAX_BLOCKS;
    void *params[] = {&table, &n};
    CUfunction kernel = exec->kernels.copy;
    ob_inline_pieces inline_table;
    int inline_launch = host_table != NULL && count <= OB_INLINE_LAUNCH_MAX;
    if (inline_launch) {
        inline_table.count = count;
        inline_table.done = (uint64_t)(uintptr_t)done_words;
        memcpy(inline_table.piece, host_table, count * sizeof(ob_piece));
        params[0] = &inline_table;
        kernel = exec->kernels.copy_inline;
        if (done_words != NULL)
            memset(done_words, 0, blocks * sizeof(*done_words));
    }
    uint64_t started = ob_phase_start();
    int status = OB_CU(exec->driver, cuLaunchKernel, kernel, blocks, 1, 1,
                       OB_COPY_KERNEL_THREADS, 1, 1, 0, exec->stream, params, NULL);
    ob_phase_end(OB_PHASE_LAUNCH, started);
    if (status != OMPBATCH_OK)
        return ob_fail_context(status, "the copy kernel (%zu pieces): ", count);
    ob_exec_enqueued(exec);
    if (inline_launch && done_words != NULL) {
        exec->done_words = done_words;
        exec->done_word_count = blocks;
        exec->done_after_calls = exec->driver_calls;
    }
    exec->staged.kernel_launches++;
    exec->staged.paths |= OMPBATCH_PATH_KERNEL;
    return OMPBATCH_OK;
}

/* Unpack j (exec->moves[exec->unpack_begin + j]) has its bytes written into pinned staging by
 * descriptors [from, to) of the level's first launch. Should that launch go inline, block b
 * moves descriptor b alone and then sets its word (kernels.h): the wait may unpack j as soon
 * as the words of those blocks are set (staged_wait.c). */
_Static_assert(OB_INLINE_PIECES < 64, "a block's word is a bit of a 64-bit mask");
static void note_unpack_words(ob_exec *exec, size_t j, size_t from, size_t to)
{
    if (j >= OB_INLINE_PIECES || to > OB_INLINE_PIECES)
        return;
    while (exec->unpack_word_count < j)
        exec->unpack_words[exec->unpack_word_count++] = 0;
    exec->unpack_words[j] = ((UINT64_C(1) << to) - 1) & ~((UINT64_C(1) << from) - 1);
    exec->unpack_word_count = j + 1;
}

/* Chunks of OB_COPY_KERNEL_THREADS units in a rectangle (kernels.h). */
static size_t rect_chunks(uint64_t bytes, uint64_t unit)
{
    uint64_t units = bytes / unit;
    return (size_t)((units + OB_COPY_KERNEL_THREADS - 1) / OB_COPY_KERNEL_THREADS);
}

/* A launch whose chunks say when they landed takes them in this many rounds of its blocks, so
 * that the first rounds land while the last still run and the host unpacks in between (an
 * x face of 512 KiB on an H100: 36 us in 4 rounds, 44 in 1, 47 in 16; a build may set it with
 * -D to measure again). */
#ifndef OB_RECT_ROUNDS
#define OB_RECT_ROUNDS 4
#endif

/* One rectangle in one launch (copy_pieces.cu): its geometry travels as the parameter. */
static int launch_rect(ob_exec *exec, const ob_rect_piece *piece)
{
    uint64_t wanted = rect_chunks(piece->bytes, piece->unit);
    if (piece->flags != 0)
        wanted = (wanted + OB_RECT_ROUNDS - 1) / OB_RECT_ROUNDS;
    unsigned int blocks = wanted < OB_KERNEL_MAX_BLOCKS ? (unsigned int)wanted
                                                        : OB_KERNEL_MAX_BLOCKS;
    void *params[] = {(void *)piece};
    uint64_t started = ob_phase_start();
    int status = OB_CU(exec->driver, cuLaunchKernel, exec->kernels.rect, blocks, 1, 1,
                       OB_COPY_KERNEL_THREADS, 1, 1, 0, exec->stream, params, NULL);
    ob_phase_end(OB_PHASE_LAUNCH, started);
    if (status != OMPBATCH_OK)
        return ob_fail_context(status, "the rectangle kernel (%" PRIu64 " bytes): ",
                               piece->bytes);
    ob_exec_enqueued(exec);
    exec->staged.kernel_launches++;
    exec->staged.paths |= OMPBATCH_PATH_KERNEL;
    return OMPBATCH_OK;
}

/* The launch of a rectangle between two addresses the GPU reaches; a NULL walk is compact. */
static ob_rect_piece rect_piece(const ob_rect *rect, uint64_t dst, const ob_walk *dst_walk,
                                uint64_t src, const ob_walk *src_walk)
{
    ob_rect_piece piece;
    memset(&piece, 0, sizeof(piece));
    piece.dst = dst;
    piece.src = src;
    piece.bytes = rect->bytes;
    if (dst_walk != NULL)
        piece.dst_walk = *dst_walk;
    if (src_walk != NULL)
        piece.src_walk = *src_walk;
    piece.unit = ob_rect_unit(rect, dst, src);
    return piece;
}

/* ---- prepare ------------------------------------------------------------------------------- */

static int reserve_moves(ob_exec *exec, size_t needed)
{
    if (ob_grow((void **)&exec->moves, &exec->move_capacity, needed, sizeof(*exec->moves)) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate %zu staged moves", needed);
    return OMPBATCH_OK;
}

static size_t chunks(size_t bytes, size_t chunk)
{
    return (bytes + chunk - 1) / chunk;
}

static size_t chunk_for(size_t total)
{
    size_t chunk = align_up(total / OB_CHUNK_TARGET_BLOCKS + 1, OB_CHUNK_MIN);
    return chunk > OB_CHUNK_MAX ? OB_CHUNK_MAX : chunk;
}

/* Appends the descriptors of one copy from src to dst (both as the GPU sees them). */
static void add_pieces(ob_piece *table, size_t *count, uintptr_t dst, uintptr_t src, size_t bytes,
                       size_t chunk)
{
    for (size_t done = 0; done < bytes; done += chunk) {
        size_t n = bytes - done < chunk ? bytes - done : chunk;
        table[*count].dst = (uint64_t)(dst + done);
        table[*count].src = (uint64_t)(src + done);
        table[*count].bytes = n;
        (*count)++;
    }
}

/* Where a packed or gathered piece lies in its area: the phase of its device address mod 16
 * is kept, so the kernel moves it in 16-byte units. */
static size_t place(size_t *cursor, uintptr_t device_address, size_t bytes)
{
    size_t at = align_up(*cursor, 64) + (device_address & 15);
    *cursor = at + bytes;
    return at;
}

typedef struct layout {
    size_t total;          /* bytes of the step's copies */
    size_t chunk;          /* bytes of a piece's descriptor at most */
    size_t packs;          /* copies packed by the CPU */
    size_t gathers;        /* copies unpacked by the CPU at the wait */
    size_t in_place;       /* copies the first kernel moves between their own addresses */
    size_t rects;          /* of all these, rectangles (one launch each) */
    size_t first_pieces;   /* in-place and gather descriptors */
    size_t second_pieces;  /* scatter descriptors */
    size_t pack_bytes;
    size_t gather_bytes;
    size_t rect_gather_bytes; /* rectangles the kernel gathers straight into pinned staging */
    size_t rect_flag_bytes;   /* their chunks' words, at most */
    int pack_in_stream_order; /* a packed source the stream may still be writing */
} layout;

static void measure(const ob_plan *plan, const ob_step *step, layout *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = step->begin; i < step->end; i++)
        out->total += plan->copies[i].bytes;
    out->chunk = chunk_for(out->total);
    for (size_t i = step->begin; i < step->end; i++) {
        const ob_copy *c = &plan->copies[i];
        if (c->rect != NULL) {
            out->rects++;
            if (c->stage_how == OB_STAGE_PACK) {
                out->packs++;
                place(&out->pack_bytes, 0, c->bytes);
                if (c->attr.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM)
                    out->pack_in_stream_order = 1;
            } else if (c->stage_how == OB_STAGE_GATHER) {
                out->gathers++;
                place(&out->rect_gather_bytes, 0, c->bytes);
                /* A unit of one byte: the most chunks. */
                out->rect_flag_bytes += align_up(rect_chunks(c->bytes, 1) * sizeof(uint32_t), 64);
            } else {
                out->in_place++;
            }
            continue;
        }
        switch (c->stage_how) {
        case OB_STAGE_PACK:
            out->packs++;
            out->second_pieces += chunks(c->bytes, out->chunk);
            place(&out->pack_bytes, c->dst, c->bytes);
            if (c->attr.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM)
                out->pack_in_stream_order = 1;
            break;
        case OB_STAGE_GATHER:
            out->gathers++;
            out->first_pieces += chunks(c->bytes, out->chunk);
            place(&out->gather_bytes, c->src, c->bytes);
            break;
        case OB_STAGE_IN_PLACE:
            out->in_place++;
            out->first_pieces += chunks(c->bytes, out->chunk);
            break;
        }
    }
}

/* Sends the step's copies one cuMemcpyAsync each: staging or the kernel is not to be had. */
static int run_direct(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    exec->staged.refused += step->end - step->begin;
    exec->staged.paths |= OMPBATCH_PATH_PER_COPY;
    return ob_backend_cuda_per_copy.run(exec, plan, step);
}

/* A step whose descriptors are kept: the kernel runs on them, nothing is written. */
static int run_kept(ob_exec *exec, const ob_step *step)
{
    int status = launch(exec, exec->kept_table, NULL, exec->kept_pieces, NULL);
    if (status != OMPBATCH_OK)
        return status;
    /* Counted when kept: reading the plan's copies again costs more than the launch. */
    exec->staged.bytes += exec->kept_bytes;
    exec->staged.copies += step->end - step->begin;
    exec->done += step->end - step->begin;
    return OMPBATCH_OK;
}

void ob_staged_drop_kept(ob_exec *exec)
{
    if (exec->kept_table_bytes > 0) {
        ob_resources_kept(-(long)exec->kept_table_bytes);
        CUresult r = exec->driver->fn.cuMemFree(exec->kept_table);
        if (r != CUDA_SUCCESS)
            ob_log(1, "device %d: cannot free %zu bytes of kept descriptors (CUresult %d)",
                   exec->ordinal, exec->kept_table_bytes, (int)r);
    }
    exec->kept_table = 0;
    exec->kept_table_bytes = 0;
    exec->kept_pieces = 0;
}

/* The second time the same plan's in-place step is built, its descriptors (just launched on
 * from host staging) are copied to device memory of the batch, behind the kernel on the
 * stream: a plan used twice is likely a loop's. Keeping is optional; when memory or the copy
 * fails, the step is simply built each time, and nothing is reported. */
static void keep_table(ob_exec *exec, unsigned long generation, size_t step_at,
                       const ob_piece *table, size_t pieces, size_t step_bytes)
{
    const ob_driver *driver = exec->driver;
    exec->kept_pieces = 0;
    if (exec->seen_generation != generation || exec->seen_step != step_at) {
        exec->seen_generation = generation;
        exec->seen_step = step_at;
        return;
    }
    size_t bytes = pieces * sizeof(ob_piece);
    if (bytes > exec->kept_table_bytes) {
        ob_staged_drop_kept(exec);
        CUdeviceptr grown = 0;
        if (driver->fn.cuMemAlloc == NULL || driver->fn.cuMemFree == NULL ||
            driver->fn.cuMemAlloc(&grown, bytes) != CUDA_SUCCESS) {
            ob_log(2, "device %d: %zu descriptors not kept: no device memory", exec->ordinal,
                   pieces);
            return;
        }
        exec->kept_table = grown;
        exec->kept_table_bytes = bytes;
        ob_resources_kept((long)bytes);
    }
    if (driver->fn.cuMemcpyAsync(exec->kept_table, (CUdeviceptr)(uintptr_t)table, bytes,
                                 exec->stream) != CUDA_SUCCESS) {
        ob_log(2, "device %d: %zu descriptors not kept: the copy failed", exec->ordinal, pieces);
        return;
    }
    exec->driver_calls++;
    ob_exec_enqueued(exec);
    exec->kept_pieces = pieces;
    exec->kept_bytes = step_bytes;
    exec->kept_generation = generation;
    exec->kept_step = step_at;
}

int ob_staged_prepare(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    const ob_driver *driver = exec->driver;
    int status = OMPBATCH_OK;
    exec->extra_count = 0;
    exec->scatter_count = 0;
    exec->rect_scatter_count = 0;
    if (ob_kernels_get(driver, exec->ordinal, &exec->kernels) != OMPBATCH_OK)
        return run_direct(exec, plan, step);
    size_t step_at = (size_t)(step - plan->steps);
    if (exec->kept_pieces > 0 && exec->kept_generation == plan->generation &&
        exec->kept_step == step_at)
        return run_kept(exec, step);
    layout lay;
    measure(plan, step, &lay);
    int bus = lay.pack_bytes + lay.gather_bytes <= ob_config_get()->bus_bytes &&
              lay.pack_bytes <= OB_BUS_PACK_MAX;
    if (bus) {
        /* The scatters join the first kernel's table; nothing goes to the device. */
        lay.first_pieces += lay.second_pieces;
        lay.second_pieces = 0;
    }
    size_t first_table = align_up(lay.first_pieces * sizeof(ob_piece), 64);
    size_t second_table = align_up(lay.second_pieces * sizeof(ob_piece), 64);
    size_t pack_area = align_up(lay.pack_bytes, 64), gather_area = align_up(lay.gather_bytes, 64);
    size_t rect_gather_area = align_up(lay.rect_gather_bytes, 64);
    /* The first kernel's blocks' words, then the word the stream writes after the level: apart,
     * for a block's word set early must not pass for the stream's. */
    size_t done_area = align_up((OB_INLINE_PIECES + 1) * sizeof(uint32_t), 64);
    /* An earlier level's staging is reused once the stream has passed it. */
    if (exec->staging != NULL && (status = ob_staged_wait(exec)) != OMPBATCH_OK)
        return status;
    if (ob_staging_acquire(exec->ordinal,
                           first_table + second_table + pack_area + gather_area +
                               rect_gather_area + lay.rect_flag_bytes + done_area,
                           bus ? 0 : second_table + pack_area + gather_area,
                           &exec->staging) != OMPBATCH_OK)
        return run_direct(exec, plan, step);
    if ((status = reserve_moves(exec, lay.packs + lay.gathers)) != OMPBATCH_OK)
        return status;
    if (ob_grow((void **)&exec->progress, &exec->progress_capacity, lay.gathers,
                sizeof(*exec->progress)) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate %zu rectangle unpacks",
                       lay.gathers);
    exec->progress_count = 0;
    if (ob_grow((void **)&exec->rect_scatters, &exec->rect_scatter_capacity, lay.rects,
                sizeof(*exec->rect_scatters)) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate %zu rectangle launches",
                       lay.rects);
    /* Host: [first table][second table][packed][gathered][rectangles gathered][their chunks'
     * words][the first kernel's blocks' words, the stream's word]; device: [second table]
     * [packed][gathered]. The first kernel reads its table over the bus (cuMemAllocHost memory is
     * mapped at its host address under unified addressing), or, up to OB_INLINE_PIECES
     * descriptors, gets it as the launch's parameter; the scatter's table travels to the
     * device with the packed pieces, in the same bulk copy. Over the bus there is no second
     * table and no device part: the first kernel reads the packed bytes and writes the
     * gathered ones where the host has them. */
    unsigned char *host = exec->staging->host;
    ob_piece *first = (ob_piece *)host, *second = (ob_piece *)(host + first_table);
    unsigned char *pack_host = host + first_table + second_table;
    unsigned char *gather_host = pack_host + pack_area;
    /* A rectangle's gather writes its compact bytes over the bus into pinned staging: the
     * stores of a warp are contiguous there, and a bulk copy after it would only add its own
     * latency. */
    unsigned char *rect_gather_host = gather_host + gather_area;
    size_t rect_gather_cursor = 0;
    unsigned char *rect_flags_host = rect_gather_host + rect_gather_area;
    size_t rect_flags_cursor = 0;
    /* Words are only watched by a wait that polls (OMPBATCH_WAIT_POLL_US). */
    uint32_t *done_words = ob_config_get()->wait_poll_us > 0
                               ? (uint32_t *)(rect_flags_host + lay.rect_flag_bytes)
                               : NULL;
    CUdeviceptr second_device = exec->staging->device;
    CUdeviceptr pack_device = second_device + second_table, gather_device = pack_device + pack_area;
    size_t n_first = 0, n_second = 0, pack_cursor = 0, gather_cursor = 0;
    /* A step whose first kernel would move one gather piece alone: the copy engine reads the
     * piece straight into pinned staging instead, and no kernel is launched for it (a launch
     * costs more than the copy of one small piece). Over the bus the packs' scatter is that
     * kernel too, and takes the piece along. */
    int lone_gather = lay.gathers == 1 && lay.in_place == 0 && lay.rects == 0 &&
                      !(bus && lay.packs > 0);
    /* exec->rect_scatters holds the step's rectangle launches: the scatters finish launches
     * from the front, the gathers and in-place ones launched after the first kernel from the
     * back (index lay.rects - 1 first). */
    size_t first_rects = 0;
    size_t lone_at = 0;
    CUdeviceptr lone_src = 0;
    /* Packs first, then the unpacks, each in the order its pieces were placed. */
    size_t packs = 0;
    exec->unpack_begin = lay.packs;
    exec->unpack_word_count = 0;
    size_t u = exec->unpack_begin;
    for (size_t i = step->begin; i < step->end; i++) {
        const ob_copy *c = &plan->copies[i];
        const ob_rect *r = c->rect;
        size_t at;
        if (r != NULL) {
            switch (c->stage_how) {
            case OB_STAGE_PACK:
                at = place(&pack_cursor, 0, c->bytes);
                exec->moves[packs++] =
                    (ob_host_move){pack_host + at, (const void *)c->src, c->bytes, &r->src};
                exec->rect_scatters[exec->rect_scatter_count++] = rect_piece(
                    r, c->dst, &r->dst,
                    bus ? (uint64_t)(uintptr_t)(pack_host + at) : pack_device + at, NULL);
                break;
            case OB_STAGE_GATHER: {
                at = place(&rect_gather_cursor, 0, c->bytes);
                ob_rect_piece *piece = &exec->rect_scatters[lay.rects - 1 - first_rects++];
                *piece = rect_piece(r, (uint64_t)(uintptr_t)(rect_gather_host + at), NULL,
                                    c->src, &r->src);
                size_t words = rect_chunks(piece->bytes, piece->unit);
                uint32_t *flags = (uint32_t *)(rect_flags_host + rect_flags_cursor);
                rect_flags_cursor += align_up(words * sizeof(*flags), 64);
                memset(flags, 0, words * sizeof(*flags));
                piece->flags = (uint64_t)(uintptr_t)flags;
                exec->progress[exec->progress_count++] = (ob_rect_progress){
                    u, flags, words, OB_COPY_KERNEL_THREADS * piece->unit, 0};
                exec->moves[u++] =
                    (ob_host_move){(void *)c->dst, rect_gather_host + at, c->bytes, &r->dst};
                exec->staged.paths |= OMPBATCH_PATH_STAGED;
                break;
            }
            case OB_STAGE_IN_PLACE:
                exec->rect_scatters[lay.rects - 1 - first_rects++] =
                    rect_piece(r, (uint64_t)((intptr_t)c->dst + c->dst_mem.device_offset),
                               &r->dst, (uint64_t)((intptr_t)c->src + c->src_mem.device_offset),
                               &r->src);
                break;
            }
            continue;
        }
        switch (c->stage_how) {
        case OB_STAGE_PACK:
            at = place(&pack_cursor, c->dst, c->bytes);
            exec->moves[packs++] =
                (ob_host_move){pack_host + at, (const void *)c->src, c->bytes, NULL};
            if (bus)
                add_pieces(first, &n_first, c->dst, (uintptr_t)(pack_host + at), c->bytes,
                           lay.chunk);
            else
                add_pieces(second, &n_second, c->dst, (uintptr_t)(pack_device + at), c->bytes,
                           lay.chunk);
            break;
        case OB_STAGE_GATHER:
            at = place(&gather_cursor, c->src, c->bytes);
            if (lone_gather) {
                lone_at = at;
                lone_src = (CUdeviceptr)c->src;
            } else {
                size_t from = n_first;
                add_pieces(first, &n_first,
                           bus ? (uintptr_t)(gather_host + at) : (uintptr_t)(gather_device + at),
                           c->src, c->bytes, lay.chunk);
                if (bus)
                    note_unpack_words(exec, u - exec->unpack_begin, from, n_first);
            }
            exec->moves[u++] = (ob_host_move){(void *)c->dst, gather_host + at, c->bytes, NULL};
            break;
        case OB_STAGE_IN_PLACE:
            add_pieces(first, &n_first, (uintptr_t)((intptr_t)c->dst + c->dst_mem.device_offset),
                       (uintptr_t)((intptr_t)c->src + c->src_mem.device_offset), c->bytes,
                       lay.chunk);
            break;
        }
    }
    /* A packed source in stream order may be the target of work still on the stream. */
    if (lay.pack_in_stream_order && (status = ob_stream_wait(driver, exec->stream)) != OMPBATCH_OK)
        return status;
    if (packs > 0) {
        uint64_t started = ob_phase_start();
        /* A pack on one thread that the kernel reads over the bus stays in that thread's
         * cache; larger packs, and packs for the bulk copy, go to memory. */
        ob_host_moves_run(exec->moves, packs,
                          bus && lay.pack_bytes < OB_PARALLEL_MOVE_BYTES ? OB_MOVE_PACK_CACHED
                                                                         : OB_MOVE_PACK_STREAMING);
        ob_phase_end(OB_PHASE_PACK, started);
        exec->staged.paths |= OMPBATCH_PATH_STAGED;
    }
    if ((status = launch(exec, (CUdeviceptr)(uintptr_t)first, first, n_first, done_words)) !=
        OMPBATCH_OK)
        return status;
    for (size_t k = 0; k < first_rects; k++)
        if ((status = launch_rect(exec, &exec->rect_scatters[lay.rects - 1 - k])) != OMPBATCH_OK)
            return status;
    if (lay.packs == 0 && lay.gathers == 0 && lay.rects == 0)
        keep_table(exec, plan->generation, step_at, first, n_first, lay.total);
    /* From here the unpacks are owed at the wait. */
    exec->move_count = u;
    if (pack_cursor > 0 && !bus) {
        exec->extra_dsts[exec->extra_count] = second_device;
        exec->extra_srcs[exec->extra_count] = (CUdeviceptr)(uintptr_t)second;
        exec->extra_sizes[exec->extra_count++] = second_table + pack_cursor;
    }
    if (gather_cursor > 0)
        exec->staged.paths |= OMPBATCH_PATH_STAGED;
    if (gather_cursor > 0 && (lone_gather || !bus)) {
        exec->extra_dsts[exec->extra_count] =
            (CUdeviceptr)(uintptr_t)(gather_host + (lone_gather ? lone_at : 0));
        exec->extra_srcs[exec->extra_count] = lone_gather ? lone_src : gather_device;
        exec->extra_sizes[exec->extra_count++] = lone_gather ? gather_cursor - lone_at
                                                             : gather_cursor;
    }
    exec->scatter_table = second_device;
    exec->scatter_count = n_second;
    if (gather_cursor > 0 && (lone_gather || !bus) && done_words != NULL)
        exec->word_after = done_words + OB_INLINE_PIECES;
    exec->staged.bytes += lay.total;
    exec->staged.copies += step->end - step->begin;
    /* Enqueued once finish has sent the bulk copies and the scatter. */
    exec->staged_pending = step->end - step->begin;
    return OMPBATCH_OK;
}

int ob_staged_flush_extras(ob_exec *exec)
{
    const ob_driver *driver = exec->driver;
    size_t n = exec->extra_count;
    exec->extra_count = 0;
    if (n == 0)
        return OMPBATCH_OK;
    int status = OMPBATCH_OK;
    uint64_t started = ob_phase_start();
    /* With no direct copies in the level, the copy-engine part may be one bulk copy: a batch
     * of one gains nothing, and cuMemcpyAsync costs the hook's small constructs less. */
    if (n > 1 && (driver->form == OMPBATCH_FORM_V13000 || driver->form == OMPBATCH_FORM_V12080)) {
        CUmemcpyAttributes attr;
        memset(&attr, 0, sizeof(attr));
        attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        size_t idx = 0, fail = SIZE_MAX;
        exec->driver_calls++;
        exec->batch_calls++;
        if (driver->form == OMPBATCH_FORM_V12080)
            status = OB_CU(driver, cuMemcpyBatchAsync_v12080, exec->extra_dsts, exec->extra_srcs,
                           exec->extra_sizes, n, &attr, &idx, 1, &fail, exec->stream);
        else
            status = OB_CU(driver, cuMemcpyBatchAsync_v13000, exec->extra_dsts, exec->extra_srcs,
                           exec->extra_sizes, n, &attr, &idx, 1, exec->stream);
    } else {
        for (size_t i = 0; i < n && status == OMPBATCH_OK; i++) {
            exec->driver_calls++;
            status = OB_CU(driver, cuMemcpyAsync, exec->extra_dsts[i], exec->extra_srcs[i],
                           exec->extra_sizes[i], exec->stream);
        }
    }
    ob_phase_end(OB_PHASE_COPY_CALL, started);
    if (status != OMPBATCH_OK)
        return ob_fail_context(status, "the staged bulk copy: ");
    ob_exec_enqueued(exec);
    return OMPBATCH_OK;
}

/* Stream memory operations stop being tried once one failed. */
static int stream_words_off;

/* Has the stream set `word` once everything queued before it is done, for the wait to watch
 * (watch_done_words): a copy into pinned memory ends 0.5-1.8 us sooner that way than a query
 * says it did (the H100 of 2026-12-06: one 4 KiB piece from the device 6.7 against 7.5 us a
 * round trip, 16 pieces 10.8 against 12.6). Without the driver's stream memory operations,
 * or once one failed, the wait queries as before; the failure is not the batch's. */
static void word_after_stream(ob_exec *exec, uint32_t *word)
{
    const ob_driver *driver = exec->driver;
    if (driver->fn.cuStreamWriteValue32 == NULL ||
        __atomic_load_n(&stream_words_off, __ATOMIC_RELAXED))
        return;
    __atomic_store_n(word, 0u, __ATOMIC_RELAXED);
    CUresult r = driver->fn.cuStreamWriteValue32(exec->stream, (CUdeviceptr)(uintptr_t)word, 1u,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS) {
        if (!__atomic_exchange_n(&stream_words_off, 1, __ATOMIC_RELAXED))
            ob_log(2, "cuStreamWriteValue32 failed (CUresult %d): waits query the stream instead",
                   (int)r);
        return;
    }
    exec->done_words = word;
    exec->done_word_count = 1;
    exec->done_after_calls = exec->driver_calls;
}

int ob_staged_finish(ob_exec *exec)
{
    int status = ob_staged_flush_extras(exec);
    if (status == OMPBATCH_OK)
        status = launch(exec, exec->scatter_table, NULL, exec->scatter_count, NULL);
    for (size_t k = 0; k < exec->rect_scatter_count && status == OMPBATCH_OK; k++)
        status = launch_rect(exec, &exec->rect_scatters[k]);
    if (status == OMPBATCH_OK && exec->word_after != NULL && exec->done_words == NULL &&
        exec->stream_busy)
        word_after_stream(exec, exec->word_after);
    exec->word_after = NULL;
    exec->scatter_count = 0;
    exec->rect_scatter_count = 0;
    if (status == OMPBATCH_OK)
        exec->done += exec->staged_pending;
    exec->staged_pending = 0;
    return status;
}

void ob_staged_abandon(ob_exec *exec)
{
    exec->move_count = exec->unpack_begin;
    exec->unpack_word_count = 0;
    exec->staged_pending = 0;
    exec->extra_count = 0;
    exec->word_after = NULL;
    exec->scatter_count = 0;
    exec->rect_scatter_count = 0;
}

void ob_staged_forget_stream_words_for_testing(void)
{
    __atomic_store_n(&stream_words_off, 0, __ATOMIC_RELAXED);
}

/* The staged step does its work in prepare and finish; run has nothing left to do. */
const ob_backend_ops ob_backend_staged = {
    .name = "staged",
    .prepare = ob_staged_prepare,
    .run = ob_backend_no_step,
    .finish = ob_staged_finish,
    .complete = ob_staged_complete,
    .release = ob_staged_drop_kept,
};
