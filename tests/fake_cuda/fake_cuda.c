/*
 * A fake CUDA driver for CPU tests of ompbatch.
 *
 * It serves every entry point of OMPBATCH_DRIVER_ENTRY_POINTS through cuGetProcAddress, with the
 * exact PFN_<symbol>_v<version> signature, and behaves as the driver documentation says where it
 * matters for a copy library: arguments are validated, streams run lazily, sources are read when
 * their access order says, and copies must stay inside the allocation they start in. "Device"
 * memory is ordinary host memory, so a test can run every byte through the library and compare.
 * The control interface (fake_cuda_control.h) configures it, injects failures and reports what
 * the library did.
 *
 * Locking: one mutex guards all shared state, and every entry point and control function holds
 * it for its whole duration, copies included. The context stack and the last failure message are
 * per thread and need no lock.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plugin/cuda/driver_api.h"
#include "plugin/cuda/kernels.h"
#include "tests/fake_cuda/fake_cuda_control.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

enum {
    CTX_STACK_MAX = 64,
    FORM_V12080 = 12080,
    FORM_V13000 = 13000,
};

/* ---------------------------------------------------------------------------------------------
 * Entry points: one id per field of the X-macro list, plus cuGetProcAddress itself.
 */

enum fake_ep {
#define FAKE_EP_ENUM(field, symbol, version, need) FAKE_EP_##field,
    OMPBATCH_DRIVER_ENTRY_POINTS(FAKE_EP_ENUM)
#undef FAKE_EP_ENUM
    FAKE_EP_cuGetProcAddress,
    FAKE_EP_COUNT,
    FAKE_EP_NONE = FAKE_EP_COUNT,
};

static const char *const ep_names[FAKE_EP_COUNT] = {
#define FAKE_EP_NAME(field, symbol, version, need) #field,
    OMPBATCH_DRIVER_ENTRY_POINTS(FAKE_EP_NAME)
#undef FAKE_EP_NAME
    "cuGetProcAddress",
};

/* ---------------------------------------------------------------------------------------------
 * State.
 */

enum alloc_kind { ALLOC_DEVICE, ALLOC_HOST, ALLOC_MANAGED, ALLOC_KINDS };

static const char *const alloc_kind_names[ALLOC_KINDS] = {"device", "pinned host", "managed"};

struct alloc {
    uintptr_t base;
    size_t size; /* as requested; the pages behind it are rounded up */
    enum alloc_kind kind;
    struct CUctx_st *ctx;
    bool registered; /* the program's own pages, registered (cuMemHostRegister): pinned host */
    bool portable;   /* registered for every context: no context's destruction undoes it */
};

/*
 * Each kind of memory lives in its own reserved address range, never in the malloc heap. On a
 * real machine device memory never shares an address with pageable memory; if the fake took
 * both from one heap, a freed pageable buffer's address would come back as device memory and
 * code that caches what an address is would fail in ways the GPU cannot produce. Unused pages
 * of an arena are PROT_NONE, so touching freed memory or running past an allocation's pages
 * faults at once.
 */
struct arena {
    uintptr_t base;
    uintptr_t end; /* base == end: not reserved yet */
};

/* One queued copy. snapshot, when set, owns the source bytes read during the API call. */
struct op {
    unsigned char *dst;
    const unsigned char *src;
    size_t size;
    unsigned char *snapshot;
    /* A launch of the copy kernel instead of a copy when pieces != NULL: piece_count
     * descriptors {dst, src, bytes} (3 x u64) at pieces, read when the kernel runs. */
    const uint64_t *pieces;
    unsigned int piece_count;
    /* A launch of the inline copy kernel when is_inline: its descriptors, copied at the launch
     * (pieces is NULL then). */
    bool is_inline;
    ob_inline_pieces inline_table;
    unsigned int grid; /* blocks of an inline launch: as many words when it has `done` */
    unsigned int blocks_run; /* of them, how many have run (in the order rect_chunk_order gives) */
    /* A launch of the rectangle kernel when is_rect: its parameter, copied at the launch, its
     * block size, and how many of its chunks have run (in the order rect_chunk_order gives). */
    /* A stream memory operation when is_write_value: `value` stored at dst (4 bytes). */
    bool is_write_value;
    uint32_t value;
    bool is_rect;
    ob_rect_piece rect;
    unsigned int block;
    uint64_t chunks_run;
};

/* The one module and function the fake knows, plugin/cuda/kernels/copy_pieces.cu's ob_copy_pieces,
 * once per device's context as on a GPU: a function is launched only in the context whose
 * module it came from. */
struct CUmod_st {
    int ordinal;
    int loaded; /* loads not unloaded yet */
};
struct CUfunc_st {
    int ordinal;
};
static struct CUmod_st copy_modules[FAKE_CUDA_MAX_DEVICES];
static struct CUfunc_st copy_functions[FAKE_CUDA_MAX_DEVICES];
static struct CUfunc_st rect_functions[FAKE_CUDA_MAX_DEVICES];
static struct CUfunc_st inline_functions[FAKE_CUDA_MAX_DEVICES];

struct CUstream_st {
    struct CUctx_st *ctx;
    unsigned int flags;
    struct op *ops;
    size_t nops;
    size_t cap;
    struct CUstream_st *next; /* registry of user streams, which validates handles */
};

struct CUctx_st {
    int ordinal;
    int refcount;
    bool peer[FAKE_CUDA_MAX_DEVICES]; /* cuCtxEnablePeerAccess made this context reach them */
    /* NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD all map here; the fake does not model
     * per-thread default streams separately. */
    struct CUstream_st legacy;
};

struct config {
    int driver_version;
    int device_count;
    CUresult init_result;
    bool strict_dependencies;
    CUresult unavailable_result;
    bool any_reads_early;
    bool log;
    bool no_peer_access;
    unsigned primary_flags; /* what cuDevicePrimaryCtxGetState reports */
    bool no_rect_words;     /* rectangle blocks never set their words */
    bool no_done_words;     /* inline launches' blocks never set their words */
    bool done_words_in_parts; /* a query runs half of such a launch's remaining blocks */
};

struct injection {
    unsigned long countdown; /* 0: disarmed */
    CUresult result;
    size_t copy_index;
};

