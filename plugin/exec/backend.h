/* Backends execute the steps of a plan. Each is a const operations table; the executor picks
 * one per step by the step's route. */
#ifndef OMPBATCH_PLUGIN_BACKEND_H
#define OMPBATCH_PLUGIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/cuda/driver.h"
#include "plugin/cuda/kernel_module.h"
#include "plugin/cuda/kernels.h"
#include "plugin/cuda/staging.h"
#include "plugin/plan/plan.h"

/* A host-side copy of the staged strategy: a pack before submit returns, an unpack at the
 * wait. `walk` (NULL: contiguous) lays out the side that is not staging, a rectangle's: the
 * source of a pack, the destination of an unpack; `bytes` are compact. */
typedef struct ob_host_move {
    void *dst;
    const void *src;
    size_t bytes;
    const ob_walk *walk;
} ob_host_move;

/* A rectangle the kernel gathers into pinned staging chunk by chunk, each chunk saying when
 * it landed (kernels.h, ob_rect_piece.flags): the wait unpacks it chunk by chunk while the rest
 * of the launch still runs. */
typedef struct ob_rect_progress {
    size_t move;            /* its unpack in ob_exec.moves */
    const uint32_t *flags;  /* one word per chunk, zeroed before the launch */
    size_t chunks;
    size_t chunk_bytes;     /* compact bytes of each chunk */
    size_t unpacked;        /* chunks unpacked so far, from the first */
} ob_rect_progress;

/* Counters of the staged strategy, added up over a submit. */
typedef struct ob_staged_counts {
    size_t copies;
    size_t bytes;
    size_t kernel_launches;
    size_t refused;      /* staged copies sent direct: no staging or no kernel */
    unsigned paths;      /* OMPBATCH_PATH_KERNEL and OMPBATCH_PATH_STAGED */
} ob_staged_counts;

typedef struct ob_exec {
    const ob_driver *driver;   /* NULL for host-only batches */
    int ordinal;               /* CUDA device of the batch (staging, kernel) */
    size_t max_copies;         /* per batch call; the bulk copies join one only below it */
    CUstream stream;
    size_t done;               /* planned copies enqueued (or performed) successfully */
    size_t staged_pending;     /* the staged step's copies, counted in done once finish ran */
    size_t driver_calls;
    size_t batch_calls;        /* the cuMemcpyBatchAsync calls among driver_calls */
    size_t batch_fallbacks;    /* batch calls that failed and were sent one copy at a time */
    int stream_busy;           /* device work enqueued since the last synchronisation */
    /* The words the blocks of the stream's last work set when its bytes are in place
     * (kernels.h, ob_inline_pieces.done); NULL when that work sets none. */
    const uint32_t *done_words;
    size_t done_word_count;
    size_t done_after_calls;   /* driver_calls when they were set: any later call voids them */
    /* Where the stream writes a word after the level's work when the level gathers into pinned
     * staging by the copy engine (backend_staged.c); NULL otherwise. */
    uint32_t *word_after;
    /* Scratch arrays for one driver batch call, grown as needed. */
    CUdeviceptr *dsts;
    CUdeviceptr *srcs;
    size_t *sizes;
    size_t scratch_capacity;
    CUmemcpyAttributes *attrs; /* the step's attributes plus the bulk copies' */
    size_t *attr_idxs;
    size_t attr_capacity;
    /* The staged strategy. Bulk copies wait here for the level's batch call to take them. */
    size_t extra_count;
    CUdeviceptr extra_dsts[2];
    CUdeviceptr extra_srcs[2];
    size_t extra_sizes[2];
    ob_staging *staging;       /* held until the wait */
    ob_host_move *moves;       /* packs, then the unpacks pending until the wait */
    size_t move_count;
    size_t move_capacity;
    ob_kernels kernels;        /* the device's copy kernels, loaded by prepare */
    ob_rect_piece *rect_scatters; /* rectangles finish launches, after the bulk copy */
    size_t rect_scatter_count;
    size_t rect_scatter_capacity;
    CUdeviceptr scatter_table; /* descriptors finish launches with */
    size_t scatter_count;
    size_t unpack_begin;       /* moves[unpack_begin, move_count) wait for the stream */
    ob_rect_progress *progress; /* of those, rectangles unpacked as their blocks land */
    size_t progress_count;
    size_t progress_capacity;
    /* Of those, the first unpack_word_count: the words of the level's inline launch (kernels.h,
     * done) that say unpack j's bytes are in pinned staging, one bit a block (0: none say so).
     * The wait unpacks each once its words are set, while the other blocks' bytes still cross
     * the bus. */
    uint64_t unpack_words[OB_INLINE_PIECES];
    size_t unpack_word_count;
    ob_staged_counts staged;
    /* The descriptors of a staged step that only moves in place, kept on the device once the
     * same plan ran twice: later refills with the same copies launch on them directly. */
    CUdeviceptr kept_table;
    size_t kept_table_bytes;   /* allocated */
    size_t kept_pieces;        /* descriptors in it; 0 when nothing is kept */
    size_t kept_bytes;         /* bytes of the step's copies */
    unsigned long kept_generation; /* the plan (ob_plan.generation) and step they belong to */
    size_t kept_step;
    unsigned long seen_generation; /* the plan of the last in-place step built, and its step */
    size_t seen_step;
} ob_exec;

/* Every enqueue on exec's stream goes through here: the stream is busy, and the words of an
 * earlier launch no longer say when the stream's work is done. */
static inline void ob_exec_enqueued(ob_exec *exec)
{
    exec->stream_busy = 1;
    exec->done_words = NULL;
}

/* A backend: what exec.c calls, in this order, for the steps of one level: prepare for every
 * step after the level's host steps have run (the staged backend packs and launches its
 * gather kernel here, so that its bulk copies join the level's batch call), run, then finish
 * (the staged backend's scatter kernel); complete after the stream is idle (staged unpacks,
 * staging given back) and release when the batch forgets its plans (kept descriptors). On
 * failure the thread's message names the copy (as added) at fault. Every entry is set: a
 * backend with nothing to do in a phase has the no-op below. */
typedef struct ob_backend_ops {
    const char *name;
    int (*prepare)(ob_exec *exec, const ob_plan *plan, const ob_step *step);
    int (*run)(ob_exec *exec, const ob_plan *plan, const ob_step *step);
    int (*finish)(ob_exec *exec);
    void (*complete)(ob_exec *exec);
    void (*release)(ob_exec *exec);
} ob_backend_ops;

static inline int ob_backend_no_step(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    (void)exec, (void)plan, (void)step;
    return 0;
}

static inline int ob_backend_no_finish(ob_exec *exec)
{
    (void)exec;
    return 0;
}

static inline void ob_backend_nothing(ob_exec *exec)
{
    (void)exec;
}

/* A backend that only runs its steps. */
#define OB_BACKEND_RUN_ONLY(backend_name, run_fn)                                               \
    {                                                                                           \
        .name = (backend_name), .prepare = ob_backend_no_step, .run = (run_fn),                 \
        .finish = ob_backend_no_finish, .complete = ob_backend_nothing,                         \
        .release = ob_backend_nothing,                                                          \
    }

extern const ob_backend_ops ob_backend_host;
extern const ob_backend_ops ob_backend_cuda_batch;
extern const ob_backend_ops ob_backend_cuda_per_copy;
/* Large pageable copies, each complete when its step returns (backend_pipelined.c). */
extern const ob_backend_ops ob_backend_cuda_pipelined;
/* Small pieces through pinned staging and the copy kernel (backend_staged.c). */
extern const ob_backend_ops ob_backend_staged;

#endif
