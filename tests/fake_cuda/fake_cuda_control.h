/*
 * Control interface of the fake CUDA driver (tests/fake_cuda/libfake_cuda.so).
 *
 * The fake is loaded by the library under test like a real libcuda (dlopen, then
 * cuGetProcAddress for every entry point of plugin/cuda/driver_api.h). Test code reaches the same
 * loaded instance through fake_cuda_control_open() with the same path: dlopen of an object that
 * is already loaded returns that object, so driver and test share one state.
 *
 * What the fake models, in short (details in fake_cuda.c):
 * - Streams execute lazily. cuMemcpyAsync and cuMemcpyBatchAsync validate at call time and queue
 *   the copies; the bytes move at cuStreamSynchronize, cuStreamDestroy, cuMemFree/cuMemFreeHost
 *   (which synchronize everything, as the real ones may) or cuMemsetD8 (which runs the legacy
 *   stream and the context's blocking streams first, then sets the bytes before it returns).
 *   A caller that reads a destination before waiting sees old bytes. A cuStreamQuery of a
 *   stream with pending work runs it and answers not ready; a rectangle launch whose chunks
 *   set words (plugin/cuda/kernels.h) is run half of its remaining chunks at a time there.
 * - NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are one queue per context, accepted by
 *   cuMemcpyAsync and cuStreamSynchronize and refused by cuMemcpyBatchAsync.
 * - Sources of batch copies whose attribute says CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL are
 *   read during the call; every other source is read when the copy executes.
 * - Copies of one batch execute in reverse index order: the driver promises no order inside a
 *   batch, and reverse order makes code that relies on one fail.
 * - Copy ranges must stay inside the allocation their start pointer belongs to; unknown
 *   (pageable) memory must not run into an allocation. Batches are validated as cuda.h says,
 *   plus: empty copies and dependent copies (strict mode) are errors, and attrs' location hints
 *   must name an existing device.
 * - cuGetProcAddress serves the newest form of a listed symbol whose version is not above the
 *   requested one. Symbols newer than the driver version do not exist, and a request above the
 *   driver version is refused too (cuda.h documents CUDA_ERROR_INVALID_VALUE for that; the fake
 *   answers with the unavailable result, see FAKE_CUDA_UNAVAILABLE_RESULT).
 * - cuPointerGetAttributes reports unknown memory as type 0, not managed, device ordinal
 *   CU_DEVICE_INVALID (-2) and NULL/0 for pointers, context and range, with CUDA_SUCCESS.
 * - The last cuDevicePrimaryCtxRelease of a device destroys the streams and allocations made in
 *   that context, as the real driver does.
 * - Allocations are page-aligned and filled with a garbage pattern, never zeros. Each kind
 *   (device, pinned, managed) lives in its own reserved address range, never in the malloc heap,
 *   so a fake allocation never reuses the address of a freed malloc buffer. Host access to freed
 *   fake memory, or past the last page of an allocation, faults.
 * - Every entry point returns CUDA_ERROR_NOT_INITIALIZED before a successful cuInit, except
 *   cuDriverGetVersion, cuGetErrorString, cuGetErrorName and cuGetProcAddress, as in the real
 *   driver. Calls that use a stream or allocate need a current context
 *   (CUDA_ERROR_INVALID_CONTEXT); frees and cuPointerGetAttributes do not.
 *
 * All functions are thread-safe. Counters, recordings and injections are process-wide; the
 * context stack and fake_cuda_last_failure are per thread.
 *
 * Environment (read at first use and again by fake_cuda_reset_config):
 *   FAKE_CUDA_DRIVER_VERSION       cuDriverGetVersion value, e.g. 12040, 12080, 13000 (13000)
 *   FAKE_CUDA_DEVICE_COUNT         0..FAKE_CUDA_MAX_DEVICES (2); 0: cuInit succeeds, no devices
 *   FAKE_CUDA_INIT_RESULT          CUresult cuInit returns, e.g. 100 = CUDA_ERROR_NO_DEVICE (0)
 *   FAKE_CUDA_STRICT_DEPENDENCIES  1: batches with dependent copies fail with
 *                                  CUDA_ERROR_INVALID_VALUE; 0: they run (1)
 *   FAKE_CUDA_UNAVAILABLE_RESULT   what cuGetProcAddress returns for a symbol it does not serve:
 *                                  500 = CUDA_ERROR_NOT_FOUND, or 0 = CUDA_SUCCESS with a NULL
 *                                  function, the form cuda.h documents (500)
 *   FAKE_CUDA_ANY_READS_EARLY      1: sources of CU_MEMCPY_SRC_ACCESS_ORDER_ANY copies are read
 *                                  during the call instead of at execution (0)
 *   FAKE_CUDA_LOG                  1: print every failure the fake returns to stderr (0)
 *   FAKE_CUDA_NO_PEER_ACCESS       1: no two devices can reach each other (0: all pairs can)
 *   FAKE_CUDA_PRIMARY_CTX_FLAGS    the flags cuDevicePrimaryCtxGetState reports, e.g. 4 =
 *                                  CU_CTX_SCHED_BLOCKING_SYNC, as libomptarget sets them (0)
 * A value that does not parse or is out of range aborts the process with a message.
 */