static struct {
    pthread_mutex_t lock;
    struct config cfg;
    bool initialized;
    struct CUctx_st ctx[FAKE_CUDA_MAX_DEVICES];
    struct arena arenas[ALLOC_KINDS];
    struct alloc *allocs; /* sorted by base */
    size_t nallocs;
    size_t allocs_cap;
    struct CUstream_st *streams;
    unsigned long long calls[FAKE_EP_COUNT];
    struct injection injections[FAKE_EP_COUNT];
    struct injection batch_injection; /* either batch form */
    struct fake_cuda_stats stats;
    struct fake_cuda_batch_record batches[FAKE_CUDA_BATCH_HISTORY];
    size_t nbatches;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static _Thread_local struct CUctx_st *tls_ctx_stack[CTX_STACK_MAX];
static _Thread_local int tls_ctx_depth;
static _Thread_local char tls_last_failure[512];
static _Thread_local enum fake_ep tls_current_ep = FAKE_EP_NONE;

/* ---------------------------------------------------------------------------------------------
 * Configuration and locking.
 */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fake_cuda: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* A misconfigured test must fail loudly, not run against a driver it did not ask for. */
static long env_long(const char *name, long fallback, long lo, long hi)
{
    const char *text = getenv(name);
    if (text == NULL || *text == '\0')
        return fallback;
    char *end;
    long value = strtol(text, &end, 10);
    if (*end != '\0' || value < lo || value > hi)
        die("%s=%s: expected an integer in [%ld, %ld]", name, text, lo, hi);
    return value;
}

static void load_config(void)
{
    g.cfg.driver_version = (int)env_long("FAKE_CUDA_DRIVER_VERSION", 13000, 1000, 99990);
    g.cfg.device_count = (int)env_long("FAKE_CUDA_DEVICE_COUNT", 2, 0, FAKE_CUDA_MAX_DEVICES);
    g.cfg.init_result = (CUresult)env_long("FAKE_CUDA_INIT_RESULT", CUDA_SUCCESS, 0, 999);
    g.cfg.strict_dependencies = env_long("FAKE_CUDA_STRICT_DEPENDENCIES", 1, 0, 1) != 0;
    g.cfg.unavailable_result =
        (CUresult)env_long("FAKE_CUDA_UNAVAILABLE_RESULT", CUDA_ERROR_NOT_FOUND, 0, 999);
    g.cfg.any_reads_early = env_long("FAKE_CUDA_ANY_READS_EARLY", 0, 0, 1) != 0;
    g.cfg.log = env_long("FAKE_CUDA_LOG", 0, 0, 1) != 0;
    g.cfg.no_peer_access = env_long("FAKE_CUDA_NO_PEER_ACCESS", 0, 0, 1) != 0;
    g.cfg.primary_flags = (unsigned)env_long("FAKE_CUDA_PRIMARY_CTX_FLAGS", 0, 0, 0xff);
    g.cfg.no_rect_words = false;
    g.cfg.no_done_words = false;
    g.cfg.done_words_in_parts = false;
}

static void init_once(void)
{
    load_config();
    for (int i = 0; i < FAKE_CUDA_MAX_DEVICES; i++) {
        g.ctx[i].ordinal = i;
        g.ctx[i].legacy.ctx = &g.ctx[i];
    }
}

static void lock(void)
{
    pthread_once(&g_once, init_once);
    pthread_mutex_lock(&g.lock);
}

static void unlock(void)
{
    tls_current_ep = FAKE_EP_NONE;
    pthread_mutex_unlock(&g.lock);
}

/* Records why the current call fails (per thread) and returns result. */
static CUresult fail(CUresult result, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static CUresult fail(CUresult result, const char *fmt, ...)
{
    const char *ep = tls_current_ep == FAKE_EP_NONE ? "fake_cuda" : ep_names[tls_current_ep];
    int n = snprintf(tls_last_failure, sizeof tls_last_failure, "%s: ", ep);
    if (n < 0 || (size_t)n >= sizeof tls_last_failure)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_last_failure + n, sizeof tls_last_failure - (size_t)n, fmt, ap);
    va_end(ap);
    if (g.cfg.log)
        fprintf(stderr, "fake_cuda: %s (CUresult %d)\n", tls_last_failure, (int)result);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * Call prologue: counting and failure injection.
 */

static bool take_injection(struct injection *inj, CUresult *result, size_t *copy_index)
{
    if (inj->countdown == 0 || --inj->countdown != 0)
        return false;
    *result = inj->result;
    if (copy_index != NULL)
        *copy_index = inj->copy_index;
    g.stats.injected_failures++;
    fail(inj->result, "injected failure");
    return true;
}

/* Takes the lock and counts the call. Returns true when an injected failure fires: the call
 * must then return *injected and do nothing else (the lock is still held). */
static bool begin_call(enum fake_ep ep, CUresult *injected)
{
    lock();
    tls_current_ep = ep;
    g.calls[ep]++;
    return take_injection(&g.injections[ep], injected, NULL);
}

static CUresult require_init(void)
{
    if (!g.initialized)
        return fail(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not succeeded");
    return CUDA_SUCCESS;
}

static CUresult require_device(CUdevice dev)
{
    if (dev < 0 || dev >= g.cfg.device_count)
        return fail(CUDA_ERROR_INVALID_DEVICE, "device %d does not exist (%d devices)", dev,
                    g.cfg.device_count);
    return CUDA_SUCCESS;
}

static CUresult current_context(struct CUctx_st **out)
{
    if (tls_ctx_depth == 0)
        return fail(CUDA_ERROR_INVALID_CONTEXT, "no context is current to this thread");
    struct CUctx_st *ctx = tls_ctx_stack[tls_ctx_depth - 1];
    if (ctx->refcount == 0)
        return fail(CUDA_ERROR_INVALID_CONTEXT,
                    "the current context (device %d) was destroyed by its last release",
                    ctx->ordinal);
    *out = ctx;
    return CUDA_SUCCESS;
}

/* The prologue of every call that needs an initialized driver and a current context. */
static CUresult require_context(struct CUctx_st **out)
{
    CUresult r = require_init();
    return r != CUDA_SUCCESS ? r : current_context(out);
}

/* ---------------------------------------------------------------------------------------------
 * Streams and their queues.
 */

static bool is_builtin_stream(CUstream h)
{
    return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

static struct CUstream_st *find_stream(CUstream h)
{
    for (struct CUstream_st *s = g.streams; s != NULL; s = s->next)
        if (s == h)
            return s;
    return NULL;
}

static CUresult user_stream(CUstream h, struct CUstream_st **out)
{
    struct CUstream_st *s = find_stream(h);
    if (s == NULL)
        return fail(CUDA_ERROR_INVALID_HANDLE, "stream %p is not a live stream", (void *)h);
    *out = s;
    return CUDA_SUCCESS;
}

/* Streams of calls that accept the built-in streams, which belong to the current context. */
static CUresult any_stream(CUstream h, struct CUctx_st *ctx, struct CUstream_st **out)
{
    if (is_builtin_stream(h)) {
        *out = &ctx->legacy;
        return CUDA_SUCCESS;
    }
    return user_stream(h, out);
}

static CUresult queue_reserve(struct CUstream_st *s, size_t extra)
{
    if (extra <= s->cap - s->nops)
        return CUDA_SUCCESS;
    if (extra > SIZE_MAX / sizeof(struct op) / 2 - s->nops)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "stream queue too long");
    size_t cap = s->cap == 0 ? 16 : s->cap;
    while (cap < s->nops + extra)
        cap *= 2;
    struct op *ops = realloc(s->ops, cap * sizeof *ops);
    if (ops == NULL)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "no memory for the stream queue");
    s->ops = ops;
    s->cap = cap;
    return CUDA_SUCCESS;
}

static const char *range_problem(uintptr_t p, size_t n, char *buf, size_t len);
static struct alloc *alloc_containing(uintptr_t p);

/* Whether device `ordinal`'s GPU could reach [p, p + n): one allocation of the driver's
 * (pinned or managed memory, or device memory of that device: the library enables no peer
 * access), never pageable memory. */
static void check_reachable(int ordinal, const char *what, unsigned int piece, uintptr_t p,
                            size_t n)
{
    char why[160];
    const char *problem = range_problem(p, n, why, sizeof why);
    const struct alloc *a = alloc_containing(p);
    if (problem != NULL || a == NULL)
        die("ob_copy_pieces piece %u: %s %#lx + %zu bytes is not memory the GPU can reach (%s)",
            piece, what, (unsigned long)p, n, problem != NULL ? problem : "pageable memory");
    if (a->kind == ALLOC_DEVICE && a->ctx->ordinal != ordinal)
        die("ob_copy_pieces piece %u on device %d: %s %#lx is device %d's memory", piece,
            ordinal, what, (unsigned long)p, a->ctx->ordinal);
}

/* Piece i of a copy kernel launch's descriptors, as the GPU would move it. */
static void piece_run(const uint64_t *pieces, unsigned int i, int ordinal)
{
    uintptr_t dst = (uintptr_t)pieces[3 * i], src = (uintptr_t)pieces[3 * i + 1];
    size_t bytes = (size_t)pieces[3 * i + 2];
    check_reachable(ordinal, "dst", i, dst, bytes);
    check_reachable(ordinal, "src", i, src, bytes);
    if (dst < src + bytes && src < dst + bytes)
        die("ob_copy_pieces piece %u: dst %#lx and src %#lx overlap (%zu bytes)", i,
            (unsigned long)dst, (unsigned long)src, bytes);
    memcpy((void *)dst, (const void *)src, bytes);
    g.stats.bytes_executed += bytes;
}

static uint64_t rect_chunk_order(uint64_t k, uint64_t n);

/* The copy kernel, as the GPU would run it: the descriptors are read when it runs, and a piece
 * outside memory the GPU reaches is a fault the real kernel would report asynchronously; the
 * fake stops the test with the reason. An inline launch runs block by block, in a scrambled
 * order, until `upto` of its blocks have run: block b moves pieces b, b + grid, ... (as
 * copy_pieces.cu does) and then, with `done` (kernels.h), sets its word, which must lie in
 * pinned memory the GPU reaches. A table launch runs whole. */
static void pieces_run(struct op *op, int ordinal, unsigned int upto)
{
    if (!op->is_inline) {
        check_reachable(ordinal, "the descriptor table", 0, (uintptr_t)op->pieces,
                        (size_t)op->piece_count * 3 * sizeof(uint64_t));
        for (unsigned int i = 0; i < op->piece_count; i++)
            piece_run(op->pieces, i, ordinal);
        g.stats.copies_executed++;
        g.stats.kernels_executed++;
        return;
    }
    const uint64_t *pieces = (const uint64_t *)op->inline_table.piece;
    unsigned int count = (unsigned int)op->inline_table.count;
    for (; op->blocks_run < upto; op->blocks_run++) {
        unsigned int b = (unsigned int)rect_chunk_order(op->blocks_run, op->grid);
        for (unsigned int i = b; i < count; i += op->grid)
            piece_run(pieces, i, ordinal);
        if (op->inline_table.done == 0 || g.cfg.no_done_words)
            continue;
        uintptr_t word = (uintptr_t)(op->inline_table.done + 4 * b);
        check_reachable(ordinal, "done word", b, word, 4);
        const struct alloc *a = alloc_containing(word);
        if (a == NULL || a->kind != ALLOC_HOST)
            die("ob_copy_pieces_inline: block %u's word %#lx is not in pinned host memory", b,
                (unsigned long)word);
        __atomic_store_n((uint32_t *)word, 1u, __ATOMIC_RELEASE);
        g.stats.done_words_set++;
    }
    if (op->blocks_run == op->grid) {
        g.stats.copies_executed++;
        g.stats.kernels_executed++;
    }
}

/* Where compact offset x of a rectangle's side lies from its first byte (kernels.h). */
static uint64_t rect_at(const ob_walk *w, uint64_t x)
{
    if (w->dims == 0)
        return x;
    uint64_t q = x / w->run, at = x % w->run;
    for (uint64_t d = 0; d < w->dims; d++) {
        at += (q % w->count[d]) * w->stride[d];
        q /= w->count[d];
    }
    return at;
}

/* Units [from, to) of a rectangle launch, one by one as the GPU moves them: a unit at an
 * address not aligned to it, or outside memory the GPU reaches, stops the test. */
static void rect_units(const ob_rect_piece *p, int ordinal, uint64_t from, uint64_t to)
{
    uint64_t unit = p->unit;
    uintptr_t last_dst = 0, last_src = 0;
    for (uint64_t u = from; u < to; u++) {
        uint64_t x = u * unit;
        uintptr_t dst = (uintptr_t)(p->dst + rect_at(&p->dst_walk, x));
        uintptr_t src = (uintptr_t)(p->src + rect_at(&p->src_walk, x));
        if ((dst | src) % unit != 0)
            die("ob_copy_rect: offset %lu: dst %#lx or src %#lx not aligned to %lu bytes",
                (unsigned long)x, (unsigned long)dst, (unsigned long)src, (unsigned long)unit);
        if (u == from || dst != last_dst + unit)
            check_reachable(ordinal, "rectangle dst", 0, dst, unit);
        if (u == from || src != last_src + unit)
            check_reachable(ordinal, "rectangle src", 0, src, unit);
        memcpy((void *)dst, (const void *)src, unit);
        last_dst = dst;
        last_src = src;
    }
}

/* The k-th of n chunks to run: a stride coprime with n visits every chunk once, far from the
 * order of their numbers, as a GPU may finish them. */
static uint64_t rect_chunk_order(uint64_t k, uint64_t n)
{
    static const uint64_t strides[] = {7919, 7907, 7901};
    uint64_t stride = 1;
    for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
        if (n % strides[i] != 0) {
            stride = strides[i];
            break;
        }
    return (k * stride + n / 2) % n;
}

static uint64_t rect_chunk_count(const struct op *op)
{
    uint64_t units = op->rect.bytes / op->rect.unit;
    return (units + op->block - 1) / op->block;
}

/* Runs the rectangle launch until `upto` of its chunks (a block's worth of units each, taken
 * in turn by the grid's blocks as copy_pieces.cu does) have run, in a scrambled order. With
 * flags (kernels.h) each chunk then sets its word, which must lie in pinned memory the GPU
 * reaches. */
static void rect_run(struct op *op, int ordinal, uint64_t upto)
{
    const ob_rect_piece *p = &op->rect;
    uint64_t unit = p->unit;
    if (unit != 1 && unit != 2 && unit != 4 && unit != 8 && unit != 16)
        die("ob_copy_rect: unit %lu", (unsigned long)unit);
    if (p->bytes % unit != 0 || p->dst_walk.dims > OB_WALK_MAX_DIMS ||
        p->src_walk.dims > OB_WALK_MAX_DIMS)
        die("ob_copy_rect: %lu bytes in units of %lu, %lu and %lu dimensions",
            (unsigned long)p->bytes, (unsigned long)unit, (unsigned long)p->dst_walk.dims,
            (unsigned long)p->src_walk.dims);
    uint64_t units = p->bytes / unit, chunks = rect_chunk_count(op);
    for (; op->chunks_run < upto; op->chunks_run++) {
        uint64_t c = rect_chunk_order(op->chunks_run, chunks);
        uint64_t first = c * op->block, last = first + op->block < units ? first + op->block : units;
        rect_units(p, ordinal, first, last);
        if (p->flags != 0 && !g.cfg.no_rect_words) {
            uintptr_t word = (uintptr_t)(p->flags + 4 * c);
            check_reachable(ordinal, "rectangle word", (unsigned int)c, word, 4);
            const struct alloc *a = alloc_containing(word);
            if (a == NULL || a->kind != ALLOC_HOST)
                die("ob_copy_rect: chunk %lu's word %#lx is not in pinned host memory",
                    (unsigned long)c, (unsigned long)word);
            __atomic_store_n((uint32_t *)word, 1u, __ATOMIC_RELEASE);
            g.stats.rect_words_set++;
        }
    }
    if (op->chunks_run == chunks) {
        g.stats.bytes_executed += p->bytes;
        g.stats.copies_executed++;
        g.stats.kernels_executed++;
    }
}

/* Runs the stream's work in order. With `partly`, a rectangle launch whose chunks set words
 * runs half of its remaining chunks and stops the stream there (what a query sees of a launch
 * still running), and an inline launch whose blocks set words stops it right after itself
 * (the blocks are done, the stream has not moved on): the work after either stays queued. */
static void stream_run_some(struct CUstream_st *s, bool partly)
{
    for (size_t i = 0; i < s->nops; i++) {
        struct op *op = &s->ops[i];
        if (op->is_rect) {
            uint64_t chunks = rect_chunk_count(op);
            if (partly && op->rect.flags != 0 && chunks - op->chunks_run > 1) {
                rect_run(op, s->ctx->ordinal, op->chunks_run + (chunks - op->chunks_run + 1) / 2);
                memmove(s->ops, op, (s->nops - i) * sizeof *op);
                s->nops -= i;
                g.stats.rect_partial_runs++;
                return;
            }
            rect_run(op, s->ctx->ordinal, chunks);
            continue;
        }
        if (op->is_write_value) {
            __atomic_store_n((uint32_t *)op->dst, op->value, __ATOMIC_RELEASE);
            g.stats.values_written++;
            continue;
        }
        if (op->pieces != NULL || op->is_inline) {
            unsigned int left = op->is_inline ? op->grid - op->blocks_run : 0;
            if (partly && left > 1 && op->inline_table.done != 0 && g.cfg.done_words_in_parts) {
                pieces_run(op, s->ctx->ordinal, op->blocks_run + (left + 1) / 2);
                memmove(s->ops, op, (s->nops - i) * sizeof *op);
                s->nops -= i;
                g.stats.done_partial_runs++;
                return;
            }
            pieces_run(op, s->ctx->ordinal, op->grid);
            if (partly && op->is_inline && op->inline_table.done != 0 && i + 1 < s->nops) {
                memmove(s->ops, op + 1, (s->nops - i - 1) * sizeof *op);
                s->nops -= i + 1;
                g.stats.done_partial_runs++;
                return;
            }
            continue;
        }
        /* memmove: an overlapping copy is undefined on the GPU but must not be in the fake. */
        memmove(op->dst, op->src, op->size);
        free(op->snapshot);
        g.stats.copies_executed++;
        g.stats.bytes_executed += op->size;
    }
    s->nops = 0;
}

static void stream_run(struct CUstream_st *s)
{
    stream_run_some(s, false);
}

static void stream_discard(struct CUstream_st *s)
{
    for (size_t i = 0; i < s->nops; i++)
        free(s->ops[i].snapshot);
    g.stats.copies_discarded += s->nops;
    s->nops = 0;
}

/* Blocking streams are ordered with the legacy stream of their context. The fake approximates
 * that order by running the other side's pending work first. */
static void context_run_blocking_streams(struct CUctx_st *ctx)
{
    for (struct CUstream_st *s = g.streams; s != NULL; s = s->next)
        if (s->ctx == ctx && !(s->flags & CU_STREAM_NON_BLOCKING))
            stream_run(s);
}

static void stream_sync(struct CUstream_st *s)
{
    if (s == &s->ctx->legacy)
        context_run_blocking_streams(s->ctx);
    else if (!(s->flags & CU_STREAM_NON_BLOCKING))
        stream_run(&s->ctx->legacy);
    stream_run(s);
}

static void run_everything(void)
{
    for (struct CUstream_st *s = g.streams; s != NULL; s = s->next)
        stream_run(s);
    for (int i = 0; i < FAKE_CUDA_MAX_DEVICES; i++)
        stream_run(&g.ctx[i].legacy);
}

static void stream_unlink(struct CUstream_st *s)
{
    for (struct CUstream_st **p = &g.streams; *p != NULL; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            return;
        }
    }
}

static void stream_free(struct CUstream_st *s)
{
    stream_sync(s);
    stream_unlink(s);
    free(s->ops);
    free(s);
}

static unsigned long long pending_copies(void)
{
    unsigned long long n = 0;
    for (struct CUstream_st *s = g.streams; s != NULL; s = s->next)
        n += s->nops;
    for (int i = 0; i < FAKE_CUDA_MAX_DEVICES; i++)
        n += g.ctx[i].legacy.nops;
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * The allocation table.
 */

/* Index of the first allocation whose base is greater than p. */
static size_t alloc_upper_bound(uintptr_t p)
{
    size_t lo = 0, hi = g.nallocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g.allocs[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The allocation that contains p (interior pointers included), or NULL. */
static struct alloc *alloc_containing(uintptr_t p)
{
    size_t i = alloc_upper_bound(p);
    if (i == 0)
        return NULL;
    struct alloc *a = &g.allocs[i - 1];
    return p - a->base < a->size ? a : NULL;
}

static void poison(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(0xA5u ^ (i * 131u));
}

static size_t page_round_up(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

/* Reserves the arena of a kind on first use: as large as the address space allows, no memory. */
static bool arena_ready(struct arena *a)
{
    if (a->end != a->base)
        return true;
    for (size_t size = (size_t)64 << 30; size >= (size_t)1 << 30; size /= 2) {
        void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            a->base = (uintptr_t)p;
            a->end = a->base + size;
            return true;
        }
    }
    return false;
}

static bool in_arena(const struct arena *a, uintptr_t p)
{
    return p >= a->base && p < a->end;
}

/* Whether [p, p + n) touches the address range of any kind of fake memory. */
static bool overlaps_arenas(uintptr_t p, size_t n)
{
    for (int k = 0; k < ALLOC_KINDS; k++)
        if (p < g.arenas[k].end && g.arenas[k].base < p + n)
            return true;
    return false;
}

/* First fit between the live allocations of the arena, one unmapped guard page after each. */
static uintptr_t arena_place(const struct arena *a, size_t pages)
{
    size_t guard = page_round_up(1);
    uintptr_t cursor = a->base;
    /* a->base - 1: the first allocation may sit at the arena's base. */
    for (size_t i = alloc_upper_bound(a->base - 1);
         i < g.nallocs && in_arena(a, g.allocs[i].base); i++) {
        /* An allocation may sit closer than a guard page after the one before it (it took a
         * hole freed in between): the cursor is then already past its start. */
        if (g.allocs[i].base >= cursor && g.allocs[i].base - cursor >= pages)
            return cursor;
        uintptr_t after = g.allocs[i].base + page_round_up(g.allocs[i].size) + guard;
        if (after > cursor)
            cursor = after;
    }
    return cursor <= a->end && a->end - cursor >= pages ? cursor : 0;
}

/* NULL when [p, p + n) can be a copy operand, else why not. Memory outside the arenas is
 * pageable host memory. */
static const char *range_problem(uintptr_t p, size_t n, char *buf, size_t len)
{
    if (p == 0)
        return "is a null pointer";
    if (n > UINTPTR_MAX - p)
        return "wraps around the address space";
    const struct alloc *a = alloc_containing(p);
    if (a != NULL) {
        if (n <= a->base + a->size - p)
            return NULL;
        snprintf(buf, len, "crosses the end of its %s allocation (%zu bytes at offset %zu)",
                 alloc_kind_names[a->kind], a->size, (size_t)(p - a->base));
        return buf;
    }
    if (overlaps_arenas(p, 1))
        return "is not in a live allocation (freed, or past the end of one)";
    if (overlaps_arenas(p, n))
        return "starts in pageable memory and runs into fake CUDA memory";
    return NULL;
}

/* Room for one more allocation in the table. */
static CUresult alloc_table_room(void)
{
    if (g.nallocs < g.allocs_cap)
        return CUDA_SUCCESS;
    size_t cap = g.allocs_cap == 0 ? 64 : 2 * g.allocs_cap;
    struct alloc *allocs = realloc(g.allocs, cap * sizeof *allocs);
    if (allocs == NULL)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "no memory for the allocation table");
    g.allocs = allocs;
    g.allocs_cap = cap;
    return CUDA_SUCCESS;
}

static CUresult alloc_new(size_t size, enum alloc_kind kind, struct CUctx_st *ctx, void **out)
{
    if (size == 0)
        return fail(CUDA_ERROR_INVALID_VALUE, "zero-byte allocation");
    struct arena *arena = &g.arenas[kind];
    if (!arena_ready(arena))
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "cannot reserve address space for %s memory",
                    alloc_kind_names[kind]);
    if (size > (size_t)(arena->end - arena->base))
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "%zu bytes is more than the fake has", size);
    CUresult room = alloc_table_room();
    if (room != CUDA_SUCCESS)
        return room;
    size_t pages = page_round_up(size);
    uintptr_t base = arena_place(arena, pages);
    if (base == 0 || mprotect((void *)base, pages, PROT_READ | PROT_WRITE) != 0)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of %s memory", size,
                    alloc_kind_names[kind]);
    poison((unsigned char *)base, pages);
    size_t i = alloc_upper_bound(base);
    memmove(&g.allocs[i + 1], &g.allocs[i], (g.nallocs - i) * sizeof *g.allocs);
    g.allocs[i] = (struct alloc){.base = base, .size = size, .kind = kind, .ctx = ctx};
    g.nallocs++;
    *out = (void *)base;
    return CUDA_SUCCESS;
}

