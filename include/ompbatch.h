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
 * submit, say) leave it as it was. Failures the library routes around itself (staging
 * refused, a cuMemcpyBatchAsync resent one copy at a time, a calibration cache it cannot
 * write) also set it while the call succeeds.
 *
 * Every function below is documented in one format: what it does; "Parameters:"; "Returns:",
 * with each status it can return and when; "Threads:". docs/api.md is the reference manual
 * for this header, with an example per function (tests/docs:docs_sync_test keeps the two in
 * step).
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

/* The version of the library loaded at run time, encoded like OMPBATCH_VERSION. Comparing it
 * with the OMPBATCH_VERSION a program was compiled with tells whether the header and the
 * loaded library agree.
 *
 * Parameters: none.
 * Returns: OMPBATCH_VERSION_MAJOR * 10000 + OMPBATCH_VERSION_MINOR * 100 +
 *   OMPBATCH_VERSION_PATCH of the loaded library (100 for 0.1.0). Never fails.
 * Threads: safe from any thread.
 */
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

/* The name of a status as this header spells it: "OMPBATCH_ERR_INVALID_DEVICE" for
 * OMPBATCH_ERR_INVALID_DEVICE, "OMPBATCH_ERR_OK" for OMPBATCH_OK.
 *
 * Parameters:
 *   status  any int, usually a value an ompbatch function returned.
 * Returns: a static string, never NULL; "OMPBATCH_ERR_UNKNOWN" for a value not in
 *   OMPBATCH_STATUS_LIST (any positive value, for one).
 * Threads: safe from any thread.
 */
OMPBATCH_API const char *ompbatch_err_name(int status);

/* A fixed, human-readable description of a status: the message of OMPBATCH_STATUS_LIST
 * ("invalid device number" for OMPBATCH_ERR_INVALID_DEVICE). It says what kind of failure
 * happened; ompbatch_last_error says which argument or copy and why.
 *
 * Parameters:
 *   status  any int, usually a value an ompbatch function returned.
 * Returns: a static string, never NULL; "unknown status" for a value not in the list.
 * Threads: safe from any thread.
 */
OMPBATCH_API const char *ompbatch_strerror(int status);

