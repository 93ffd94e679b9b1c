/*
 * ompbatch: batched host/device data movement for OpenMP offload programs on NVIDIA GPUs.
 *
 * This is the only public header. It needs neither cuda.h nor omp.h: streams are opaque
 * pointers (a CUstream or cudaStream_t cast to void *), device numbers are OpenMP device
 * numbers, and map types are libomptarget's map-type bits.
 *
 * Device numbers: OpenMP device N is CUDA device ordinal N (LLVM's numbering when only CUDA
 * devices exist). The host is OMPBATCH_HOST_DEVICE (-1, OpenMP 5.2's omp_initial_device) or,
 * when an OpenMP runtime is in the process, the value of its omp_get_initial_device(). Without
 * an OpenMP runtime the host is also the number equal to the CUDA device count, which is what
 * omp_get_initial_device() would return.
 *
 * Threads: one-time initialisation is thread-safe; a batch object belongs to one thread at a
 * time; different batch objects may be used on different threads concurrently.
 *
 * Errors: every function that can fail returns an int status, 0 (OMPBATCH_OK) on success and a
 * negative OMPBATCH_ERR_* value otherwise. ompbatch_last_error() then returns a message for the
 * calling thread that names the argument or copy at fault and the reason. Like errno, the
 * message is only set by failures: successful calls (ompbatch_batch_destroy after a failed
 * submit, say) leave it as it was.
 */
#ifndef OMPBATCH_H
#define OMPBATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define OMPBATCH_API __attribute__((visibility("default")))
#else
#define OMPBATCH_API
#endif

#define OMPBATCH_VERSION_MAJOR 0
#define OMPBATCH_VERSION_MINOR 1
#define OMPBATCH_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, comparable with ompbatch_version(). */
#define OMPBATCH_VERSION                                                                        \
    (OMPBATCH_VERSION_MAJOR * 10000 + OMPBATCH_VERSION_MINOR * 100 + OMPBATCH_VERSION_PATCH)

/* The version of the library loaded at run time, encoded like OMPBATCH_VERSION. */
OMPBATCH_API int ompbatch_version(void);

/* ---------------------------------------------------------------------------------------- */
/* Status codes                                                                              */

/* X(name, value, message). The list is the single source of the enum, ompbatch_err_name()
 * and ompbatch_strerror(). */
#define OMPBATCH_STATUS_LIST(X)                                                                 \
    X(OK, 0, "success")                                                                         \
    X(INVALID_ARGUMENT, -1, "invalid argument")                                                 \
    X(NULL_POINTER, -2, "null pointer")                                                         \
    X(OVERFLOW, -3, "pointer plus size overflows the address space")                            \
    X(INVALID_DEVICE, -4, "invalid device number")                                              \
    X(NOT_MAPPED, -5, "host memory is not mapped on the device")                                \
    X(NO_DRIVER, -6, "the CUDA driver is not available")                                        \
    X(NO_OFFLOAD_RUNTIME, -7, "no OpenMP offload runtime in the process")                       \
    X(DRIVER, -8, "the CUDA driver reported an error")                                          \
    X(NO_MEMORY, -9, "out of host memory")                                                      \
    X(BAD_STATE, -10, "operation not allowed in the batch's current state")                     \
    X(UNSUPPORTED, -11, "operation not supported")

typedef enum ompbatch_status {
#define OMPBATCH_STATUS_ENUM_(name, value, msg) OMPBATCH_ERR_##name = (value),
    OMPBATCH_STATUS_LIST(OMPBATCH_STATUS_ENUM_)
#undef OMPBATCH_STATUS_ENUM_
} ompbatch_status;

#define OMPBATCH_OK OMPBATCH_ERR_OK

/* "OMPBATCH_ERR_INVALID_DEVICE" etc.; "OMPBATCH_ERR_UNKNOWN" for values not in the list. */
OMPBATCH_API const char *ompbatch_err_name(int status);
/* A fixed, human-readable description of a status; never NULL. */
OMPBATCH_API const char *ompbatch_strerror(int status);
/* The calling thread's message for its last failed call ("copy 3: dst ... overlaps ..."), or
 * "" if no call on this thread has failed. Valid until the next failure on the thread. */
OMPBATCH_API const char *ompbatch_last_error(void);

/* ---------------------------------------------------------------------------------------- */
/* OpenMP map types (the values libomptarget uses)                                           */