/* Mapping fresh PROT_NONE pages over the block returns its memory and makes later use fault;
 * registered pages are the program's and stay as they are. */
static void alloc_remove(struct alloc *a)
{
    if (!a->registered &&
        mmap((void *)a->base, page_round_up(a->size), PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
        die("cannot release %zu bytes at %p", a->size, (void *)a->base);
    size_t i = (size_t)(a - g.allocs);
    memmove(a, a + 1, (g.nallocs - i - 1) * sizeof *a);
    g.nallocs--;
}

static CUresult alloc_free(uintptr_t p, bool host_api)
{
    struct alloc *a = alloc_containing(p);
    if (a == NULL || a->base != p)
        return fail(CUDA_ERROR_INVALID_VALUE, "%p is not the start of a live allocation",
                    (void *)p);
    if (host_api != (a->kind == ALLOC_HOST))
        return fail(CUDA_ERROR_INVALID_VALUE, "%p is %s memory", (void *)p,
                    alloc_kind_names[a->kind]);
    if (a->registered)
        return fail(CUDA_ERROR_INVALID_VALUE, "%p is registered memory, not the driver's",
                    (void *)p);
    /* The real frees may synchronize; pending copies may still use this memory. */
    run_everything();
    alloc_remove(a);
    return CUDA_SUCCESS;
}

/* The last release of a primary context destroys what was created in it. */
static void context_destroy_resources(struct CUctx_st *ctx)
{
    run_everything();
    struct CUstream_st *s = g.streams;
    while (s != NULL) {
        struct CUstream_st *next = s->next;
        if (s->ctx == ctx) {
            stream_free(s);
            g.stats.resources_reclaimed++;
        }
        s = next;
    }
    for (size_t i = g.nallocs; i-- > 0;) {
        if (g.allocs[i].ctx == ctx && !g.allocs[i].portable) {
            alloc_remove(&g.allocs[i]);
            g.stats.resources_reclaimed++;
        }
    }
}

/* Unloading the driver ends its process-like lifetime: everything it still holds goes, so that
 * a test that dlcloses the last handle leaves no leak reports behind. */
__attribute__((destructor)) static void unload(void)
{
    pthread_mutex_lock(&g.lock);
    while (g.streams != NULL) {
        struct CUstream_st *s = g.streams;
        g.streams = s->next;
        stream_discard(s);
        free(s->ops);
        free(s);
    }
    for (int i = 0; i < FAKE_CUDA_MAX_DEVICES; i++) {
        stream_discard(&g.ctx[i].legacy);
        free(g.ctx[i].legacy.ops);
    }
    for (int k = 0; k < ALLOC_KINDS; k++)
        if (g.arenas[k].end != g.arenas[k].base)
            munmap((void *)g.arenas[k].base, g.arenas[k].end - g.arenas[k].base);
    free(g.allocs);
    pthread_mutex_unlock(&g.lock);
}

/* ---------------------------------------------------------------------------------------------
 * Initialization, version, errors, devices.
 */

static CUresult CUDAAPI fake_cuInit(unsigned int flags)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuInit, &r))
        goto out;
    if (flags != 0) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "flags must be 0, got %u", flags);
    } else if (g.cfg.init_result != CUDA_SUCCESS) {
        r = fail(g.cfg.init_result, "configured to fail");
    } else {
        g.initialized = true;
        r = CUDA_SUCCESS;
    }