#ifndef OMPBATCH_TESTS_FAKE_CUDA_CONTROL_H
#define OMPBATCH_TESTS_FAKE_CUDA_CONTROL_H

#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_CUDA_MAX_DEVICES 72
#define FAKE_CUDA_RECORD_MAX_ATTRS 64
#define FAKE_CUDA_RECORD_MAX_COPIES 256
#define FAKE_CUDA_BATCH_HISTORY 16

/* Counters since the last fake_cuda_reset, then a snapshot of the current state. */
struct fake_cuda_stats {
    unsigned long long copies_enqueued;   /* copies accepted by cuMemcpyAsync and batches */
    unsigned long long copies_executed;   /* copies whose bytes have moved */
    unsigned long long bytes_executed;
    unsigned long long copies_discarded;  /* dropped by an injected cuStreamSynchronize failure */
    unsigned long long early_reads;       /* batch sources read during the call */
    unsigned long long kernels_launched;  /* copy-kernel launches accepted */
    unsigned long long kernels_executed;  /* copy-kernel launches run (each also counts as one
                                             copy executed) */
    unsigned long long batch_calls_succeeded;
    /* Copies of a batch whose destination overlaps the source or destination of another copy of
     * the same call, or whose source overlaps a destination (its own included). The real driver
     * gives undefined behaviour; counted in strict and non-strict mode. */
    unsigned long long dependent_copies;
    unsigned long long legacy_stream_copies;      /* cuMemcpyAsync on NULL/legacy/per-thread */
    unsigned long long stream_context_mismatches; /* copies on a stream of a non-current context */
    unsigned long long injected_failures;
    /* Streams and allocations destroyed because their primary context's last reference was
     * released while they were alive. */
    unsigned long long resources_reclaimed;
    unsigned long long peer_enables; /* cuCtxEnablePeerAccess calls that enabled a pair */
    unsigned long long rect_words_set;    /* words set by rectangle chunks (kernels.h, flags) */
    unsigned long long rect_partial_runs; /* queries that ran part of a rectangle launch */
    unsigned long long done_words_set;    /* words set by inline launches' blocks (kernels.h) */
    unsigned long long done_partial_runs; /* queries that stopped inside or after such a launch */
    unsigned long long values_written;    /* cuStreamWriteValue32 operations that ran */
    /* Current state, not reset. */
    unsigned long long pending_copies; /* queued on any stream, not yet executed */
    unsigned long long live_allocations;
    unsigned long long live_streams; /* created by cuStreamCreate, not destroyed */
    unsigned long long live_modules; /* loaded by cuModuleLoadData, not unloaded */
};

/* One cuMemcpyBatchAsync call, failed ones included. Arrays hold the first entries only;
 * count and num_attrs are the values passed. Arrays the caller passed as NULL read as zeros. */
