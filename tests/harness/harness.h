/*
 * Test harness for ompbatch's GPU tests (C11, usable from C++).
 *
 * Buffers of every memory kind are allocated on a CUDA device through the library's own loaded
 * driver table (plugin/cuda/driver.h), so the tests use exactly the driver, primary context and
 * stream that the library uses. Device buffers are written and read synchronously on the
 * library's own stream of their device. Host data comes from the tests' seeded generator whose
 * seed is printed once per process so that a failure can be reproduced with
 * OMPBATCH_TEST_SEED=<seed>.
 *
 * Status: every function that can fail returns 0 on success or a negative OMPBATCH_ERR_* value
 * (OMPBATCH_ERR_DRIVER for a failed driver call, OMPBATCH_ERR_NO_DRIVER without a driver,
 * OMPBATCH_ERR_INVALID_ARGUMENT for a bad argument, OMPBATCH_ERR_NO_MEMORY when malloc fails),
 * and harness_last_error() then says which call failed and why. Every driver call's result is
 * checked.
 *
 * Threads: the functions may be called from any thread; a buffer belongs to one thread at a
 * time. ob_driver_reload_for_testing() invalidates every device, pinned and managed buffer and
 * every stream: free them all before a reload and allocate again after it. (The harness keeps
 * one reference to the primary context of each device it has used, so that a reload does not
 * make the driver destroy and re-create the context; nothing else may rely on that.)
 */
#ifndef OMPBATCH_TESTS_HARNESS_HARNESS_H
#define OMPBATCH_TESTS_HARNESS_HARNESS_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- driver availability ---------------------------------------------------------------- */

/* 1 when the library loaded the CUDA driver and it reports at least one device, else 0.
 * Loads the driver on first use (ob_driver_get). */
int harness_gpu_available(void);

/* Why harness_gpu_available() is 0 ("cannot open the CUDA driver: ...", "the driver reports no
 * CUDA device"), or "" when a GPU is available. Valid until the next call on this thread. */
const char *harness_skip_reason(void);

/* The calling thread's message for the last failed harness call ("" if none failed). Valid
 * until the next harness call on this thread that fails. */
const char *harness_last_error(void);

/* ---- buffers ------------------------------------------------------------------------------ */

typedef enum harness_mem_kind {
    HARNESS_MEM_PAGEABLE = 0, /* aligned malloc: memory the driver does not know */
    HARNESS_MEM_PINNED,       /* cuMemAllocHost: page-locked host memory */
    HARNESS_MEM_DEVICE,       /* cuMemAlloc: device memory, not addressable by the CPU */
    HARNESS_MEM_MANAGED,      /* cuMemAllocManaged(CU_MEM_ATTACH_GLOBAL): unified memory */
    HARNESS_MEM_KIND_COUNT
} harness_mem_kind;

/* "pageable", "pinned", "device", "managed"; "unknown" for other values. */
const char *harness_mem_kind_name(harness_mem_kind kind);

/* 1 for the kinds the CPU may read and write directly (pageable, pinned, managed). */
int harness_mem_kind_is_host(harness_mem_kind kind);

typedef struct harness_buffer {
    harness_mem_kind kind;
    int ordinal;  /* the CUDA device whose primary context owns the allocation */
    size_t bytes;
    void *ptr;    /* the address to give ompbatch (for device memory, the CUdeviceptr); NULL
                     when the buffer holds no allocation */
} harness_buffer;

/* Allocates `bytes` (> 0) of `kind` on CUDA device `ordinal` into *buffer, which must not hold
 * an allocation (zero-initialise it first). Pageable memory is 64-byte aligned and needs no
 * driver; the other kinds are allocated with the device's primary context current. The
 * contents are unspecified. On failure *buffer is left empty. */
int harness_alloc(harness_buffer *buffer, harness_mem_kind kind, int ordinal, size_t bytes);

/* Frees the allocation and empties *buffer. An empty buffer is fine (returns 0). */
int harness_free(harness_buffer *buffer);

/* Sets every byte of the buffer to `byte`: cuMemsetD8 (waited for) for device memory, memset
 * for the host kinds. */
int harness_poison(const harness_buffer *buffer, unsigned char byte);

/* Copies `bytes` from host memory `src` to buffer offset `offset` (cuMemcpyAsync on the
 * library's own stream of the buffer's device, then cuStreamSynchronize, for device memory;
 * memcpy for the host kinds). offset + bytes must lie inside the buffer. */
int harness_write(const harness_buffer *dst, size_t offset, const void *src, size_t bytes);

/* Copies `bytes` at buffer offset `offset` to host memory `dst`, synchronously as above. */
int harness_read(const harness_buffer *src, size_t offset, void *dst, size_t bytes);

/* ---- streams ------------------------------------------------------------------------------ */

/* Creates a stream (cuStreamCreate with `flags`, CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING)
 * on the primary context of device `ordinal`, as a user of ompbatch would. */
int harness_stream_create(int ordinal, unsigned int flags, CUstream *out);

/* Synchronises and destroys a stream made by harness_stream_create. NULL is fine. */
int harness_stream_destroy(int ordinal, CUstream stream);

/* ---- random data ------------------------------------------------------------------------ */

/* The process's seed: OMPBATCH_TEST_SEED (decimal or 0x hex) when set, else one taken from
 * the clock. Printed to stderr on first use, with how to reproduce the run. */
uint64_t harness_seed(void);

/* The tests' generator (tests/support/test_rng.h), as the harness's callers hold it. */
typedef struct harness_rng {
    uint64_t state;
} harness_rng;

/* Seeds a generator from `seed` and a name (e.g. the test's full name; may be NULL), so that
 * every test draws its own reproducible sequence whatever else runs in the process. */
void harness_rng_init(harness_rng *rng, uint64_t seed, const char *name);

uint64_t harness_rng_next(harness_rng *rng);

/* A value in [0, bound); 0 when bound is 0. */
uint64_t harness_rng_below(harness_rng *rng, uint64_t bound);

/* Fills `bytes` of host memory with random bytes. */
void harness_fill_random(harness_rng *rng, void *dst, size_t bytes);

/* ---- comparison --------------------------------------------------------------------------- */

/* Compares `bytes` of host memory byte by byte. Returns 0 when equal; otherwise 1, stores the
 * first differing offset in *first_diff (may be NULL) and leaves a message for
 * harness_last_error(): the first offset with both bytes, how many bytes differ, and the last
 * differing offset. */
int harness_compare(const void *expected, const void *actual, size_t bytes, size_t *first_diff);

/* Reads `bytes` of a buffer of any kind from offset 0 and compares them with `expected` as
 * harness_compare does. Returns 0 when equal, 1 when they differ, or a negative status when
 * the buffer could not be read. */
int harness_compare_buffer(const void *expected, const harness_buffer *actual, size_t bytes,
                           size_t *first_diff);

#ifdef __cplusplus
}
#endif

#endif /* OMPBATCH_TESTS_HARNESS_HARNESS_H */