out:
    unlock();
    return r;
}

/* Like the real one, usable before cuInit. */
static CUresult CUDAAPI fake_cuDriverGetVersion(int *version)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDriverGetVersion, &r))
        goto out;
    if (version == NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "driverVersion is NULL");
    } else {
        *version = g.cfg.driver_version;
        r = CUDA_SUCCESS;
    }
out:
    unlock();
    return r;
}

#define FAKE_ERRORS(X)                                                                        \
    X(CUDA_SUCCESS, "no error")                                                               \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                           \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                              \
    X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                     \
    X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                       \
    X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                             \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                    \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                   \
    X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current")                          \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                   \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                         \
    X(CUDA_ERROR_NOT_READY, "device not ready")                                               \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                 \
    X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                 \
    X(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered")                    \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                                \
    X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access is not enabled")                       \
    X(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS")    \
    X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,                                                      \
      "system has unsupported display driver / cuda driver combination")                      \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                    \
    X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                                    \
    X(CUDA_ERROR_UNKNOWN, "unknown error")

/* Returns the name or the message of a known code; usable before cuInit. */
static CUresult error_text(CUresult error, const char **out, bool name)
{
    if (out == NULL)
        return fail(CUDA_ERROR_INVALID_VALUE, "pStr is NULL");
    switch (error) {
#define FAKE_ERROR_CASE(code, message) \
    case code:                         \
        *out = name ? #code : message; \
        return CUDA_SUCCESS;
        FAKE_ERRORS(FAKE_ERROR_CASE)
#undef FAKE_ERROR_CASE
    default:
        *out = NULL;
        return fail(CUDA_ERROR_INVALID_VALUE, "unknown CUresult %d", (int)error);
    }
}

static CUresult CUDAAPI fake_cuGetErrorString(CUresult error, const char **str)
{
    CUresult r;
    if (!begin_call(FAKE_EP_cuGetErrorString, &r))
        r = error_text(error, str, false);
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuGetErrorName(CUresult error, const char **str)
{
    CUresult r;
    if (!begin_call(FAKE_EP_cuGetErrorName, &r))
        r = error_text(error, str, true);
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuDeviceGetCount(int *count)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDeviceGetCount, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (count == NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "count is NULL");
    } else {
        *count = g.cfg.device_count;
    }
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDeviceGet, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (device == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "device is NULL");
    else if ((r = require_device(ordinal)) == CUDA_SUCCESS)
        *device = ordinal;
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDeviceGetName, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (name == NULL || len <= 0)
        r = fail(CUDA_ERROR_INVALID_VALUE, "name is NULL or len %d is not positive", len);
    else if ((r = require_device(dev)) == CUDA_SUCCESS)
        snprintf(name, (size_t)len, "Fake CUDA Device %d", dev);
out:
    unlock();
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Contexts.
 */

static CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDevicePrimaryCtxRetain, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (pctx == NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "pctx is NULL");
    } else if ((r = require_device(dev)) == CUDA_SUCCESS) {
        g.ctx[dev].refcount++;
        *pctx = &g.ctx[dev];
    }
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDevicePrimaryCtxRelease, &r) || (r = require_init()) != CUDA_SUCCESS ||
        (r = require_device(dev)) != CUDA_SUCCESS)
        goto out;
    if (g.ctx[dev].refcount == 0) {
        r = fail(CUDA_ERROR_INVALID_CONTEXT, "primary context of device %d is not retained", dev);
    } else if (--g.ctx[dev].refcount == 0) {
        context_destroy_resources(&g.ctx[dev]);
        memset(g.ctx[dev].peer, 0, sizeof(g.ctx[dev].peer));
    }
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
                                                       int *active)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDevicePrimaryCtxGetState, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (flags == NULL || active == NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "flags or active is NULL");
    } else if ((r = require_device(dev)) == CUDA_SUCCESS) {
        *flags = g.cfg.primary_flags;
        *active = g.ctx[dev].refcount > 0;
    }
out:
    unlock();
    return r;
}

/* Every pair of distinct devices can reach each other unless FAKE_CUDA_NO_PEER_ACCESS is set. */
static CUresult CUDAAPI fake_cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuDeviceCanAccessPeer, &r) || (r = require_init()) != CUDA_SUCCESS ||
        (r = require_device(dev)) != CUDA_SUCCESS || (r = require_device(peer)) != CUDA_SUCCESS)
        goto out;
    if (can == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "canAccessPeer is NULL");
    else
        *can = dev != peer && !g.cfg.no_peer_access;
out:
    unlock();
    return r;
}

static struct CUctx_st *known_context(CUcontext ctx);