struct fake_cuda_batch_record {
    int form;          /* 12080 or 13000: the ABI form the caller used */
    CUresult result;   /* what the call returned */
    size_t fail_idx;   /* what the v12080 form wrote to *failIdx; SIZE_MAX for the v13000 form */
    CUstream stream;
    size_t count;
    size_t num_attrs;
    size_t total_bytes; /* sum of all count sizes (0 when sizes was NULL) */
    CUmemcpyAttributes attrs[FAKE_CUDA_RECORD_MAX_ATTRS];
    size_t attrs_idxs[FAKE_CUDA_RECORD_MAX_ATTRS];
    CUdeviceptr dsts[FAKE_CUDA_RECORD_MAX_COPIES];
    CUdeviceptr srcs[FAKE_CUDA_RECORD_MAX_COPIES];
    size_t sizes[FAKE_CUDA_RECORD_MAX_COPIES];
};

/*
 * Every control function, X(return type, name without the fake_cuda_ prefix, parameters). The
 * list expands into the declarations and into struct fake_cuda_control, so the two cannot drift.
 *
 * Entry point names are the field names of OMPBATCH_DRIVER_ENTRY_POINTS ("cuMemAlloc",
 * "cuMemcpyBatchAsync_v12080", ...), plus "cuGetProcAddress" (both exported versions) and
 * "cuMemcpyBatchAsync" (either batch form).
 */
#define FAKE_CUDA_CONTROL_FUNCTIONS(X)                                                          \
    /* Configuration; each takes effect for the next driver call. */                           \
    X(void, set_driver_version, (int version))                                                  \
    /* 0..FAKE_CUDA_MAX_DEVICES; returns 0, or -1 when out of range (nothing changes). */      \
    X(int, set_device_count, (int count))                                                       \
    /* What cuInit returns from now on. A failing cuInit initializes nothing but does not     \
     * undo an earlier success: call deinit first to model a process without a GPU. */         \
    X(void, set_init_result, (CUresult result))                                                 \
    X(void, set_strict_dependencies, (int on))                                                  \
    X(void, set_unavailable_result, (CUresult result))                                          \
    X(void, set_any_reads_early, (int on))                                                      \
    /* 1 (the default): a rectangle launch with flags (kernels.h) sets each chunk's word as the \
     * chunk lands, and a query of a non-blocking stream whose next work is such a launch runs \
     * half of its remaining chunks, in a scrambled order, and answers not ready. 0: its       \
     * chunks never set their words (a kernel that does not signal). */                        \
    X(void, set_rect_words, (int on))                                                           \
    /* 1 (the default): an inline launch given `done` words (kernels.h) sets them as it runs,   \
     * and a query that runs it stops the stream after it (work after it stays queued and the  \
     * query answers not ready). 0: its blocks never set them. 2: as 1, but a query of a        \
     * non-blocking stream whose next work is such a launch runs half of its remaining blocks,  \
     * in a scrambled order, each setting its word, and stops there. */                        \
    X(void, set_done_words, (int on))                                                           \
    /* Back to the environment's values (or the defaults) for everything above. */             \
    X(void, reset_config, (void))                                                               \
    /* Forgets cuInit, as in a fresh process; allocations, streams and contexts stay. */       \
    X(void, deinit, (void))                                                                     \
                                                                                                \
    /* Failure injection. The nth call (1-based, counted from now) of the entry point           \
     * returns result and does nothing else: nothing validated, allocated or enqueued           \
     * (cuGetProcAddress hands back a NULL function). One-shot; a new injection for the         \
     * same name replaces the old one. An injected cuStreamSynchronize failure also             \
     * drops the copies pending on that stream, as a failed GPU would. Returns 0, or -1         \
     * for an unknown name or nth == 0. */                                                      \
    X(int, inject_failure, (const char *entry_point, unsigned long nth, CUresult result))      \
    /* As above for the nth batch call of either form; the v12080 form reports failIdx =       \
     * copy_index (SIZE_MAX when copy_index >= count). */                                      \
    X(int, inject_batch_failure, (unsigned long nth, size_t copy_index, CUresult result))      \
    /* inject_failure(name, 1, result) for both ways of waiting: cuStreamSynchronize and      \
     * cuStreamQuery; whichever comes first fails. */                                    \
    X(void, fail_next_sync, (CUresult result))                                                  \
    X(void, clear_injections, (void))                                                           \
                                                                                                \
    /* Recording. Calls made since the last reset, -1 for an unknown name. */                  \
    X(long long, call_count, (const char *entry_point))                                         \
    X(void, get_stats, (struct fake_cuda_stats *out))                                           \
    /* Batch calls since the last reset; the last FAKE_CUDA_BATCH_HISTORY are kept. */         \
    X(size_t, batch_record_count, (void))                                                       \
    /* back = 0: the last batch call, 1: the one before... Returns 0, or -1 when not kept. */  \
    X(int, get_batch_record, (size_t back, struct fake_cuda_batch_record *out))                \
    /* Retain count of a device's primary context; -1 for a bad ordinal. */                    \
    X(int, primary_ctx_refcount, (int ordinal))                                                 \
    /* Depth of the calling thread's context stack. */                                         \
    X(int, ctx_stack_depth, (void))                                                             \
    /* Why the fake last returned an error to the calling thread ("" if never). */             \
    X(const char *, last_failure, (void))                                                       \
    /* Zeroes counters and recordings and clears injections; live state stays. */              \
    X(void, reset, (void))