/* The calling thread's message for its last failed call ("copy 3: dst ... overlaps ..."), or
 * "" if no call on this thread has failed. The message names the argument or the copy (by its
 * index as added) at fault and the reason; driver failures add the call, the CUresult's name,
 * number and text. Read it right after a call returned a negative status: the library also
 * records failures it recovers from by itself (staging refused, a failed cuMemcpyBatchAsync
 * sent again copy by copy), so after a successful call it may hold such a message.
 *
 * Parameters: none.
 * Returns: a pointer to the calling thread's buffer, never NULL. The text stays until the
 *   next failure on the same thread overwrites it.
 * Threads: per thread; a failure on one thread never changes another thread's message.
 */
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
 * a driver: driver_loaded is then 0 and reason says why ("cannot open the CUDA driver: ...",
 * "cuInit failed: ...", "the driver lacks ..."). Fails only on a bad argument. The driver is
 * looked for once per process (OMPBATCH_CUDA_LIBRARY names the library to open); every later
 * call reports the same result.
 *
 * Parameters:
 *   info  where to write; info->struct_size must be at least sizeof(ompbatch_driver_info)
 *         of this header. Only the fields this library knows are written; struct_size is
 *         left as the caller set it. library and reason point to the library's own strings,
 *         valid for the life of the process.
 * Returns: OMPBATCH_OK, with or without a driver, or
 *   OMPBATCH_ERR_NULL_POINTER      info is NULL;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  info->struct_size is smaller than this header's struct.
 * Threads: safe from any thread; the first call of any thread loads the driver, the others
 *   wait for it.
 */
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
 * unspecified. The call waits for whatever was started before it returns.
 * It is one batch (ompbatch_batch_create on the library's own stream, with
 * options.synchronous = 1) filled, submitted and destroyed, so it plans, merges and picks a
 * strategy like any batch.
 *
 * Parameters:
 *   dst, src        arrays of count pointers (destination and source bases).
 *   length          array of count byte counts; a zero length skips the copy.
 *   dst_offset      array of count byte offsets added to dst[i], or NULL for zeros.
 *   src_offset      array of count byte offsets added to src[i], or NULL for zeros.
 *   count           number of copies; 0 returns OMPBATCH_OK at once, reading nothing.
 *   dst_device_num  OpenMP device number of every destination: a CUDA device, an OpenMP
 *                   host-offload device or the host (OMPBATCH_HOST_DEVICE or
 *                   omp_get_initial_device()).
 *   src_device_num  the same for every source. Two different devices must both be CUDA
 *                   devices: the copies then go GPU to GPU on the source's library stream, one
 *                   cuMemcpyAsync each in index order (see ompbatch_batch_add).
 * Returns: OMPBATCH_OK when every copy is complete, or
 *   OMPBATCH_ERR_NULL_POINTER      dst, src or length is NULL with count > 0, or a pointer of
 *                                  a copy with a length is NULL ("copy 3: dst is NULL");
 *   OMPBATCH_ERR_OVERFLOW          a pointer plus its offset, or plus its length, wraps;
 *   OMPBATCH_ERR_INVALID_DEVICE    a device number is not a device (the message lists the
 *                                  host's numbers and the CUDA device count);
 *   OMPBATCH_ERR_UNSUPPORTED       the two device numbers name two different devices, not
 *                                  both CUDA devices;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  a copy's source and destination overlap, or its memory is
 *                                  not what its device number says (the checks of
 *                                  ompbatch_batch_submit);
 *   OMPBATCH_ERR_NO_MEMORY         out of host memory;
 *   OMPBATCH_ERR_DRIVER            a driver call failed (the message names the call and the
 *                                  copy).
 * Threads: safe from several threads at once: each call uses a batch of its own (calls for
 *   one CUDA device share the library's stream of that device).
 */
OMPBATCH_API int ompbatch_target_memcpy_batch(void *const *dst, const void *const *src,
                                              const size_t *length, const size_t *dst_offset,
                                              const size_t *src_offset, size_t count,
                                              int dst_device_num, int src_device_num);

/* The most dimensions a rectangular copy may have, and the most contiguous runs it may
 * become (ompbatch_batch_add_rect). */
#define OMPBATCH_RECT_MAX_DIMS 16
#define OMPBATCH_RECT_MAX_RUNS (1 << 24)

/* Copies one rectangular sub-volume, as omp_target_memcpy_rect does: volume[d] elements of
 * element_size bytes in each dimension d (outermost first) of a num_dims-dimensional array,
 * from src (an array of src_dimensions, starting at index src_offsets) on src_device_num to dst
 * (dst_dimensions, dst_offsets) on dst_device_num. Returns when the copy is complete. It is one
 * batch filled with ompbatch_batch_add_rect, submitted and destroyed; the device numbers are as
 * in ompbatch_target_memcpy_batch.
 *
 * Parameters:
 *   dst, src              the arrays' first elements (index 0 in every dimension).
 *   element_size          bytes per element, > 0.
 *   num_dims              dimensions, 1 to OMPBATCH_RECT_MAX_DIMS.
 *   volume                num_dims element counts to copy; any 0 copies nothing.
 *   dst_offsets, src_offsets        num_dims starting indices on each side.
 *   dst_dimensions, src_dimensions  num_dims extents of each side's array.
 *   dst_device_num, src_device_num  OpenMP device numbers, as in ompbatch_target_memcpy_batch.
 * Returns: OMPBATCH_OK when the copy is complete, or the statuses of ompbatch_batch_add_rect
 *   and of ompbatch_target_memcpy_batch (the message names the rectangle and the dimension:
 *   "rect at copy 0: dimension 1: src offset 6 + volume 4 exceeds the src dimension 8").
 * Threads: as ompbatch_target_memcpy_batch.
 */
OMPBATCH_API int ompbatch_target_memcpy_rect(void *dst, const void *src, size_t element_size,
                                             int num_dims, const size_t *volume,
                                             const size_t *dst_offsets,
                                             const size_t *src_offsets,
                                             const size_t *dst_dimensions,
                                             const size_t *src_dimensions, int dst_device_num,
                                             int src_device_num);

/* ---------------------------------------------------------------------------------------- */
/* Batch objects                                                                             */

typedef struct ompbatch_batch ompbatch_batch;

/* How the small copies of a batch move (docs/strategies.md).
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
 * its copies then run with memcpy.
 *
 * Parameters:
 *   out         receives the new batch; set to NULL first whenever out is not NULL.
 *   device_num  the OpenMP device the batch copies to and from: a CUDA device, an OpenMP
 *               host-offload device, or the host (OMPBATCH_HOST_DEVICE or
 *               omp_get_initial_device()) for host-to-host copies.
 *   stream      a CUstream (or cudaStream_t) as void *, or NULL. Not CU_STREAM_LEGACY or
 *               CU_STREAM_PER_THREAD, which cuMemcpyBatchAsync rejects; NULL for a device that
 *               is not a CUDA device.
 *   options     NULL for the defaults, or options with struct_size set; a larger struct from
 *               a newer header is accepted when the fields this library does not know are 0.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      out is NULL;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  options->struct_size is too small, prefer_overlap or
 *                                  synchronous is not 0 or 1, strategy is not an
 *                                  ompbatch_strategy; stream is the legacy or per-thread
 *                                  stream, belongs to another context, or is not NULL for a
 *                                  device that is not a CUDA device;
 *   OMPBATCH_ERR_UNSUPPORTED       options is larger than this library's struct and sets a
 *                                  field it does not know;
 *   OMPBATCH_ERR_INVALID_DEVICE    device_num is not a device (without a driver no CUDA device
 *                                  exists, and the message says so);
 *   OMPBATCH_ERR_NO_MEMORY         out of host memory;
 *   OMPBATCH_ERR_DRIVER            the driver failed retaining the primary context, creating
 *                                  the library's stream or checking the caller's stream
 *                                  (cuStreamGetCtx: a pointer that is not a stream).
 * Threads: safe from any thread. The batch then belongs to one thread at a time.
 */
OMPBATCH_API int ompbatch_batch_create(ompbatch_batch **out, int device_num, void *stream,
                                       const ompbatch_batch_options *options);

/* Adds a raw copy of bytes from src on src_device_num to dst on dst_device_num. Each side is
 * the host or a CUDA device: the batch's own, or, in a batch on the library's stream (created
 * with stream NULL), any other GPU. A batch with copies on other GPUs splits them at submit by
 * the device that runs each (the GPU side of a host <-> GPU copy, the source of a GPU -> GPU
 * copy, which goes as a peer copy): the parts run concurrently on each device's library stream
 * and complete as one unit (wait returns when all have); copies of different parts must not
 * touch the same memory where one writes it (submit refuses them, naming both). map_type may
 * be 0; OMPBATCH_MAP_LITERAL or
 * OMPBATCH_MAP_PRIVATE mark a source that dies after submit returns (read during the call).
 * Arguments are checked here; the failing check names the copy by its index in the batch.
 * Nothing is read or written before submit, and the memory's kind is checked there.
 *
 * Parameters:
 *   batch           an open batch: created or reset, not submitted since.
 *   dst             destination address; may be NULL when bytes is 0.
 *   dst_device_num  the host's number (OMPBATCH_HOST_DEVICE, omp_get_initial_device(), or
 *                   without an OpenMP runtime the CUDA device count), the batch's device
 *                   number, or another CUDA device's (see above).
 *   src             source address; may be NULL when bytes is 0.
 *   src_device_num  as dst_device_num, for the source.
 *   bytes           bytes to copy; a zero-byte copy is counted (stats.copies_zero) and skipped.
 *   map_type        0 or OMPBATCH_MAP_* bits (OMPBATCH_MAP_KNOWN_BITS only). Only
 *                   OMPBATCH_MAP_LITERAL and OMPBATCH_MAP_PRIVATE change how the copy is made.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      batch is NULL, or dst or src is NULL with bytes > 0;
 *   OMPBATCH_ERR_BAD_STATE         the batch was submitted (reset it first) or destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch, or map_type has a bit outside
 *                                  OMPBATCH_MAP_KNOWN_BITS;
 *   OMPBATCH_ERR_OVERFLOW          dst or src plus bytes wraps the address space;
 *   OMPBATCH_ERR_INVALID_DEVICE    a device number is not a device, or a device other than the
 *                                  batch's that is not a CUDA device (or the batch is not a
 *                                  CUDA device's);
 *   OMPBATCH_ERR_UNSUPPORTED       another GPU named in a batch on the caller's stream;
 *   OMPBATCH_ERR_NO_MEMORY         the batch cannot grow.
 * Threads: one thread at a time per batch.
 */
OMPBATCH_API int ompbatch_batch_add(ompbatch_batch *batch, void *dst, int dst_device_num,
                                    const void *src, int src_device_num, size_t bytes,
                                    uint64_t map_type);

/* Adds the transfer of a mapped host range: map_type must have exactly one of
 * OMPBATCH_MAP_TO (host to device) and OMPBATCH_MAP_FROM (device to host). The device address
 * comes from the OpenMP runtime (omp_get_mapped_ptr); both the first and the last byte must be
 * mapped, consistently. Fails with OMPBATCH_ERR_NO_OFFLOAD_RUNTIME without an OpenMP offload
 * runtime and OMPBATCH_ERR_NOT_MAPPED when the range is not mapped. The copy is then added as
 * ompbatch_batch_add would add it, with map_type.
 *
 * Parameters:
 *   batch     an open batch for a device (a CUDA or OpenMP host-offload device, not the host).
 *   host_ptr  the start of a host range mapped on the batch's device; may be NULL when bytes
 *             is 0.
 *   bytes     the range's length; 0 adds a zero-byte copy.
 *   map_type  OMPBATCH_MAP_TO or OMPBATCH_MAP_FROM, plus other known OMPBATCH_MAP_* bits.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER        batch is NULL, or host_ptr is NULL with bytes > 0;
 *   OMPBATCH_ERR_BAD_STATE           the batch was submitted or destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT    batch is not a batch, or map_type has neither or both
 *                                    of TO and FROM, or a bit outside OMPBATCH_MAP_KNOWN_BITS;
 *   OMPBATCH_ERR_INVALID_DEVICE      the batch is for the host;
 *   OMPBATCH_ERR_NO_OFFLOAD_RUNTIME  omp_get_mapped_ptr, omp_get_initial_device or
 *                                    omp_get_num_devices is not in the process;
 *   OMPBATCH_ERR_NOT_MAPPED          the first byte is not mapped, or the last byte is not
 *                                    (partly mapped) or maps elsewhere (several mappings);
 *   OMPBATCH_ERR_OVERFLOW            host_ptr plus bytes wraps the address space;
 *   OMPBATCH_ERR_NO_MEMORY           the batch cannot grow.
 * Threads: one thread at a time per batch; the runtime's look-ups are thread-safe.
 */
OMPBATCH_API int ompbatch_batch_add_mapped(ompbatch_batch *batch, void *host_ptr, size_t bytes,
                                           uint64_t map_type);

/* Adds a rectangular sub-volume, as omp_target_memcpy_rect describes one: volume[d] elements
 * of element_size bytes in each dimension d (outermost first) of a num_dims-dimensional array,
 * from src (an array of src_dimensions elements, the sub-volume starting at index src_offsets)
 * on src_device_num to dst (dst_dimensions, dst_offsets) on dst_device_num. A sub-volume of
 * 64 or more contiguous runs of at most 16 KiB (a run: the innermost dimension, extended over
 * the inner dimensions the volume covers whole on both sides), 64 MiB at most, between the
 * batch's device and the host, is added as one copy: the staged strategy moves it with one
 * kernel launch (and one bulk copy through pinned staging for pageable host memory). Any
 * other sub-volume, and this one where the batch cannot stage (OMPBATCH_STRATEGY_DIRECT,
 * planning disabled, no batch call) or its two sides' spans overlap, goes as one copy per
 * run, in order, outermost index slowest, which the planner merges, stages or batches.
 * Geometry and pointers are checked before anything is added; device numbers and map_type as
 * in ompbatch_batch_add, at the first run. Messages name the rectangle by the index of its
 * first copy and the dimension at fault ("rect at copy 12: dimension 2: dst offset 30 + volume
 * 8 exceeds the dst dimension 32").
 *
 * Parameters:
 *   batch           an open batch.
 *   dst, src        the arrays' first elements (index 0 in every dimension).
 *   dst_device_num, src_device_num  as in ompbatch_batch_add.
 *   element_size    bytes per element, > 0.
 *   num_dims        dimensions, 1 to OMPBATCH_RECT_MAX_DIMS.
 *   volume          num_dims element counts to copy; any 0 adds nothing.
 *   dst_offsets, src_offsets        num_dims starting indices on each side.
 *   dst_dimensions, src_dimensions  num_dims extents (> 0) of each side's array.
 *   map_type        as in ompbatch_batch_add, for every run.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      batch, dst, src or one of the five arrays is NULL;
 *   OMPBATCH_ERR_BAD_STATE         the batch was submitted or destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch; element_size is 0; num_dims is out of
 *                                  range; a dimension is 0, or an offset plus the volume
 *                                  exceeds a dimension; the rectangle would be more than
 *                                  OMPBATCH_RECT_MAX_RUNS runs; map_type has an unknown bit;
 *   OMPBATCH_ERR_OVERFLOW          an array's size overflows, or it wraps the address space
 *                                  from its pointer;
 *   OMPBATCH_ERR_INVALID_DEVICE, OMPBATCH_ERR_UNSUPPORTED  as in ompbatch_batch_add (nothing is
 *                                  added then);
 *   OMPBATCH_ERR_NO_MEMORY         the batch cannot grow; the runs added before stay in the
 *                                  batch (reset it).
 * Threads: one thread at a time per batch.
 */
OMPBATCH_API int ompbatch_batch_add_rect(ompbatch_batch *batch, void *dst, int dst_device_num,
                                         const void *src, int src_device_num,
                                         size_t element_size, int num_dims,
                                         const size_t *volume, const size_t *dst_offsets,
                                         const size_t *src_offsets,
                                         const size_t *dst_dimensions,
                                         const size_t *src_dimensions, uint64_t map_type);

/* Plans the copies added so far and enqueues them on the batch's stream: one driver batch call
 * per sub-batch. Returns before device copies complete (host-backend copies are complete).
 * Sources in pageable memory that the staged strategy packs are read before submit returns.
 * Staged device-to-host copies into pageable memory land in their destinations during
 * ompbatch_batch_wait (or reset or destroy), not when the stream reaches them: wait for the
 * batch, not only for the stream, before reading such destinations.
 * On a driver failure no later sub-batch is started; stats.copies_done counts the planned
 * copies that were enqueued. After submit, only wait, stats, describe, reset, forget_memory and
 * destroy are allowed.
 * The checks that need the memory's kind are made here, when the plan classifies the copies
 * (a plan of one copy under 2 MiB is not classified: the driver checks its pointers). The
 * batch counts as submitted even when submit fails; reset it to use it again. The first
 * submit of a batch on a CUDA device with the automatic strategy may calibrate the cost model
 * (OMPBATCH_CALIBRATE). With OMPBATCH_NVTX on and an NVTX tool attached, the submission is an
 * NVTX range "ompbatch batch (device N): K copies".
 *
 * Parameters:
 *   batch  an open batch.
 * Returns: OMPBATCH_OK once everything is enqueued, or
 *   OMPBATCH_ERR_NULL_POINTER      batch is NULL;
 *   OMPBATCH_ERR_BAD_STATE         the batch was already submitted, or destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch; or a copy's source and destination
 *                                  overlap, or its memory is not what its device number says
 *                                  (device memory named as the host, host memory named as the
 *                                  device, another device's memory), or it runs past the end
 *                                  of its allocation;
 *   OMPBATCH_ERR_NO_MEMORY         out of host memory;
 *   OMPBATCH_ERR_DRIVER            a driver call failed: the message names the call, the
 *                                  CUresult and the copy.
 * Threads: one thread at a time per batch.
 */
OMPBATCH_API int ompbatch_batch_submit(ompbatch_batch *batch);

/* Waits until every submitted copy is complete, then finishes staged device-to-host copies
 * into pageable memory (unpacks them into their destinations). It polls the stream for
 * OMPBATCH_WAIT_POLL_US microseconds before blocking in cuStreamSynchronize. Returns at once
 * when nothing is pending (an open batch, a host batch, a second wait).
 *
 * Parameters:
 *   batch  a batch, in any state.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      batch is NULL;
 *   OMPBATCH_ERR_BAD_STATE         the batch was destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch;
 *   OMPBATCH_ERR_DRIVER            the stream reported an error; staged bytes for pageable
 *                                  destinations are then not written, and the batch no
 *                                  longer counts its copies as pending.
 * Threads: one thread at a time per batch.
 */
OMPBATCH_API int ompbatch_batch_wait(ompbatch_batch *batch);

/* Forgets the copies (waiting first if they were submitted) so the batch can be refilled. A
 * refill with exactly the same copies reuses the plan (stats.plan_reused), as an iterative
 * code's batch usually is; ompbatch_batch_forget_memory also drops the plan.
 * What the batch learnt about the memory kinds of the pointers it saw (device, pinned,
 * pageable, managed, and allocation extents) is kept, so refilling with the same buffers costs
 * no driver queries; after freeing, reallocating or registering (cuMemHostRegister) memory
 * the batch has seen, call ompbatch_batch_forget_memory. The statistics are cleared.
 *
 * Parameters:
 *   batch  a batch, in any state; it is open and empty afterwards, even when the wait failed.
 * Returns: the wait's status (OMPBATCH_OK when nothing was pending), or
 *   OMPBATCH_ERR_NULL_POINTER      batch is NULL;
 *   OMPBATCH_ERR_BAD_STATE         the batch was destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch;
 *   OMPBATCH_ERR_DRIVER            the wait failed (see ompbatch_batch_wait).
 * Threads: one thread at a time per batch.
 */
OMPBATCH_API int ompbatch_batch_reset(ompbatch_batch *batch);

/* Drops what the batch learnt about memory kinds (see ompbatch_batch_reset). Not allowed
 * between add and submit. The plan is not reused by the next submit either.
 *
 * Parameters:
 *   batch  a batch that holds no copies waiting for submit: just created, submitted or reset.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      batch is NULL;
 *   OMPBATCH_ERR_BAD_STATE         the batch holds added copies not yet submitted, or was
 *                                  destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch.
 * Threads: one thread at a time per batch.
 */
OMPBATCH_API int ompbatch_batch_forget_memory(ompbatch_batch *batch);

/* Waits for submitted copies and frees the batch. NULL is allowed. Returns the wait status.
 * Afterwards every batch function given this pointer, destroy included, fails with
 * OMPBATCH_ERR_BAD_STATE ("batch ... was destroyed") for as long as the library keeps the dead
 * batch's small struct: the last 256 batches the program destroyed (the library's own, in
 * the one-shot calls, multi-GPU batches and the calibration, do not count); after that, as
 * with free, the pointer must not be used. A pointer that was never a batch fails with
 * OMPBATCH_ERR_INVALID_ARGUMENT when its first bytes do not happen to look like one.
 *
 * Parameters:
 *   batch  a batch in any state, or NULL (nothing happens).
 * Returns: the wait's status (OMPBATCH_OK when nothing was pending; the batch is freed either
 *   way), or
 *   OMPBATCH_ERR_BAD_STATE         the batch was already destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch;
 *   OMPBATCH_ERR_DRIVER            the wait failed (see ompbatch_batch_wait).
 * Threads: one thread at a time per batch; destroying different batches on different threads
 *   at once is safe.
 */
OMPBATCH_API int ompbatch_batch_destroy(ompbatch_batch *batch);

typedef enum ompbatch_path {
    OMPBATCH_PATH_NONE = 0,      /* nothing submitted */
    OMPBATCH_PATH_BATCH = 1,     /* cuMemcpyBatchAsync */
    OMPBATCH_PATH_PER_COPY = 2,  /* one cuMemcpyAsync per copy */
    OMPBATCH_PATH_HOST = 4,      /* memcpy on the host backend */
    OMPBATCH_PATH_KERNEL = 8,    /* the library's copy kernel (staged strategy) */
    OMPBATCH_PATH_STAGED = 16    /* CPU pack or unpack through pinned staging */
} ompbatch_path;

/* Every field of ompbatch_stats after struct_size, in order: COUNT(field) for a uint64_t
 * count, PATHS(field) for the unsigned OR of ompbatch_path values. The list is the single
 * source of the struct; code that prints, sums or compares the statistics can expand it. */
#define OMPBATCH_STATS_LIST(COUNT, PATHS)                                                       \
    /* copies given to the batch, zero-byte ones included; counts from the add on, all other   \
     * fields from the last submit */                                                          \
    COUNT(copies_added)                                                                         \
    COUNT(copies_zero)     /* zero-byte copies skipped */                                       \
    COUNT(copies_planned)  /* copies after merging contiguous neighbours */                     \
    COUNT(attr_groups)     /* attribute entries passed to the driver, summed over calls */      \
    COUNT(sub_batches)     /* ordered sub-batches (dependency levels times size splits) */      \
    COUNT(driver_calls)    /* batch or per-copy driver calls made */                            \
    COUNT(bytes)           /* bytes in the plan */                                              \
    COUNT(copies_done)     /* planned copies enqueued successfully */                           \
    PATHS(paths)           /* OR of ompbatch_path values used */                                \
    COUNT(batch_calls)     /* the cuMemcpyBatchAsync calls among driver_calls */                \
    COUNT(staged_copies)   /* planned copies moved by the staged strategy */                    \
    COUNT(staged_bytes)    /* their bytes */                                                    \
    COUNT(kernel_launches) /* copy-kernel launches */                                           \
    /* staged copies sent direct because staging was not granted (OMPBATCH_STAGING_MB reached  \
     * or allocation failed) */                                                                \
    COUNT(staging_refused)                                                                      \
    /* 1 when the submit reused a plan: the previous submit's (the batch was reset and         \
     * refilled with the same copies: same pointers, sizes, map types and devices, in the same \
     * order) or a kept one of an earlier set of copies */                                     \
    COUNT(plan_reused)                                                                          \
    /* cuMemcpyBatchAsync calls that failed and whose copies were then sent one cuMemcpyAsync  \
     * each (OMPBATCH_VERBOSE=1 logs why) */                                                   \
    COUNT(batch_fallbacks)

typedef struct ompbatch_stats {
    size_t struct_size; /* sizeof(ompbatch_stats) before the call */
#define OMPBATCH_STATS_COUNT_(field) uint64_t field;
#define OMPBATCH_STATS_PATHS_(field) unsigned field;
    OMPBATCH_STATS_LIST(OMPBATCH_STATS_COUNT_, OMPBATCH_STATS_PATHS_)
#undef OMPBATCH_STATS_COUNT_
#undef OMPBATCH_STATS_PATHS_
} ompbatch_stats;

/* Copies the batch's statistics into *stats (struct_size must be set). copies_added counts the
 * copies added so far; every other field describes the last submit (zero after a reset).
 *
 * Parameters:
 *   batch  a batch, in any state.
 *   stats  where to write; stats->struct_size set to sizeof(ompbatch_stats). A smaller size
 *          (an older header) gets the fields that fit; a larger one (a newer header) gets
 *          zeros past this library's fields. struct_size keeps the caller's value.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      batch or stats is NULL;
 *   OMPBATCH_ERR_BAD_STATE         the batch was destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch, or stats->struct_size is smaller than
 *                                  the struct_size field itself.
 * Threads: one thread at a time per batch (it reads the batch).
 */
OMPBATCH_API int ompbatch_batch_get_stats(const ompbatch_batch *batch, ompbatch_stats *stats);

/* Writes a text description of the batch's plan (copies, attribute groups, merges,
 * sub-batches, paths) into buf, always NUL-terminated when size > 0. *needed (may be NULL)
 * receives the length without the NUL. Plans on demand if the batch was not submitted.
 * The text has a "plan:" line, a "strategy:" line per group the staged strategy could take
 * (with the cost model's predictions), and a "step N:" line per step followed by its
 * attribute entries and copies. Planning an open batch makes its next submit plan again.
 *
 * Parameters:
 *   batch   a batch, in any state: submitted, its last submit's plan; open, the copies added
 *           so far.
 *   buf     where to write; may be NULL when size is 0 (to ask for the length).
 *   size    bytes available at buf; a longer text is cut short, NUL-terminated.
 *   needed  receives the whole text's length without the NUL, or NULL.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      batch is NULL, or buf is NULL with size > 0;
 *   OMPBATCH_ERR_BAD_STATE         the batch was destroyed;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  batch is not a batch, or (open batch) a copy fails the
 *                                  checks of ompbatch_batch_submit;
 *   OMPBATCH_ERR_NO_MEMORY         out of host memory while planning;
 *   OMPBATCH_ERR_DRIVER            a driver query failed while planning.
 * Threads: one thread at a time per batch.
 */
OMPBATCH_API int ompbatch_batch_describe(ompbatch_batch *batch, char *buf, size_t size,
                                         size_t *needed);


/* ---------------------------------------------------------------------------------------- */
/* The OpenMP hook                                                                           */
/*                                                                                           */
/* Linked before the OpenMP runtime (-lompbatch on the link line of a clang offload program)  */
/* or preloaded (LD_PRELOAD=libompbatch.so), the library interposes libomptarget's data      */
/* entry points: it makes the transfers it can prove safe itself, one batch per construct,   */
/* and forwards everything else unchanged. docs/hook.md (and README.md, "The OpenMP hook")  */
/* says what is batched and what is forwarded. OMPBATCH_DISABLE=1 makes the hook a pure      */
/* pass-through.                                                                             */

typedef enum ompbatch_hook_state {
    OMPBATCH_HOOK_NOT_LOADED = 0, /* no offload program has called into the hook yet */
    OMPBATCH_HOOK_ACTIVE = 1,     /* batching */
    OMPBATCH_HOOK_PASS_THROUGH = 2 /* forwarding everything: disabled (OMPBATCH_DISABLE=1 or
                                      ompbatch_hook_set_enabled(0)), a runtime the hook does
                                      not know, OMP_TARGET_OFFLOAD=disabled,
                                      unified_shared_memory, LIBOMPTARGET_INFO or
                                      LIBOMPTARGET_DEBUG set to a non-zero level, or a target
                                      region built for a newer runtime (each said once on
                                      stderr at OMPBATCH_VERBOSE=1) */
} ompbatch_hook_state;

/* The hook's counters. They count while the hook is active, the constructs and regions of
 * offload devices (not those of the initial device, the host fallback, nor the runtime's own
 * calls back into the entry points); a pass-through hook counts nothing. */
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
    uint64_t regions_split;       /* target regions done as data begin + kernel + data end */
    uint64_t region_items;        /* map items of those regions */
    uint64_t region_batched;      /* their items whose `to` or `from` copy the hook made */
    /* Where the time went, in nanoseconds, measured only while OMPBATCH_STATS=1 (zero
     * otherwise). The phases nest: construct holds all the others but poll, block and unpack
     * of the library's own batches, which count here too. */
    uint64_t time_construct_ns;   /* the hook's whole handling of the constructs and regions */
    uint64_t time_runtime_ns;     /* in libomptarget's data entry points, what was forwarded */
    uint64_t time_kernel_ns;      /* in libomptarget's region entry point (launch and wait) */
    uint64_t time_query_ns;       /* asking libomptarget what it has mapped */
    uint64_t time_add_ns;         /* adding the copies to the construct's batch */
    uint64_t time_plan_ns;        /* planning them (nothing when a plan is reused) */
    uint64_t time_enqueue_ns;     /* packing, descriptors, driver calls and kernel launches */
    uint64_t time_poll_ns;        /* waiting for the stream by polling it */
    uint64_t time_block_ns;       /* waiting in cuStreamSynchronize once polling gave up */
    uint64_t time_unpack_ns;      /* copying staged bytes into pageable destinations */
    uint64_t regions_direct;      /* target regions whose mapped arrays the kernel got as device
                                     addresses, looked up by the hook instead of the runtime */
    uint64_t registrations;       /* mapped host ranges the hook registered with the driver
                                     (OMPBATCH_REGISTER_MB) */
    uint64_t bytes_registered;    /* bytes of those registrations */
} ompbatch_hook_stats;

/* Copies the hook's process-wide statistics into *stats (struct_size must be set): its state,
 * the runtime's LLVM major version and the counters since the start or the last
 * ompbatch_hook_reset_stats. OMPBATCH_STATS=1 prints the same figures on stderr at exit.
 *
 * Parameters:
 *   stats  where to write; stats->struct_size set to sizeof(ompbatch_hook_stats). A smaller
 *          size gets the fields that fit, a larger one zeros past this library's fields;
 *          struct_size keeps the caller's value.
 * Returns: OMPBATCH_OK, or
 *   OMPBATCH_ERR_NULL_POINTER      stats is NULL;
 *   OMPBATCH_ERR_INVALID_ARGUMENT  stats->struct_size is smaller than the struct_size field
 *                                  itself.
 * Threads: safe from any thread. Each counter is read atomically, the set of them is not one
 *   snapshot while other threads run constructs.
 */
OMPBATCH_API int ompbatch_hook_get_stats(ompbatch_hook_stats *stats);

/* Sets every counter of the hook's statistics to zero, paths included; state and
 * runtime_major are not counters and stay.
 *
 * Parameters: none.
 * Returns: OMPBATCH_OK. Never fails.
 * Threads: safe from any thread; counts of constructs running meanwhile may land before or
 *   after the reset.
 */
OMPBATCH_API int ompbatch_hook_reset_stats(void);

/* Turns batching on (1) or off (0) for the whole process, from then on: off, every call is
 * forwarded unchanged, as with OMPBATCH_DISABLE=1 (which wins: with it set, 1 is refused with
 * OMPBATCH_ERR_BAD_STATE). Meant for timing a program with and without the hook in one run;
 * call it between constructs, not while other threads are inside one. Returns the previous
 * setting (0 or 1) or a negative status.
 * Turning it on again after off forgets the hook's mirror of the runtime's mappings: what was
 * mapped while it was off is forwarded until it is mapped anew. Turning it off undoes the
 * hook's registrations of mapped ranges (OMPBATCH_REGISTER_MB), whose mappings it could no
 * longer see die. On means "batch where possible": a runtime the hook does not know still
 * keeps it a pass-through.
 *
 * Parameters:
 *   enabled  1 to batch, 0 to forward everything.
 * Returns: the previous setting, 0 or 1, or
 *   OMPBATCH_ERR_INVALID_ARGUMENT  enabled is neither 0 nor 1;
 *   OMPBATCH_ERR_BAD_STATE         enabled is 1 and OMPBATCH_DISABLE=1 is set.
 * Threads: safe from any thread; it takes the hook's lock exclusively, so it waits for data
 *   constructs and target regions in progress.
 */
OMPBATCH_API int ompbatch_hook_set_enabled(int enabled);

#ifdef __cplusplus
}
#endif

#endif /* OMPBATCH_H */