static CUresult CUDAAPI fake_cuCtxEnablePeerAccess(CUcontext peer_ctx, unsigned int flags)
{
    CUresult r;
    struct CUctx_st *ctx = NULL, *peer = NULL;
    if (begin_call(FAKE_EP_cuCtxEnablePeerAccess, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (flags != 0)
        r = fail(CUDA_ERROR_INVALID_VALUE, "flags %u must be 0", flags);
    else if ((peer = known_context(peer_ctx)) == NULL || peer->refcount == 0)
        r = fail(CUDA_ERROR_INVALID_CONTEXT, "peer context %p is not a live context",
                 (void *)peer_ctx);
    else if (peer == ctx || g.cfg.no_peer_access)
        r = fail(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "device %d cannot reach device %d",
                 ctx->ordinal, peer->ordinal);
    else if (ctx->peer[peer->ordinal])
        r = fail(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "device %d already reaches device %d",
                 ctx->ordinal, peer->ordinal);
    else {
        ctx->peer[peer->ordinal] = true;
        g.stats.peer_enables++;
    }
out:
    unlock();
    return r;
}

static struct CUctx_st *known_context(CUcontext ctx)
{
    for (int i = 0; i < g.cfg.device_count; i++)
        if (ctx == &g.ctx[i])
            return &g.ctx[i];
    return NULL;
}

static CUresult CUDAAPI fake_cuCtxPushCurrent(CUcontext ctx)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuCtxPushCurrent, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    struct CUctx_st *c = known_context(ctx);
    if (c == NULL || c->refcount == 0)
        r = fail(CUDA_ERROR_INVALID_CONTEXT, "%p is not a retained primary context", (void *)ctx);
    else if (tls_ctx_depth == CTX_STACK_MAX)
        r = fail(CUDA_ERROR_OUT_OF_MEMORY, "context stack deeper than %d", CTX_STACK_MAX);
    else
        tls_ctx_stack[tls_ctx_depth++] = c;
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuCtxGetCurrent, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (pctx == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "pctx is NULL");
    else
        *pctx = tls_ctx_depth > 0 ? tls_ctx_stack[tls_ctx_depth - 1] : NULL;
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuCtxPopCurrent(CUcontext *pctx)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuCtxPopCurrent, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (tls_ctx_depth == 0) {
        r = fail(CUDA_ERROR_INVALID_CONTEXT, "the context stack of this thread is empty");
    } else {
        struct CUctx_st *c = tls_ctx_stack[--tls_ctx_depth];
        if (pctx != NULL)
            *pctx = c;
    }
out:
    unlock();
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Streams.
 */

static CUresult CUDAAPI fake_cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    if (begin_call(FAKE_EP_cuStreamCreate, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (phStream == NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "phStream is NULL");
    } else if (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "unknown stream flags 0x%x", flags);
    } else {
        struct CUstream_st *s = calloc(1, sizeof *s);
        if (s == NULL) {
            r = fail(CUDA_ERROR_OUT_OF_MEMORY, "no memory for a stream");
            goto out;
        }
        s->ctx = ctx;
        s->flags = flags;
        s->next = g.streams;
        g.streams = s;
        *phStream = s;
    }
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuStreamDestroy(CUstream h)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (begin_call(FAKE_EP_cuStreamDestroy, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS ||
        (r = user_stream(h, &s)) != CUDA_SUCCESS)
        goto out;
    /* The real driver finishes the pending work before it releases the stream. */
    stream_free(s);
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuStreamGetCtx(CUstream h, CUcontext *pctx)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (begin_call(FAKE_EP_cuStreamGetCtx, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (pctx == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "pctx is NULL");
    else if ((r = any_stream(h, ctx, &s)) == CUDA_SUCCESS)
        *pctx = s->ctx != NULL ? s->ctx : ctx;
out:
    unlock();
    return r;
}

/* The common start of both ways of waiting. An injected failure drops the stream's pending
 * work, as after a real fault: nothing of it may land later. */
static bool begin_wait(enum fake_ep ep, CUstream h, struct CUstream_st **s, CUresult *r)
{
    struct CUctx_st *ctx = NULL;
    if (begin_call(ep, r)) {
        struct CUstream_st *failed = find_stream(h);
        if (failed != NULL)
            stream_discard(failed);
        return false;
    }
    return (*r = require_context(&ctx)) == CUDA_SUCCESS &&
           (*r = any_stream(h, ctx, s)) == CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_cuStreamSynchronize(CUstream h)
{
    CUresult r;
    struct CUstream_st *s = NULL;
    if (begin_wait(FAKE_EP_cuStreamSynchronize, h, &s, &r))
        stream_sync(s);
    unlock();
    return r;
}

/* A stream with pending work answers "not ready" once, and that query runs the work: polling
 * loops then see both answers, and the bytes have moved when a query says the stream is done. */
static CUresult CUDAAPI fake_cuStreamQuery(CUstream h)
{
    CUresult r;
    struct CUstream_st *s = NULL;
    if (begin_wait(FAKE_EP_cuStreamQuery, h, &s, &r) && s->nops > 0) {
        /* A non-blocking stream's rectangle launch with words is seen half way first. */
        if (s->flags & CU_STREAM_NON_BLOCKING)
            stream_run_some(s, true);
        else
            stream_sync(s);
        r = CUDA_ERROR_NOT_READY;
    }
    unlock();
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Events. An event remembers the stream it was last recorded on; the fake does not keep the
 * position in the stream, so waiting for an event runs everything queued on that stream so far
 * (more than a GPU would have finished, never less: work queued before the record has always
 * run when the event reports complete). A query of a stream with pending work answers "not
 * ready" once and runs the work, as cuStreamQuery does.
 */

struct CUevent_st {
    struct CUstream_st *stream; /* NULL: never recorded, or its stream is gone */
    struct CUevent_st *next;    /* registry of live events, which validates handles */
};

static struct CUevent_st *live_events;

static struct CUevent_st *find_event(CUevent h)
{
    for (struct CUevent_st *e = live_events; e != NULL; e = e->next)
        if (e == h)
            return e;
    return NULL;
}

/* Whether s is a live user stream or a context's legacy stream (a destroyed stream's work
 * has all run). */
static bool stream_alive(const struct CUstream_st *s)
{
    if (s == NULL)
        return false;
    for (int i = 0; i < FAKE_CUDA_MAX_DEVICES; i++)
        if (s == &g.ctx[i].legacy)
            return true;
    return find_stream((CUstream)(uintptr_t)s) != NULL;
}

static CUresult CUDAAPI fake_cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    if (begin_call(FAKE_EP_cuEventCreate, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (phEvent == NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "phEvent is NULL");
    } else if (flags & ~(unsigned int)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "unknown event flags 0x%x", flags);
    } else {
        struct CUevent_st *e = calloc(1, sizeof *e);
        if (e == NULL) {
            r = fail(CUDA_ERROR_OUT_OF_MEMORY, "no memory for an event");
            goto out;
        }
        e->next = live_events;
        live_events = e;
        *phEvent = e;
    }
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuEventRecord(CUevent h, CUstream stream)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    struct CUevent_st *e = NULL;
    if (begin_call(FAKE_EP_cuEventRecord, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS ||
        (r = any_stream(stream, ctx, &s)) != CUDA_SUCCESS)
        goto out;
    if ((e = find_event(h)) == NULL)
        r = fail(CUDA_ERROR_INVALID_HANDLE, "event %p is not a live event", (void *)h);
    else
        e->stream = s;
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuEventQuery(CUevent h)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    struct CUevent_st *e = NULL;
    if (begin_call(FAKE_EP_cuEventQuery, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if ((e = find_event(h)) == NULL) {
        r = fail(CUDA_ERROR_INVALID_HANDLE, "event %p is not a live event", (void *)h);
    } else if (stream_alive(e->stream) && e->stream->nops > 0) {
        stream_sync(e->stream);
        r = CUDA_ERROR_NOT_READY;
    }
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuEventDestroy(CUevent h)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    if (begin_call(FAKE_EP_cuEventDestroy, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    struct CUevent_st **p = &live_events;
    while (*p != NULL && *p != h)
        p = &(*p)->next;
    if (*p == NULL) {
        r = fail(CUDA_ERROR_INVALID_HANDLE, "event %p is not a live event", (void *)h);
    } else {
        struct CUevent_st *e = *p;
        *p = e->next;
        free(e);
    }
out:
    unlock();
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Modules and the one kernel the fake runs (plugin/cuda/kernels/copy_pieces.cu).
 */

static CUresult CUDAAPI fake_cuModuleLoadData(CUmodule *module, const void *image)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    if (begin_call(FAKE_EP_cuModuleLoadData, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (module == NULL || image == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "module or image is NULL");
    else if (strstr((const char *)image, ".entry ob_copy_pieces(") == NULL)
        r = fail(CUDA_ERROR_INVALID_IMAGE, "the image is not the library's copy-kernel PTX");
    else {
        copy_modules[ctx->ordinal].ordinal = ctx->ordinal;
        copy_modules[ctx->ordinal].loaded++;
        *module = &copy_modules[ctx->ordinal];
    }
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuModuleUnload(CUmodule module)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuModuleUnload, &r))
        goto out;
    if (module == NULL || module < copy_modules || module >= copy_modules + FAKE_CUDA_MAX_DEVICES ||
        module->loaded == 0)
        r = fail(CUDA_ERROR_INVALID_HANDLE, "module %p is not loaded", (void *)module);
    else
        module->loaded--;
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuModuleGetFunction(CUfunction *function, CUmodule module,
                                                 const char *name)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuModuleGetFunction, &r))
        goto out;
    if (function == NULL || name == NULL || module == NULL || module < copy_modules ||
        module >= copy_modules + FAKE_CUDA_MAX_DEVICES)
        r = fail(CUDA_ERROR_INVALID_VALUE, "bad function, module or name");
    else if (strcmp(name, OB_COPY_RECT_KERNEL) == 0) {
        rect_functions[module->ordinal].ordinal = module->ordinal;
        *function = &rect_functions[module->ordinal];
        r = CUDA_SUCCESS;
    } else if (strcmp(name, OB_COPY_INLINE_KERNEL) == 0) {
        inline_functions[module->ordinal].ordinal = module->ordinal;
        *function = &inline_functions[module->ordinal];
        r = CUDA_SUCCESS;
    } else if (strcmp(name, "ob_copy_pieces") != 0)
        r = fail(CUDA_ERROR_NOT_FOUND, "no function %s in the module", name);
    else {
        copy_functions[module->ordinal].ordinal = module->ordinal;
        *function = &copy_functions[module->ordinal];
        r = CUDA_SUCCESS;
    }
out:
    unlock();
    return r;
}

/* The value lands when the stream reaches it, after everything queued before it; the word
 * must be 4-byte aligned in memory the GPU reaches (device memory or pinned host memory). */
static CUresult CUDAAPI fake_cuStreamWriteValue32(CUstream h, CUdeviceptr addr, cuuint32_t value,
                                                  unsigned int flags)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (begin_call(FAKE_EP_cuStreamWriteValue32, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS ||
        (r = any_stream(h, ctx, &s)) != CUDA_SUCCESS)
        goto out;
    const struct alloc *a = alloc_containing((uintptr_t)addr);
    if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        r = fail(CUDA_ERROR_INVALID_VALUE, "flags %#x", flags);
    else if (addr % 4 != 0 || a == NULL || a->kind == ALLOC_MANAGED ||
             (uintptr_t)addr + 4 > a->base + a->size)
        r = fail(CUDA_ERROR_INVALID_VALUE, "%#lx is not an aligned word of device or pinned memory",
                 (unsigned long)addr);
    else if ((r = queue_reserve(s, 1)) == CUDA_SUCCESS) {
        struct op *op = &s->ops[s->nops++];
        memset(op, 0, sizeof *op);
        op->is_write_value = true;
        op->dst = (unsigned char *)(uintptr_t)addr;
        op->value = value;
    }
out:
    unlock();
    return r;
}

/* Parameters as copy_pieces.cu declares them: (const ob_piece *pieces, unsigned int count),
 * (ob_inline_pieces table) or (ob_rect_piece piece), by value. */
static CUresult CUDAAPI fake_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                            unsigned int gz, unsigned int bx, unsigned int by,
                                            unsigned int bz, unsigned int shared, CUstream h,
                                            void **params, void **extra)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (begin_call(FAKE_EP_cuLaunchKernel, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS ||
        (r = any_stream(h, ctx, &s)) != CUDA_SUCCESS)
        goto out;
    bool rect = f >= rect_functions && f < rect_functions + FAKE_CUDA_MAX_DEVICES;
    bool inline_table = f >= inline_functions && f < inline_functions + FAKE_CUDA_MAX_DEVICES;
    if (f == NULL || (!rect && !inline_table &&
                      (f < copy_functions || f >= copy_functions + FAKE_CUDA_MAX_DEVICES)))
        r = fail(CUDA_ERROR_INVALID_HANDLE, "unknown function");
    else if (f->ordinal != ctx->ordinal)
        r = fail(CUDA_ERROR_INVALID_HANDLE,
                 "a function of device %d's module launched in device %d's context",
                 f->ordinal, ctx->ordinal);
    else if (gx == 0 || gy != 1 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1)
        r = fail(CUDA_ERROR_INVALID_VALUE, "grid %ux%ux%u, block %ux%ux%u", gx, gy, gz, bx, by, bz);
    else if (params == NULL || extra != NULL || shared != 0)
        r = fail(CUDA_ERROR_INVALID_VALUE, "kernel parameters must come in kernelParams");
    else if ((r = queue_reserve(s, 1)) == CUDA_SUCCESS) {
        struct op *op = &s->ops[s->nops++];
        memset(op, 0, sizeof *op);
        if (rect) {
            op->is_rect = true;
            memcpy(&op->rect, params[0], sizeof op->rect); /* by value, as the launch does */
            op->block = bx;
        } else if (inline_table) {
            op->is_inline = true;
            memcpy(&op->inline_table, params[0], sizeof op->inline_table);
            op->grid = gx;
            if (op->inline_table.count == 0 || op->inline_table.count > OB_INLINE_PIECES)
                die("ob_copy_pieces_inline: %lu pieces",
                    (unsigned long)op->inline_table.count);
        } else {
            op->pieces = (const uint64_t *)(uintptr_t)*(CUdeviceptr *)params[0];
            op->piece_count = *(unsigned int *)params[1];
        }
        /* A launch counts as one copy; its pieces' bytes count when it runs. */
        g.stats.copies_enqueued++;
        g.stats.kernels_launched++;
    }
out:
    unlock();
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Memory.
 */

static CUresult CUDAAPI fake_cuMemAlloc(CUdeviceptr *dptr, size_t size)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    void *p;
    if (begin_call(FAKE_EP_cuMemAlloc, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (dptr == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "dptr is NULL");
    else if ((r = alloc_new(size, ALLOC_DEVICE, ctx, &p)) == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuMemAllocHost(void **pp, size_t size)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    if (begin_call(FAKE_EP_cuMemAllocHost, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (pp == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "pp is NULL");
    else
        r = alloc_new(size, ALLOC_HOST, ctx, pp);
out:
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    void *p;
    if (begin_call(FAKE_EP_cuMemAllocManaged, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    if (dptr == NULL)
        r = fail(CUDA_ERROR_INVALID_VALUE, "dptr is NULL");
    else if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        r = fail(CUDA_ERROR_INVALID_VALUE, "flags 0x%x is not ATTACH_GLOBAL or ATTACH_HOST", flags);
    else if ((r = alloc_new(size, ALLOC_MANAGED, ctx, &p)) == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
out:
    unlock();
    return r;
}

/* Frees need no current context: under unified addressing the pointer names its own. */
static CUresult CUDAAPI fake_cuMemFree(CUdeviceptr dptr)
{
    CUresult r;
    if (!begin_call(FAKE_EP_cuMemFree, &r) && (r = require_init()) == CUDA_SUCCESS)
        r = alloc_free((uintptr_t)dptr, false);
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuMemFreeHost(void *p)
{
    CUresult r;
    if (!begin_call(FAKE_EP_cuMemFreeHost, &r) && (r = require_init()) == CUDA_SUCCESS)
        r = alloc_free((uintptr_t)p, true);
    unlock();
    return r;
}

/* Pageable memory becomes pinned host memory in place. Flags as the real driver's; a portable
 * registration outlives the context that made it. A range that
 * overlaps memory the driver already knows (an allocation of its own or another registration)
 * is refused as the real driver refuses it. */
static CUresult CUDAAPI fake_cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                               CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (begin_call(FAKE_EP_cuMemHostRegister, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    uintptr_t base = (uintptr_t)p;
    if (p == NULL || size == 0 || size > UINTPTR_MAX - base) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "range %p + %zu cannot be registered", p, size);
        goto out;
    }
    if ((flags & ~known) != 0) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "unknown registration flags 0x%x", flags);
        goto out;
    }
    size_t below_end = alloc_upper_bound(base + size - 1);
    if (overlaps_arenas(base, size) ||
        (below_end > 0 && g.allocs[below_end - 1].base + g.allocs[below_end - 1].size > base)) {
        r = fail(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                 "range %p + %zu overlaps memory the driver already knows", p, size);
        goto out;
    }
    if ((r = alloc_table_room()) != CUDA_SUCCESS)
        goto out;
    memmove(&g.allocs[below_end + 1], &g.allocs[below_end],
            (g.nallocs - below_end) * sizeof *g.allocs);
    g.allocs[below_end] = (struct alloc){.base = base,
                                         .size = size,
                                         .kind = ALLOC_HOST,
                                         .ctx = ctx,
                                         .registered = true,
                                         .portable = (flags & CU_MEMHOSTREGISTER_PORTABLE) != 0};
    g.nallocs++;
out:
    unlock();
    return r;
}

/* Pending copies may still use the pages: they finish first, as a real unregistration waits. */
static CUresult CUDAAPI fake_cuMemHostUnregister(void *p)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    if (begin_call(FAKE_EP_cuMemHostUnregister, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS)
        goto out;
    struct alloc *a = alloc_containing((uintptr_t)p);
    if (a == NULL || !a->registered || a->base != (uintptr_t)p) {
        r = fail(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "%p does not start a registered range",
                 p);
        goto out;
    }
    run_everything();
    alloc_remove(a);
out:
    unlock();
    return r;
}

/* Runs on the legacy stream, after the context's pending work, and completes before it returns:
 * tests use it to initialise device memory. */
static CUresult CUDAAPI fake_cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    char why[160];
    if (begin_call(FAKE_EP_cuMemsetD8, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS ||
        n == 0)
        goto out;
    const char *problem = range_problem((uintptr_t)dst, n, why, sizeof why);
    if (problem == NULL && alloc_containing((uintptr_t)dst) == NULL)
        problem = "is not CUDA memory";
    if (problem != NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "destination %p + %zu %s", (void *)(uintptr_t)dst, n,
                 problem);
        goto out;
    }
    stream_sync(&ctx->legacy);
    memset((void *)(uintptr_t)dst, value, n);
out:
    unlock();
    return r;
}

/* Writes one attribute of ptr. Validated by the caller, so it cannot fail. */
static void pointer_attribute(CUpointer_attribute attr, void *data, const struct alloc *a,
                              uintptr_t ptr)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a ? a->ctx : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        /* Managed memory reports DEVICE, as the real driver does. */
        *(unsigned int *)data = a == NULL                ? 0u
                                : a->kind == ALLOC_HOST ? (unsigned int)CU_MEMORYTYPE_HOST
                                                        : (unsigned int)CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        /* Pinned memory is mapped at the same address under unified addressing. */
        *(CUdeviceptr *)data = a ? (CUdeviceptr)ptr : 0;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data = a && a->kind != ALLOC_DEVICE ? (void *)ptr : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = a && a->kind == ALLOC_MANAGED;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a ? a->ctx->ordinal : CU_DEVICE_INVALID;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = a ? (CUdeviceptr)a->base : 0;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a ? a->size : 0;
        break;
    default:
        break;
    }
}

static bool pointer_attribute_supported(CUpointer_attribute attr)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        return true;
    default:
        return false;
    }
}

/* Never fails for memory the driver does not know: it gets the default values, as documented
 * ("default NULL values"); the device ordinal of such memory is CU_DEVICE_INVALID (-2). */
static CUresult CUDAAPI fake_cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs,
                                                    void **data, CUdeviceptr ptr)
{
    CUresult r;
    if (begin_call(FAKE_EP_cuPointerGetAttributes, &r) || (r = require_init()) != CUDA_SUCCESS)
        goto out;
    if (n == 0 || attrs == NULL || data == NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "no attributes to query");
        goto out;
    }
    for (unsigned int i = 0; i < n; i++) {
        if (!pointer_attribute_supported(attrs[i]) || data[i] == NULL) {
            r = fail(CUDA_ERROR_INVALID_VALUE, "attribute %u (%d) is unsupported or has no data",
                     i, (int)attrs[i]);
            goto out;
        }
    }
    const struct alloc *a = alloc_containing((uintptr_t)ptr);
    for (unsigned int i = 0; i < n; i++)
        pointer_attribute(attrs[i], data[i], a, (uintptr_t)ptr);
out:
    unlock();
    return r;
}

static void note_stream_context(const struct CUstream_st *s, const struct CUctx_st *ctx,
                                size_t copies)
{
    if (s->ctx != ctx)
        g.stats.stream_context_mismatches += copies;
}

static CUresult CUDAAPI fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                           CUstream h)
{
    CUresult r;
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    char why[160];
    const char *problem;
    if (begin_call(FAKE_EP_cuMemcpyAsync, &r) || (r = require_context(&ctx)) != CUDA_SUCCESS ||
        (r = any_stream(h, ctx, &s)) != CUDA_SUCCESS || n == 0)
        goto out;
    if ((problem = range_problem((uintptr_t)dst, n, why, sizeof why)) != NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "destination %p + %zu %s", (void *)(uintptr_t)dst, n,
                 problem);
        goto out;
    }
    if ((problem = range_problem((uintptr_t)src, n, why, sizeof why)) != NULL) {
        r = fail(CUDA_ERROR_INVALID_VALUE, "source %p + %zu %s", (void *)(uintptr_t)src, n,
                 problem);
        goto out;
    }
    if ((r = queue_reserve(s, 1)) != CUDA_SUCCESS)
        goto out;
    s->ops[s->nops++] = (struct op){
        .dst = (unsigned char *)(uintptr_t)dst,
        .src = (const unsigned char *)(uintptr_t)src,
        .size = n,
    };
    g.stats.copies_enqueued++;
    if (is_builtin_stream(h))
        g.stats.legacy_stream_copies++;
    note_stream_context(s, ctx, 1);
out:
    unlock();
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * cuMemcpyBatchAsync, both forms.
 */

struct batch_call {
    int form;
    CUdeviceptr *dsts;
    CUdeviceptr *srcs;
    size_t *sizes;
    size_t count;
    CUmemcpyAttributes *attrs;
    size_t *attrs_idxs;
    size_t num_attrs;
    CUstream stream;
    bool fail_idx_given;
};

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static struct fake_cuda_batch_record *record_batch(const struct batch_call *c)
{
    struct fake_cuda_batch_record *rec = &g.batches[g.nbatches++ % FAKE_CUDA_BATCH_HISTORY];
    memset(rec, 0, sizeof *rec);
    rec->form = c->form;
    rec->stream = c->stream;
    rec->count = c->count;
    rec->num_attrs = c->num_attrs;
    size_t ncopies = min_size(c->count, FAKE_CUDA_RECORD_MAX_COPIES);
    size_t nattrs = min_size(c->num_attrs, FAKE_CUDA_RECORD_MAX_ATTRS);
    if (c->dsts != NULL)
        memcpy(rec->dsts, c->dsts, ncopies * sizeof *c->dsts);
    if (c->srcs != NULL)
        memcpy(rec->srcs, c->srcs, ncopies * sizeof *c->srcs);
    if (c->sizes != NULL) {
        memcpy(rec->sizes, c->sizes, ncopies * sizeof *c->sizes);
        for (size_t i = 0; i < c->count; i++)
            rec->total_bytes += c->sizes[i];
    }
    if (c->attrs != NULL)
        memcpy(rec->attrs, c->attrs, nattrs * sizeof *c->attrs);
    if (c->attrs_idxs != NULL)
        memcpy(rec->attrs_idxs, c->attrs_idxs, nattrs * sizeof *c->attrs_idxs);
    return rec;
}

static CUresult batch_stream(CUstream h, struct CUstream_st **out)
{
    if (is_builtin_stream(h))
        return fail(CUDA_ERROR_INVALID_VALUE, "stream %p is a built-in stream; batches need a "
                    "created stream", (void *)h);
    return user_stream(h, out);
}

static CUresult check_location_hint(const CUmemLocation *loc, size_t k, const char *which)
{
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_INVALID:
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (loc->id >= 0 && loc->id < g.cfg.device_count)
            return CUDA_SUCCESS;
        return fail(CUDA_ERROR_INVALID_VALUE, "attrs[%zu].%s names device %d", k, which,
                    loc->id);
    default:
        return fail(CUDA_ERROR_INVALID_VALUE, "attrs[%zu].%s has location type %d", k, which,
                    (int)loc->type);
    }
}

static CUresult check_attr(const CUmemcpyAttributes *a, size_t k)
{
    switch (a->srcAccessOrder) {
    case CU_MEMCPY_SRC_ACCESS_ORDER_STREAM:
    case CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL:
    case CU_MEMCPY_SRC_ACCESS_ORDER_ANY:
        break;
    default:
        return fail(CUDA_ERROR_INVALID_VALUE, "attrs[%zu].srcAccessOrder is %d", k,
                    (int)a->srcAccessOrder);
    }
    if (a->flags & ~(unsigned int)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE)
        return fail(CUDA_ERROR_INVALID_VALUE, "attrs[%zu].flags is 0x%x", k, a->flags);
    CUresult r = check_location_hint(&a->srcLocHint, k, "srcLocHint");
    return r != CUDA_SUCCESS ? r : check_location_hint(&a->dstLocHint, k, "dstLocHint");
}

/* The checks that concern the call as a whole; the v12080 form reports no copy index for them. */
static CUresult check_batch_shape(const struct batch_call *c)
{
    if (c->count == 0)
        return fail(CUDA_ERROR_INVALID_VALUE, "count is 0");
    if (c->dsts == NULL || c->srcs == NULL || c->sizes == NULL || c->attrs == NULL ||
        c->attrs_idxs == NULL)
        return fail(CUDA_ERROR_INVALID_VALUE, "an array argument is NULL");
    if (c->num_attrs == 0 || c->num_attrs > c->count)
        return fail(CUDA_ERROR_INVALID_VALUE, "numAttrs %zu is not in [1, count %zu]",
                    c->num_attrs, c->count);
    if (c->attrs_idxs[0] != 0)
        return fail(CUDA_ERROR_INVALID_VALUE, "attrsIdxs[0] is %zu, not 0", c->attrs_idxs[0]);
    for (size_t k = 1; k < c->num_attrs; k++)
        if (c->attrs_idxs[k] <= c->attrs_idxs[k - 1])
            return fail(CUDA_ERROR_INVALID_VALUE, "attrsIdxs[%zu] = %zu is not above %zu", k,
                        c->attrs_idxs[k], c->attrs_idxs[k - 1]);
    if (c->attrs_idxs[c->num_attrs - 1] >= c->count)
        return fail(CUDA_ERROR_INVALID_VALUE, "attrsIdxs[%zu] = %zu is not below count %zu",
                    c->num_attrs - 1, c->attrs_idxs[c->num_attrs - 1], c->count);
    for (size_t k = 0; k < c->num_attrs; k++) {
        CUresult r = check_attr(&c->attrs[k], k);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

static CUresult check_batch_copies(const struct batch_call *c, size_t *fail_idx)
{
    char why[160];
    const char *problem;
    for (size_t i = 0; i < c->count; i++) {
        size_t n = c->sizes[i];
        *fail_idx = i;
        /* The driver's behaviour for empty copies is not documented; the fake is strict. */
        if (n == 0)
            return fail(CUDA_ERROR_INVALID_VALUE, "copy %zu has size 0", i);
        if ((problem = range_problem((uintptr_t)c->dsts[i], n, why, sizeof why)) != NULL)
            return fail(CUDA_ERROR_INVALID_VALUE, "copy %zu: destination %p + %zu %s", i,
                        (void *)(uintptr_t)c->dsts[i], n, problem);
        if ((problem = range_problem((uintptr_t)c->srcs[i], n, why, sizeof why)) != NULL)
            return fail(CUDA_ERROR_INVALID_VALUE, "copy %zu: source %p + %zu %s", i,
                        (void *)(uintptr_t)c->srcs[i], n, problem);
    }
    *fail_idx = SIZE_MAX;
    return CUDA_SUCCESS;
}

struct span {
    uintptr_t lo, hi;
    size_t copy;
};

static int span_compare(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (x->hi > y->hi) - (x->hi < y->hi);
}

/* Sorts spans by start and fills max_hi[i] with the largest end among spans[0..i]. */
static void spans_prepare(struct span *spans, uintptr_t *max_hi, size_t n)
{
    qsort(spans, n, sizeof *spans, span_compare);
    for (size_t i = 0; i < n; i++)
        max_hi[i] = i > 0 && max_hi[i - 1] > spans[i].hi ? max_hi[i - 1] : spans[i].hi;
}

/* Whether [lo, hi) overlaps any span of a set prepared by spans_prepare. */
static bool spans_overlap(const struct span *spans, const uintptr_t *max_hi, size_t n,
                          uintptr_t lo, uintptr_t hi)
{
    size_t a = 0, b = n; /* count of spans starting before hi */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (spans[mid].lo < hi)
            a = mid + 1;
        else
            b = mid;
    }
    return a > 0 && max_hi[a - 1] > lo;
}

/* Marks every copy whose destination overlaps another copy's destination or any source, and
 * every copy whose source overlaps any destination. O(n log n). */
static void mark_dependent(const struct batch_call *c, struct span *dst, uintptr_t *dst_max,
                           struct span *src, uintptr_t *src_max, bool *dependent)
{
    size_t n = c->count;
    for (size_t i = 0; i < n; i++) {
        dst[i] = (struct span){c->dsts[i], c->dsts[i] + c->sizes[i], i};
        src[i] = (struct span){c->srcs[i], c->srcs[i] + c->sizes[i], i};
    }
    spans_prepare(dst, dst_max, n);
    spans_prepare(src, src_max, n);
    for (size_t i = 0; i < n; i++) {
        bool after_earlier = i > 0 && dst[i].lo < dst_max[i - 1];
        bool before_later = i + 1 < n && dst[i + 1].lo < dst[i].hi;
        if (after_earlier || before_later ||
            spans_overlap(src, src_max, n, dst[i].lo, dst[i].hi))
            dependent[dst[i].copy] = true;
        if (spans_overlap(dst, dst_max, n, src[i].lo, src[i].hi))
            dependent[src[i].copy] = true;
    }
}

/* Counts dependent copies; in strict mode they fail the call, reporting the first of them. */
static CUresult check_batch_dependencies(const struct batch_call *c, size_t *fail_idx)
{
    size_t n = c->count;
    struct span *dst = malloc(n * sizeof *dst), *src = malloc(n * sizeof *src);
    uintptr_t *dst_max = malloc(n * sizeof *dst_max), *src_max = malloc(n * sizeof *src_max);
    bool *dependent = calloc(n, sizeof *dependent);
    CUresult r = CUDA_SUCCESS;
    if (dst == NULL || src == NULL || dst_max == NULL || src_max == NULL || dependent == NULL) {
        r = fail(CUDA_ERROR_OUT_OF_MEMORY, "no memory to check %zu copies", n);
        goto out;
    }
    mark_dependent(c, dst, dst_max, src, src_max, dependent);
    size_t first = SIZE_MAX, total = 0;
    for (size_t i = 0; i < n; i++) {
        if (dependent[i]) {
            total++;
            first = min_size(first, i);
        }
    }
    g.stats.dependent_copies += total;
    if (total != 0 && g.cfg.strict_dependencies) {
        *fail_idx = first;
        r = fail(CUDA_ERROR_INVALID_VALUE,
                 "%zu copies depend on each other (first: copy %zu); the driver gives no order "
                 "inside a batch", total, first);
    }
out:
    free(dst);
    free(src);
    free(dst_max);
    free(src_max);
    free(dependent);
    return r;
}

static bool reads_early(CUmemcpySrcAccessOrder order)
{
    return order == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
           (order == CU_MEMCPY_SRC_ACCESS_ORDER_ANY && g.cfg.any_reads_early);
}

static void ops_free(struct op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ops[i].snapshot);
    free(ops);
}

/* Builds the copies, reading early sources now, then queues them all or none. */
static CUresult enqueue_batch(const struct batch_call *c, struct CUstream_st *s)
{
    struct op *ops = calloc(c->count, sizeof *ops);
    if (ops == NULL)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "no memory for %zu copies", c->count);
    size_t early = 0;
    for (size_t k = 0; k < c->num_attrs; k++) {
        size_t end = k + 1 < c->num_attrs ? c->attrs_idxs[k + 1] : c->count;
        bool early_source = reads_early(c->attrs[k].srcAccessOrder);
        for (size_t i = c->attrs_idxs[k]; i < end; i++) {
            struct op *op = &ops[i];
            op->dst = (unsigned char *)(uintptr_t)c->dsts[i];
            op->src = (const unsigned char *)(uintptr_t)c->srcs[i];
            op->size = c->sizes[i];
            if (!early_source)
                continue;
            op->snapshot = malloc(op->size);
            if (op->snapshot == NULL) {
                ops_free(ops, c->count);
                return fail(CUDA_ERROR_OUT_OF_MEMORY, "no memory to read copy %zu's source", i);
            }
            memcpy(op->snapshot, op->src, op->size);
            op->src = op->snapshot;
            early++;
        }
    }
    CUresult r = queue_reserve(s, c->count);
    if (r != CUDA_SUCCESS) {
        ops_free(ops, c->count);
        return r;
    }
    /* Reverse order: nothing may rely on an order inside the batch. */
    for (size_t i = c->count; i-- > 0;)
        s->ops[s->nops++] = ops[i];
    free(ops);
    g.stats.copies_enqueued += c->count;
    g.stats.early_reads += early;
    g.stats.batch_calls_succeeded++;
    return CUDA_SUCCESS;
}

static CUresult batch_locked(const struct batch_call *c, size_t *fail_idx)
{
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    CUresult r = require_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (c->form == FORM_V12080 && !c->fail_idx_given)
        return fail(CUDA_ERROR_INVALID_VALUE, "failIdx is NULL");
    if ((r = current_context(&ctx)) != CUDA_SUCCESS ||
        (r = batch_stream(c->stream, &s)) != CUDA_SUCCESS ||
        (r = check_batch_shape(c)) != CUDA_SUCCESS ||
        (r = check_batch_copies(c, fail_idx)) != CUDA_SUCCESS ||
        (r = check_batch_dependencies(c, fail_idx)) != CUDA_SUCCESS ||
        (r = enqueue_batch(c, s)) != CUDA_SUCCESS)
        return r;
    note_stream_context(s, ctx, c->count);
    return CUDA_SUCCESS;
}

static CUresult run_batch(const struct batch_call *c, size_t *fail_idx)
{
    enum fake_ep ep = c->form == FORM_V12080 ? FAKE_EP_cuMemcpyBatchAsync_v12080
                                             : FAKE_EP_cuMemcpyBatchAsync_v13000;
    CUresult r;
    size_t injected_idx = SIZE_MAX;
    lock();
    tls_current_ep = ep;
    g.calls[ep]++;
    struct fake_cuda_batch_record *rec = record_batch(c);
    *fail_idx = SIZE_MAX;
    if (take_injection(&g.injections[ep], &r, &injected_idx) ||
        take_injection(&g.batch_injection, &r, &injected_idx)) {
        if (injected_idx < c->count)
            *fail_idx = injected_idx;
    } else {
        r = batch_locked(c, fail_idx);
    }
    rec->result = r;
    rec->fail_idx = c->form == FORM_V12080 ? *fail_idx : SIZE_MAX;
    unlock();
    return r;
}

static CUresult CUDAAPI fake_cuMemcpyBatchAsync_v12080(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                                       size_t *sizes, size_t count,
                                                       CUmemcpyAttributes *attrs,
                                                       size_t *attrsIdxs, size_t numAttrs,
                                                       size_t *failIdx, CUstream hStream)
{
    const struct batch_call call = {
        .form = FORM_V12080, .dsts = dsts, .srcs = srcs, .sizes = sizes, .count = count,
        .attrs = attrs, .attrs_idxs = attrsIdxs, .num_attrs = numAttrs, .stream = hStream,
        .fail_idx_given = failIdx != NULL,
    };
    size_t idx;
    CUresult r = run_batch(&call, &idx);
    if (failIdx != NULL)
        *failIdx = idx;
    return r;
}

static CUresult CUDAAPI fake_cuMemcpyBatchAsync_v13000(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                                       size_t *sizes, size_t count,
                                                       CUmemcpyAttributes *attrs,
                                                       size_t *attrsIdxs, size_t numAttrs,
                                                       CUstream hStream)
{
    const struct batch_call call = {
        .form = FORM_V13000, .dsts = dsts, .srcs = srcs, .sizes = sizes, .count = count,
        .attrs = attrs, .attrs_idxs = attrsIdxs, .num_attrs = numAttrs, .stream = hStream,
    };
    size_t idx;
    return run_batch(&call, &idx);
}

/* ---------------------------------------------------------------------------------------------
 * cuGetProcAddress: the symbol table comes from the same X-macro list as the library's.
 */

struct entry {
    const char *symbol;
    int version;
    enum fake_ep ep;
};

static const struct entry entries[] = {
#define FAKE_ENTRY(field, symbol, version, need) {#symbol, version, FAKE_EP_##field},
    OMPBATCH_DRIVER_ENTRY_POINTS(FAKE_ENTRY)
#undef FAKE_ENTRY
};

/* The typed assignment makes the compiler check each fake against its PFN typedef. */
static void *entry_function(enum fake_ep ep)
{
    switch (ep) {
#define FAKE_ENTRY_FUNCTION(field, symbol, version, need) \
    case FAKE_EP_##field: {                               \
        PFN_##symbol##_v##version fn = fake_##field;      \
        return (void *)fn;                                \
    }
        OMPBATCH_DRIVER_ENTRY_POINTS(FAKE_ENTRY_FUNCTION)
#undef FAKE_ENTRY_FUNCTION
    default:
        return NULL;
    }
}

static CUresult unavailable(CUdriverProcAddressQueryResult why,
                            CUdriverProcAddressQueryResult *status, const char *symbol,
                            int version)
{
    *status = why;
    CUresult r = g.cfg.unavailable_result;
    if (r == CUDA_SUCCESS)
        return CUDA_SUCCESS; /* the documented form: success with a NULL function */
    return fail(r, "%s at version %d is not served by a version %d driver (%s)", symbol, version,
                g.cfg.driver_version,
                why == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ? "symbol not found"
                                                            : "version not sufficient");
}

/* Serves the newest form of the symbol not newer than the requested version. A symbol newer
 * than the configured driver does not exist; a request above the driver's version is refused. */
static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    const cuuint64_t known_flags = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (symbol == NULL || pfn == NULL)
        return fail(CUDA_ERROR_INVALID_VALUE, "symbol or pfn is NULL");
    *pfn = NULL;
    if (flags & ~known_flags)
        return fail(CUDA_ERROR_INVALID_VALUE, "unknown flags 0x%llx", (unsigned long long)flags);
    if (version > g.cfg.driver_version)
        return unavailable(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, status, symbol, version);
    const struct entry *best = NULL;
    bool exists = false;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        const struct entry *e = &entries[i];
        if (strcmp(e->symbol, symbol) != 0 || e->version > g.cfg.driver_version)
            continue;
        exists = true;
        if (e->version <= version && (best == NULL || e->version > best->version))
            best = e;
    }
    if (best == NULL)
        return unavailable(exists ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                  : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
                           status, symbol, version);
    *pfn = entry_function(best->ep);
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                                 cuuint64_t flags,
                                                 CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult r;
    CUdriverProcAddressQueryResult status;
    if (begin_call(FAKE_EP_cuGetProcAddress, &r)) {
        if (pfn != NULL)
            *pfn = NULL;
        status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    } else {
        r = lookup(symbol, pfn, cudaVersion, flags, &status);
    }
    if (symbolStatus != NULL)
        *symbolStatus = status;
    unlock();
    return r;
}