#define FAKE_CUDA_CONTROL_DECLARE(ret, name, params) \
    __attribute__((visibility("default"))) ret fake_cuda_##name params;
FAKE_CUDA_CONTROL_FUNCTIONS(FAKE_CUDA_CONTROL_DECLARE)
#undef FAKE_CUDA_CONTROL_DECLARE

/* The control functions of one loaded fake, as function pointers named without the prefix. */
struct fake_cuda_control {
    void *handle;      /* NULL when opening failed */
    const char *error; /* why opening failed */
#define FAKE_CUDA_CONTROL_MEMBER(ret, name, params) ret(*name) params;
    FAKE_CUDA_CONTROL_FUNCTIONS(FAKE_CUDA_CONTROL_MEMBER)
#undef FAKE_CUDA_CONTROL_MEMBER
};

static inline int fake_cuda_control_resolve_(struct fake_cuda_control *ctl, const char *symbol,
                                             void *slot)
{
    void *fn = dlsym(ctl->handle, symbol);
    if (fn == NULL) {
        ctl->error = "a fake_cuda_ control function is missing from the library";
        return 0;
    }
    /* Object-to-function pointer conversion without a cast that C++ or -pedantic rejects. */
    memcpy(slot, &fn, sizeof fn);
    return 1;
}

/*
 * Opens the fake at path (NULL: $OMPBATCH_CUDA_LIBRARY) and resolves every control function.
 * On failure the result has handle == NULL and error set; nothing stays open.
 */
static inline struct fake_cuda_control fake_cuda_control_open(const char *path)
{
    struct fake_cuda_control ctl;
    memset(&ctl, 0, sizeof ctl);
    if (path == NULL)
        path = getenv("OMPBATCH_CUDA_LIBRARY");
    if (path == NULL) {
        ctl.error = "no path given and OMPBATCH_CUDA_LIBRARY is not set";
        return ctl;
    }
    ctl.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (ctl.handle == NULL) {
        ctl.error = dlerror();
        return ctl;
    }
#define FAKE_CUDA_CONTROL_RESOLVE(ret, name, params)                                 \
    if (!fake_cuda_control_resolve_(&ctl, "fake_cuda_" #name, (void *)&ctl.name)) { \
        dlclose(ctl.handle);                                                          \
        ctl.handle = NULL;                                                            \
        return ctl;                                                                   \
    }
    FAKE_CUDA_CONTROL_FUNCTIONS(FAKE_CUDA_CONTROL_RESOLVE)
#undef FAKE_CUDA_CONTROL_RESOLVE
    return ctl;
}

/* Drops this reference to the library; the instance lives on while the library under test
 * keeps its own handle. */
static inline void fake_cuda_control_close(struct fake_cuda_control *ctl)
{
    if (ctl->handle != NULL)
        dlclose(ctl->handle);
    memset(ctl, 0, sizeof *ctl);
}

#ifdef __cplusplus
}
#endif

#endif /* OMPBATCH_TESTS_FAKE_CUDA_CONTROL_H */