#define OMPBATCH_MAP_TO 0x1ULL
#define OMPBATCH_MAP_FROM 0x2ULL
#define OMPBATCH_MAP_ALWAYS 0x4ULL
#define OMPBATCH_MAP_DELETE 0x8ULL
#define OMPBATCH_MAP_PTR_AND_OBJ 0x10ULL
#define OMPBATCH_MAP_TARGET_PARAM 0x20ULL
#define OMPBATCH_MAP_RETURN_PARAM 0x40ULL
#define OMPBATCH_MAP_PRIVATE 0x80ULL
#define OMPBATCH_MAP_LITERAL 0x100ULL
#define OMPBATCH_MAP_IMPLICIT 0x200ULL
#define OMPBATCH_MAP_CLOSE 0x400ULL
#define OMPBATCH_MAP_MAPPER 0x800ULL
#define OMPBATCH_MAP_PRESENT 0x1000ULL
#define OMPBATCH_MAP_OMPX_HOLD 0x2000ULL
#define OMPBATCH_MAP_NON_CONTIG (1ULL << 44)
#define OMPBATCH_MAP_MEMBER_OF 0xffff000000000000ULL
/* Every bit above. A map type with any other bit set is refused (OMPBATCH_ERR_INVALID_ARGUMENT,
 * naming the copy): no OpenMP runtime makes one, so it is a mistake, such as a size or a pointer
 * passed in its place. */
#define OMPBATCH_MAP_KNOWN_BITS                                                                 \
    (OMPBATCH_MAP_TO | OMPBATCH_MAP_FROM | OMPBATCH_MAP_ALWAYS | OMPBATCH_MAP_DELETE |          \
     OMPBATCH_MAP_PTR_AND_OBJ | OMPBATCH_MAP_TARGET_PARAM | OMPBATCH_MAP_RETURN_PARAM |         \
     OMPBATCH_MAP_PRIVATE | OMPBATCH_MAP_LITERAL | OMPBATCH_MAP_IMPLICIT | OMPBATCH_MAP_CLOSE | \
     OMPBATCH_MAP_MAPPER | OMPBATCH_MAP_PRESENT | OMPBATCH_MAP_OMPX_HOLD |                      \
     OMPBATCH_MAP_NON_CONTIG | OMPBATCH_MAP_MEMBER_OF)

/* The host ("initial device") in every device-number argument. */
#define OMPBATCH_HOST_DEVICE (-1)

/* ---------------------------------------------------------------------------------------- */
/* Driver report                                                                             */

typedef enum ompbatch_batch_form {
    OMPBATCH_FORM_NONE = 0,       /* no driver: host paths only */
    OMPBATCH_FORM_PER_COPY = 1,   /* driver older than 12.8: one cuMemcpyAsync per copy */
    OMPBATCH_FORM_V12080 = 12080, /* cuMemcpyBatchAsync with failIdx (12.8 and 12.9 drivers) */
    OMPBATCH_FORM_V13000 = 13000  /* cuMemcpyBatchAsync without failIdx (13.0+ drivers) */
} ompbatch_batch_form;

typedef struct ompbatch_driver_info {
    size_t struct_size;      /* set to sizeof(ompbatch_driver_info) before the call */
    int driver_loaded;       /* 1 if libcuda was opened and cuInit succeeded */
    int driver_version;      /* cuDriverGetVersion(), e.g. 13000; 0 without a driver */
    int device_count;        /* CUDA devices; 0 without a driver */
    int batch_form;          /* ompbatch_batch_form the library uses */
    int forced;              /* 1 if OMPBATCH_BATCH_FORM chose the form */
    const char *library;     /* the path that was opened, or the one that failed */
    const char *reason;      /* why there is no driver ("" when loaded) */
} ompbatch_driver_info;

/* Loads the driver on first use (thread-safe) and describes what was found. Succeeds without
 * a driver: driver_loaded is then 0 and reason says why. Fails only on a bad argument. */
OMPBATCH_API int ompbatch_get_driver_info(ompbatch_driver_info *info);

/* ---------------------------------------------------------------------------------------- */
/* One-shot batched copy, shaped like omp_target_memcpy                                      */