/* cuda.h maps the name to _v2; the driver also exports the CUDA 11.3 form under the plain name. */
#undef cuGetProcAddress
FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

FAKE_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
    return fake_cuInit(Flags);
}

FAKE_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    return fake_cuDriverGetVersion(driverVersion);
}

/* ---------------------------------------------------------------------------------------------
 * The control interface.
 */

#define FAKE_CONTROL FAKE_EXPORT

FAKE_CONTROL void fake_cuda_set_driver_version(int version)
{
    lock();
    g.cfg.driver_version = version;
    unlock();
}

FAKE_CONTROL int fake_cuda_set_device_count(int count)
{
    if (count < 0 || count > FAKE_CUDA_MAX_DEVICES)
        return -1;
    lock();
    g.cfg.device_count = count;
    unlock();
    return 0;
}

FAKE_CONTROL void fake_cuda_set_init_result(CUresult result)
{
    lock();
    g.cfg.init_result = result;
    unlock();
}

FAKE_CONTROL void fake_cuda_set_strict_dependencies(int on)
{
    lock();
    g.cfg.strict_dependencies = on != 0;
    unlock();
}

FAKE_CONTROL void fake_cuda_set_unavailable_result(CUresult result)
{
    lock();
    g.cfg.unavailable_result = result;
    unlock();
}

FAKE_CONTROL void fake_cuda_set_any_reads_early(int on)
{
    lock();
    g.cfg.any_reads_early = on != 0;
    unlock();
}

FAKE_CONTROL void fake_cuda_set_rect_words(int on)
{
    lock();
    g.cfg.no_rect_words = on == 0;
    unlock();
}

FAKE_CONTROL void fake_cuda_set_done_words(int on)
{
    lock();
    g.cfg.no_done_words = on == 0;
    g.cfg.done_words_in_parts = on == 2;
    unlock();
}

FAKE_CONTROL void fake_cuda_reset_config(void)
{
    lock();
    load_config();
    unlock();
}

FAKE_CONTROL void fake_cuda_deinit(void)
{
    lock();
    g.initialized = false;
    unlock();
}

/* The injection slot for a name, or NULL. */
static struct injection *injection_slot(const char *name)
{
    if (name == NULL)
        return NULL;
    if (strcmp(name, "cuMemcpyBatchAsync") == 0)
        return &g.batch_injection;
    for (int i = 0; i < FAKE_EP_COUNT; i++)
        if (strcmp(name, ep_names[i]) == 0)
            return &g.injections[i];
    return NULL;
}

static int arm(struct injection *slot, unsigned long nth, size_t copy_index, CUresult result)
{
    if (slot == NULL || nth == 0)
        return -1;
    *slot = (struct injection){.countdown = nth, .result = result, .copy_index = copy_index};
    return 0;
}