/* Copies count regions: for each i, length[i] bytes from (char *)src[i] + src_offset[i] on
 * src_device_num to (char *)dst[i] + dst_offset[i] on dst_device_num. dst_offset and
 * src_offset may be NULL (all zero). Returns when every copy is complete. Copies are done in an
 * order equivalent to index order: where a destination overlaps an earlier copy's source or
 * destination, the later copy sees the earlier one's effect. Zero-length copies are skipped
 * (their pointers may be NULL). Arguments are checked before anything is copied; if the driver
 * fails a copy, some of the other copies may have been performed (the library orders copies by
 * dependency level and address, not by index), so the destinations' contents are then
 * unspecified. The call waits for whatever was started before it returns. */
OMPBATCH_API int ompbatch_target_memcpy_batch(void *const *dst, const void *const *src,
                                              const size_t *length, const size_t *dst_offset,
                                              const size_t *src_offset, size_t count,
                                              int dst_device_num, int src_device_num);

/* ---------------------------------------------------------------------------------------- */
/* Batch objects                                                                             */

typedef struct ompbatch_batch ompbatch_batch;

/* How the small copies of a batch move (README.md, "Strategies").
 *   DIRECT  every copy is an entry of cuMemcpyBatchAsync (or a cuMemcpyAsync where the
 *           routing table measured that faster): the copy engine pays ~0.4-2.5 us a piece.
 *   STAGED  small pieces go through the library's staging and its copy kernel: pinned host
 *           pieces are read or written by the kernel in place; pageable ones are packed by the
 *           CPU into pinned staging (or unpacked from it), moved by one bulk copy that is an
 *           entry of the same cuMemcpyBatchAsync, and scattered (or gathered) on the device;
 *           device-to-device pieces are copied by the kernel. Pieces too large to gain stay
 *           direct.
 *   AUTO    a cost model measured on the running GPU picks per group of copies (the default).
 * OMPBATCH_STRATEGY=direct|staged|auto sets the default; a batch option overrides it. */
typedef enum ompbatch_strategy {
    OMPBATCH_STRATEGY_DEFAULT = 0, /* options only: OMPBATCH_STRATEGY, or AUTO */
    OMPBATCH_STRATEGY_AUTO = 1,
    OMPBATCH_STRATEGY_DIRECT = 2,
    OMPBATCH_STRATEGY_STAGED = 3
} ompbatch_strategy;

typedef struct ompbatch_batch_options {
    size_t struct_size;    /* sizeof(ompbatch_batch_options); fields past it take defaults */
    size_t max_copies;     /* most copies in one driver batch call; 0 = default
                              (OMPBATCH_MAX_COPIES or 4096); longer plans are split */
    int prefer_overlap;    /* 1: ask the driver to overlap copies with compute (nowait) */
    int synchronous;       /* 1: the caller waits right after submit; lets pageable sources be
                              read out of stream order (srcAccessOrder ANY) */
    int strategy;          /* ompbatch_strategy; 0 = OMPBATCH_STRATEGY or AUTO */
} ompbatch_batch_options;

/* Creates a batch for OpenMP device device_num (a CUDA device) and stream. stream is the
 * caller's CUstream, which must belong to that device's primary context (another device's or
 * context's stream is refused with OMPBATCH_ERR_INVALID_ARGUMENT), or NULL for the library's
 * own non-blocking stream of that device (created once, on the device's primary context).
 * options may be NULL. Without a driver a batch can
 * still be created for the host (OMPBATCH_HOST_DEVICE) or for an OpenMP host-offload device;
 * its copies then run with memcpy. */
OMPBATCH_API int ompbatch_batch_create(ompbatch_batch **out, int device_num, void *stream,
                                       const ompbatch_batch_options *options);

/* Adds a raw copy of bytes from src on src_device_num to dst on dst_device_num. Each side must
 * be the batch's device or the host. map_type may be 0; OMPBATCH_MAP_LITERAL or
 * OMPBATCH_MAP_PRIVATE mark a source that dies after submit returns (read during the call).
 * Arguments are checked here; the failing check names the copy by its index in the batch. */
OMPBATCH_API int ompbatch_batch_add(ompbatch_batch *batch, void *dst, int dst_device_num,
                                    const void *src, int src_device_num, size_t bytes,
                                    uint64_t map_type);

/* Adds the transfer of a mapped host range: map_type must have exactly one of
 * OMPBATCH_MAP_TO (host to device) and OMPBATCH_MAP_FROM (device to host). The device address
 * comes from the OpenMP runtime (omp_get_mapped_ptr); both the first and the last byte must be
 * mapped, consistently. Fails with OMPBATCH_ERR_NO_OFFLOAD_RUNTIME without an OpenMP offload
 * runtime and OMPBATCH_ERR_NOT_MAPPED when the range is not mapped. */