FAKE_CONTROL int fake_cuda_inject_failure(const char *entry_point, unsigned long nth,
                                          CUresult result)
{
    lock();
    int rc = arm(injection_slot(entry_point), nth, SIZE_MAX, result);
    unlock();
    return rc;
}

FAKE_CONTROL int fake_cuda_inject_batch_failure(unsigned long nth, size_t copy_index,
                                                CUresult result)
{
    lock();
    int rc = arm(&g.batch_injection, nth, copy_index, result);
    unlock();
    return rc;
}

FAKE_CONTROL void fake_cuda_fail_next_sync(CUresult result)
{
    fake_cuda_inject_failure("cuStreamSynchronize", 1, result);
    fake_cuda_inject_failure("cuStreamQuery", 1, result);
}

FAKE_CONTROL void fake_cuda_clear_injections(void)
{
    lock();
    memset(g.injections, 0, sizeof g.injections);
    memset(&g.batch_injection, 0, sizeof g.batch_injection);
    unlock();
}

FAKE_CONTROL long long fake_cuda_call_count(const char *entry_point)
{
    long long n = -1;
    if (entry_point == NULL)
        return n;
    lock();
    if (strcmp(entry_point, "cuMemcpyBatchAsync") == 0) {
        n = (long long)(g.calls[FAKE_EP_cuMemcpyBatchAsync_v12080] +
                        g.calls[FAKE_EP_cuMemcpyBatchAsync_v13000]);
    } else {
        for (int i = 0; i < FAKE_EP_COUNT; i++)
            if (strcmp(entry_point, ep_names[i]) == 0)
                n = (long long)g.calls[i];
    }
    unlock();
    return n;
}

FAKE_CONTROL void fake_cuda_get_stats(struct fake_cuda_stats *out)
{
    lock();
    *out = g.stats;
    out->pending_copies = pending_copies();
    out->live_allocations = g.nallocs;
    out->live_streams = 0;
    for (struct CUstream_st *s = g.streams; s != NULL; s = s->next)
        out->live_streams++;
    out->live_modules = 0;
    for (int i = 0; i < FAKE_CUDA_MAX_DEVICES; i++)
        out->live_modules += (unsigned long long)copy_modules[i].loaded;
    unlock();
}

FAKE_CONTROL size_t fake_cuda_batch_record_count(void)
{
    lock();
    size_t n = g.nbatches;
    unlock();
    return n;
}

FAKE_CONTROL int fake_cuda_get_batch_record(size_t back, struct fake_cuda_batch_record *out)
{
    int rc = -1;
    lock();
    if (back < min_size(g.nbatches, FAKE_CUDA_BATCH_HISTORY)) {
        *out = g.batches[(g.nbatches - 1 - back) % FAKE_CUDA_BATCH_HISTORY];
        rc = 0;
    }
    unlock();
    return rc;
}

FAKE_CONTROL int fake_cuda_primary_ctx_refcount(int ordinal)
{
    if (ordinal < 0 || ordinal >= FAKE_CUDA_MAX_DEVICES)
        return -1;
    lock();
    int n = g.ctx[ordinal].refcount;
    unlock();
    return n;
}

FAKE_CONTROL int fake_cuda_ctx_stack_depth(void)
{
    return tls_ctx_depth;
}

FAKE_CONTROL const char *fake_cuda_last_failure(void)
{
    return tls_last_failure;
}

FAKE_CONTROL void fake_cuda_reset(void)
{
    lock();
    memset(g.calls, 0, sizeof g.calls);
    memset(g.injections, 0, sizeof g.injections);
    memset(&g.batch_injection, 0, sizeof g.batch_injection);
    memset(&g.stats, 0, sizeof g.stats);
    memset(g.batches, 0, sizeof g.batches);
    g.nbatches = 0;
    tls_last_failure[0] = '\0';
    unlock();
}