OMPBATCH_API int ompbatch_batch_add_mapped(ompbatch_batch *batch, void *host_ptr, size_t bytes,
                                           uint64_t map_type);

/* Plans the copies added so far and enqueues them on the batch's stream: one driver batch call
 * per sub-batch. Returns before device copies complete (host-backend copies are complete).
 * Sources in pageable memory that the staged strategy packs are read before submit returns.
 * Staged device-to-host copies into pageable memory land in their destinations during
 * ompbatch_batch_wait (or reset or destroy), not when the stream reaches them: wait for the
 * batch, not only for the stream, before reading such destinations.
 * On a driver failure no later sub-batch is started; stats.copies_done counts the planned
 * copies that were enqueued. After submit, only wait, stats, describe, reset, forget_memory and
 * destroy are allowed. */
OMPBATCH_API int ompbatch_batch_submit(ompbatch_batch *batch);

/* Waits until every submitted copy is complete. */
OMPBATCH_API int ompbatch_batch_wait(ompbatch_batch *batch);

/* Forgets the copies (waiting first if they were submitted) so the batch can be refilled. A
 * refill with exactly the same copies reuses the plan (stats.plan_reused), as an iterative
 * code's batch usually is; ompbatch_batch_forget_memory also drops the plan.
 * What the batch learnt about the memory kinds of the pointers it saw (device, pinned,
 * pageable, managed, and allocation extents) is kept, so refilling with the same buffers costs
 * no driver queries; after freeing, reallocating or registering (cuMemHostRegister) memory
 * the batch has seen, call ompbatch_batch_forget_memory. */
OMPBATCH_API int ompbatch_batch_reset(ompbatch_batch *batch);

/* Drops what the batch learnt about memory kinds (see ompbatch_batch_reset). Not allowed
 * between add and submit. */
OMPBATCH_API int ompbatch_batch_forget_memory(ompbatch_batch *batch);

/* Waits for submitted copies and frees the batch. NULL is allowed. Returns the wait status.
 * Afterwards every batch function given this pointer, destroy included, fails with
 * OMPBATCH_ERR_BAD_STATE ("batch ... was destroyed") for as long as the library keeps the dead
 * batch's small struct: the last 256 destroyed batches; after that, as with free, the pointer
 * must not be used. A pointer that was never a batch fails with OMPBATCH_ERR_INVALID_ARGUMENT
 * when its first bytes do not happen to look like one. */
OMPBATCH_API int ompbatch_batch_destroy(ompbatch_batch *batch);

typedef enum ompbatch_path {
    OMPBATCH_PATH_NONE = 0,      /* nothing submitted */
    OMPBATCH_PATH_BATCH = 1,     /* cuMemcpyBatchAsync */
    OMPBATCH_PATH_PER_COPY = 2,  /* one cuMemcpyAsync per copy */
    OMPBATCH_PATH_HOST = 4,      /* memcpy on the host backend */
    OMPBATCH_PATH_KERNEL = 8,    /* the library's copy kernel (staged strategy) */
    OMPBATCH_PATH_STAGED = 16    /* CPU pack or unpack through pinned staging + one bulk copy */
} ompbatch_path;

typedef struct ompbatch_stats {
    size_t struct_size;       /* sizeof(ompbatch_stats) before the call */
    uint64_t copies_added;    /* copies given to the batch, zero-byte ones included; counts
                                 from the add on, all other fields from the last submit */
    uint64_t copies_zero;     /* zero-byte copies skipped */
    uint64_t copies_planned;  /* copies after merging contiguous neighbours */
    uint64_t attr_groups;     /* attribute entries passed to the driver, summed over calls */
    uint64_t sub_batches;     /* ordered sub-batches (dependency levels times size splits) */
    uint64_t driver_calls;    /* batch or per-copy driver calls made */
    uint64_t bytes;           /* bytes in the plan */
    uint64_t copies_done;     /* planned copies enqueued successfully */
    unsigned paths;           /* OR of ompbatch_path values used */
    uint64_t batch_calls;     /* the cuMemcpyBatchAsync calls among driver_calls */
    uint64_t staged_copies;   /* planned copies moved by the staged strategy */
    uint64_t staged_bytes;    /* their bytes */
    uint64_t kernel_launches; /* copy-kernel launches */
    uint64_t staging_refused; /* staged copies sent direct because staging was not granted
                                 (OMPBATCH_STAGING_MB reached or allocation failed) */
    uint64_t plan_reused;     /* 1 when the submit reused the previous submit's plan: the batch
                                 was reset and refilled with the same copies (same pointers,
                                 sizes, map types and devices, in the same order) */
    uint64_t batch_fallbacks; /* cuMemcpyBatchAsync calls that failed and whose copies were
                                 then sent one cuMemcpyAsync each (OMPBATCH_VERBOSE=1 logs why) */
} ompbatch_stats;

/* Copies the batch's statistics into *stats (struct_size must be set). */
OMPBATCH_API int ompbatch_batch_get_stats(const ompbatch_batch *batch, ompbatch_stats *stats);

/* Writes a text description of the batch's plan (copies, attribute groups, merges,
 * sub-batches, paths) into buf, always NUL-terminated when size > 0. *needed (may be NULL)
 * receives the length without the NUL. Plans on demand if the batch was not submitted. */
OMPBATCH_API int ompbatch_batch_describe(ompbatch_batch *batch, char *buf, size_t size,
                                         size_t *needed);


/* ---------------------------------------------------------------------------------------- */
/* The OpenMP hook                                                                           */
/*                                                                                           */
/* Linked before the OpenMP runtime (-lompbatch on the link line of a clang offload program)  */
/* or preloaded (LD_PRELOAD=libompbatch.so), the library interposes libomptarget's data      */
/* entry points: it makes the transfers it can prove safe itself, one batch per construct,   */
/* and forwards everything else unchanged. README.md ("The OpenMP hook") says what is        */
/* batched and what is forwarded. OMPBATCH_DISABLE=1 makes the hook a pure pass-through.     */

typedef enum ompbatch_hook_state {
    OMPBATCH_HOOK_NOT_LOADED = 0, /* no offload program has called into the hook yet */
    OMPBATCH_HOOK_ACTIVE = 1,     /* batching */
    OMPBATCH_HOOK_PASS_THROUGH = 2 /* forwarding everything (disabled, or a runtime the hook
                                      does not know; OMPBATCH_VERBOSE says why) */
} ompbatch_hook_state;

typedef struct ompbatch_hook_stats {
    size_t struct_size;           /* sizeof(ompbatch_hook_stats) before the call */
    int state;                    /* ompbatch_hook_state */
    int runtime_major;            /* libomptarget's LLVM major version, 0 if unknown */
    uint64_t constructs;          /* data constructs seen (begin, end, update; nowait too) */
    uint64_t kernels;             /* target regions seen (__tgt_target_kernel) */
    uint64_t items;               /* map items of the data constructs */
    uint64_t update_batched;      /* target update items the hook copied itself */
    uint64_t enter_batched;       /* begin items whose `to` copy the hook made itself */
    uint64_t exit_batched;        /* end items whose `from` copy the hook made itself */
    uint64_t items_forwarded;     /* items left to the runtime (with or without copies) */
    uint64_t batches;             /* batches the hook submitted */
    uint64_t bytes_batched;       /* bytes those batches copied */
    uint64_t driver_batch_calls;  /* cuMemcpyBatchAsync calls those batches made */
    unsigned paths;               /* OR of ompbatch_path values those batches used */
} ompbatch_hook_stats;

/* Copies the hook's process-wide statistics into *stats (struct_size must be set). */
OMPBATCH_API int ompbatch_hook_get_stats(ompbatch_hook_stats *stats);

/* Sets every counter of the hook's statistics to zero. */
OMPBATCH_API int ompbatch_hook_reset_stats(void);

/* Turns batching on (1) or off (0) for the whole process, from then on: off, every call is
 * forwarded unchanged, as with OMPBATCH_DISABLE=1 (which wins: with it set, 1 is refused with
 * OMPBATCH_ERR_BAD_STATE). Meant for timing a program with and without the hook in one run;
 * call it between constructs, not while other threads are inside one. Returns the previous
 * setting (0 or 1) or a negative status. */
OMPBATCH_API int ompbatch_hook_set_enabled(int enabled);

#ifdef __cplusplus
}
#endif

#endif /* OMPBATCH_H */
