/* The GPU test harness: see harness.h for the contracts. */
#define _POSIX_C_SOURCE 200809L

#include "tests/harness/harness.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ompbatch.h"
#include "plugin/cuda/driver.h"
#include "tests/support/test_rng.h"

#define HARNESS_PAGEABLE_ALIGNMENT ((size_t)64)

/* ---- messages ------------------------------------------------------------------------------ */

static _Thread_local char last_message[1024];
static _Thread_local char skip_message[768];

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof(last_message), fmt, ap);
    va_end(ap);
    return status;
}

const char *harness_last_error(void)
{
    return last_message;
}

/* A library call failed and left its own message: keep it, with what the harness was doing. */
static int fail_library(int status, const char *doing)
{
    return fail(status, "%s: %s (%s)", doing, ompbatch_last_error(), ompbatch_err_name(status));
}

/* Checks one driver call: optional entry points may be missing from the table, and a failed
 * call is reported by name with the driver's error name and text. */
static int cu_check(const ob_driver *driver, CUresult result, const char *call)
{
    if (result == CUDA_SUCCESS)
        return OMPBATCH_OK;
    const char *name = NULL;
    const char *text = NULL;
    if (driver->fn.cuGetErrorName == NULL ||
        driver->fn.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL)
        name = "unknown CUresult";
    if (driver->fn.cuGetErrorString == NULL ||
        driver->fn.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == NULL)
        text = "no description";
    return fail(OMPBATCH_ERR_DRIVER, "%s failed: %s (%d: %s)", call, name, (int)result, text);
}

#define HARNESS_CU(driver, entry, ...)                                                          \
    ((driver)->fn.entry == NULL                                                                 \
         ? fail(OMPBATCH_ERR_DRIVER, "the driver table has no %s (driver version %d)", #entry,  \
                (driver)->version)                                                              \
         : cu_check((driver), (driver)->fn.entry(__VA_ARGS__), #entry))

/* ---- driver and contexts ----------------------------------------------------------------- */

int harness_gpu_available(void)
{
    const ob_driver *driver = ob_driver_get();
    return driver->loaded && driver->device_count >= 1;
}

const char *harness_skip_reason(void)
{
    const ob_driver *driver = ob_driver_get();
    if (!driver->loaded)
        snprintf(skip_message, sizeof(skip_message), "%s",
                 driver->reason[0] != '\0' ? driver->reason : "the driver did not load");
    else if (driver->device_count < 1)
        snprintf(skip_message, sizeof(skip_message),
                 "the driver %s (version %d) reports no CUDA device", driver->library,
                 driver->version);
    else
        skip_message[0] = '\0';
    return skip_message;
}

#define HARNESS_MAX_KEPT_DEVICES 64

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char kept[HARNESS_MAX_KEPT_DEVICES];

/* Holds one extra reference to the primary context of every device the harness uses, for the
 * life of the process. ob_driver_reload_for_testing() releases the library's reference; without
 * this one the driver would destroy the context and create it again (hundreds of milliseconds
 * on a large GPU) at every switch of batch form. Buffers must still be freed before a reload:
 * the harness does not promise that the context survives. */
static int keep_primary_context(const ob_driver *driver, int ordinal)
{
    if (ordinal < 0 || ordinal >= HARNESS_MAX_KEPT_DEVICES)
        return OMPBATCH_OK;
    int status = OMPBATCH_OK;
    pthread_mutex_lock(&kept_lock);
    if (!kept[ordinal]) {
        CUdevice device;
        CUcontext context;
        status = HARNESS_CU(driver, cuDeviceGet, &device, ordinal);
        if (status == OMPBATCH_OK)
            status = HARNESS_CU(driver, cuDevicePrimaryCtxRetain, &context, device);
        if (status == OMPBATCH_OK)
            kept[ordinal] = 1;
    }
    pthread_mutex_unlock(&kept_lock);
    return status;
}

/* Makes the primary context of `ordinal` current and hands back the loaded driver. */
static int enter_device(int ordinal, const ob_driver **out)
{
    const ob_driver *driver = ob_driver_get();
    if (!driver->loaded)
        return fail(OMPBATCH_ERR_NO_DRIVER, "no CUDA driver: %s", driver->reason);
    int status = ob_driver_push_context(ordinal);
    if (status != OMPBATCH_OK)
        return fail_library(status, "cannot make device context current");
    if ((status = keep_primary_context(driver, ordinal)) != OMPBATCH_OK) {
        (void)ob_driver_pop_context();
        return status;
    }
    *out = driver;
    return OMPBATCH_OK;
}

/* Pops the context pushed by enter_device; a failure is reported unless an earlier error of the
 * same operation is already being returned. */
static int leave_device(int status)
{
    int pop = ob_driver_pop_context();
    if (status != OMPBATCH_OK)
        return status;
    if (pop != OMPBATCH_OK)
        return fail_library(pop, "cannot pop the device context");
    return OMPBATCH_OK;
}

/* ---- buffers ------------------------------------------------------------------------------- */

const char *harness_mem_kind_name(harness_mem_kind kind)
{
    switch (kind) {
    case HARNESS_MEM_PAGEABLE:
        return "pageable";
    case HARNESS_MEM_PINNED:
        return "pinned";
    case HARNESS_MEM_DEVICE:
        return "device";
    case HARNESS_MEM_MANAGED:
        return "managed";
    case HARNESS_MEM_KIND_COUNT:
        break;
    }
    return "unknown";
}

int harness_mem_kind_is_host(harness_mem_kind kind)
{
    return kind == HARNESS_MEM_PAGEABLE || kind == HARNESS_MEM_PINNED ||
           kind == HARNESS_MEM_MANAGED;
}

static CUdeviceptr device_address(const harness_buffer *buffer, size_t offset)
{
    return (CUdeviceptr)((uintptr_t)buffer->ptr + offset);
}

int harness_alloc(harness_buffer *buffer, harness_mem_kind kind, int ordinal, size_t bytes)
{
    if (buffer == NULL)
        return fail(OMPBATCH_ERR_NULL_POINTER, "harness_alloc: buffer is NULL");
    if (buffer->ptr != NULL)
        return fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                    "harness_alloc: the buffer already holds %zu bytes of %s memory at %p",
                    buffer->bytes, harness_mem_kind_name(buffer->kind), buffer->ptr);
    if (bytes == 0)
        return fail(OMPBATCH_ERR_INVALID_ARGUMENT, "harness_alloc: bytes is 0");
    if ((unsigned)kind >= HARNESS_MEM_KIND_COUNT)
        return fail(OMPBATCH_ERR_INVALID_ARGUMENT, "harness_alloc: memory kind %d is unknown",
                    (int)kind);

    void *ptr = NULL;
    int status = OMPBATCH_OK;
    if (kind == HARNESS_MEM_PAGEABLE) {
        size_t rounded = (bytes + HARNESS_PAGEABLE_ALIGNMENT - 1) & ~(HARNESS_PAGEABLE_ALIGNMENT - 1);
        if (rounded < bytes)
            return fail(OMPBATCH_ERR_INVALID_ARGUMENT, "harness_alloc: %zu bytes is too large",
                        bytes);
        ptr = aligned_alloc(HARNESS_PAGEABLE_ALIGNMENT, rounded);
        if (ptr == NULL)
            return fail(OMPBATCH_ERR_NO_MEMORY, "aligned_alloc of %zu bytes failed", rounded);
    } else {
        const ob_driver *driver;
        if ((status = enter_device(ordinal, &driver)) != OMPBATCH_OK)
            return status;
        CUdeviceptr dptr = 0;
        switch (kind) {
        case HARNESS_MEM_PINNED:
            status = HARNESS_CU(driver, cuMemAllocHost, &ptr, bytes);
            break;
        case HARNESS_MEM_DEVICE:
            status = HARNESS_CU(driver, cuMemAlloc, &dptr, bytes);
            ptr = (void *)(uintptr_t)dptr;
            break;
        case HARNESS_MEM_MANAGED:
            status = HARNESS_CU(driver, cuMemAllocManaged, &dptr, bytes, CU_MEM_ATTACH_GLOBAL);
            ptr = (void *)(uintptr_t)dptr;
            break;
        case HARNESS_MEM_PAGEABLE:
        case HARNESS_MEM_KIND_COUNT:
            break;
        }
        status = leave_device(status);
        if (status != OMPBATCH_OK) {
            /* A pop that fails after a successful allocation leaves memory the harness cannot
             * free safely without its context; it is reported and leaked. */
            return status;
        }
        if (ptr == NULL)
            return fail(OMPBATCH_ERR_DRIVER, "allocating %zu bytes of %s memory returned NULL",
                        bytes, harness_mem_kind_name(kind));
    }
    buffer->kind = kind;
    buffer->ordinal = ordinal;
    buffer->bytes = bytes;
    buffer->ptr = ptr;
    return OMPBATCH_OK;
}

int harness_free(harness_buffer *buffer)
{
    if (buffer == NULL)
        return fail(OMPBATCH_ERR_NULL_POINTER, "harness_free: buffer is NULL");
    if (buffer->ptr == NULL)
        return OMPBATCH_OK;
    int status = OMPBATCH_OK;
    if (buffer->kind == HARNESS_MEM_PAGEABLE) {
        free(buffer->ptr);
    } else {
        const ob_driver *driver;
        if ((status = enter_device(buffer->ordinal, &driver)) != OMPBATCH_OK)
            return status;
        if (buffer->kind == HARNESS_MEM_PINNED)
            status = HARNESS_CU(driver, cuMemFreeHost, buffer->ptr);
        else
            status = HARNESS_CU(driver, cuMemFree, device_address(buffer, 0));
        if ((status = leave_device(status)) != OMPBATCH_OK)
            return status;
    }
    memset(buffer, 0, sizeof(*buffer));
    return OMPBATCH_OK;
}

static int check_range(const char *call, const harness_buffer *buffer, size_t offset,
                       size_t bytes)
{
    if (buffer == NULL || buffer->ptr == NULL)
        return fail(OMPBATCH_ERR_NULL_POINTER, "%s: the buffer is %s", call,
                    buffer == NULL ? "NULL" : "empty");
    if (offset > buffer->bytes || bytes > buffer->bytes - offset)
        return fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                    "%s: offset %zu + %zu bytes is outside the %zu-byte %s buffer", call, offset,
                    bytes, buffer->bytes, harness_mem_kind_name(buffer->kind));
    return OMPBATCH_OK;
}

int harness_poison(const harness_buffer *buffer, unsigned char byte)
{
    int status = check_range("harness_poison", buffer, 0, 0);
    if (status != OMPBATCH_OK)
        return status;
    if (harness_mem_kind_is_host(buffer->kind)) {
        memset(buffer->ptr, byte, buffer->bytes);
        return OMPBATCH_OK;
    }
    const ob_driver *driver;
    if ((status = enter_device(buffer->ordinal, &driver)) != OMPBATCH_OK)
        return status;
    /* cuMemsetD8 runs on the legacy default stream and may return before it is done; the
     * library's own stream is non-blocking and does not wait for it, so wait here. */
    status = HARNESS_CU(driver, cuMemsetD8, device_address(buffer, 0), byte, buffer->bytes);
    if (status == OMPBATCH_OK)
        status = HARNESS_CU(driver, cuStreamSynchronize, CU_STREAM_LEGACY);
    return leave_device(status);
}

/* One synchronous copy between host memory and a device buffer on the library's own stream. */
static int device_copy(const harness_buffer *buffer, CUdeviceptr dst, CUdeviceptr src,
                       size_t bytes)
{
    CUstream stream = NULL;
    int status = ob_driver_own_stream(buffer->ordinal, &stream);
    if (status != OMPBATCH_OK)
        return fail_library(status, "cannot get the library's stream");
    const ob_driver *driver;
    if ((status = enter_device(buffer->ordinal, &driver)) != OMPBATCH_OK)
        return status;
    status = HARNESS_CU(driver, cuMemcpyAsync, dst, src, bytes, stream);
    if (status == OMPBATCH_OK)
        status = HARNESS_CU(driver, cuStreamSynchronize, stream);
    return leave_device(status);
}

int harness_write(const harness_buffer *dst, size_t offset, const void *src, size_t bytes)
{
    int status = check_range("harness_write", dst, offset, bytes);
    if (status != OMPBATCH_OK)
        return status;
    if (bytes == 0)
        return OMPBATCH_OK;
    if (src == NULL)
        return fail(OMPBATCH_ERR_NULL_POINTER, "harness_write: src is NULL");
    if (harness_mem_kind_is_host(dst->kind)) {
        memcpy((char *)dst->ptr + offset, src, bytes);
        return OMPBATCH_OK;
    }
    return device_copy(dst, device_address(dst, offset), (CUdeviceptr)(uintptr_t)src, bytes);
}

int harness_read(const harness_buffer *src, size_t offset, void *dst, size_t bytes)
{
    int status = check_range("harness_read", src, offset, bytes);
    if (status != OMPBATCH_OK)
        return status;
    if (bytes == 0)
        return OMPBATCH_OK;
    if (dst == NULL)
        return fail(OMPBATCH_ERR_NULL_POINTER, "harness_read: dst is NULL");
    if (harness_mem_kind_is_host(src->kind)) {
        memcpy(dst, (const char *)src->ptr + offset, bytes);
        return OMPBATCH_OK;
    }
    return device_copy(src, (CUdeviceptr)(uintptr_t)dst, device_address(src, offset), bytes);
}

/* ---- streams ------------------------------------------------------------------------------- */

int harness_stream_create(int ordinal, unsigned int flags, CUstream *out)
{
    if (out == NULL)
        return fail(OMPBATCH_ERR_NULL_POINTER, "harness_stream_create: out is NULL");
    *out = NULL;
    const ob_driver *driver;
    int status = enter_device(ordinal, &driver);
    if (status != OMPBATCH_OK)
        return status;
    CUstream stream = NULL;
    status = HARNESS_CU(driver, cuStreamCreate, &stream, flags);
    if ((status = leave_device(status)) != OMPBATCH_OK)
        return status;
    *out = stream;
    return OMPBATCH_OK;
}

int harness_stream_destroy(int ordinal, CUstream stream)
{
    if (stream == NULL)
        return OMPBATCH_OK;
    const ob_driver *driver;
    int status = enter_device(ordinal, &driver);
    if (status != OMPBATCH_OK)
        return status;
    status = HARNESS_CU(driver, cuStreamSynchronize, stream);
    /* Destroy even when the synchronisation failed, and report the first error. */
    int destroyed = HARNESS_CU(driver, cuStreamDestroy, stream);
    if (status == OMPBATCH_OK)
        status = destroyed;
    return leave_device(status);
}

/* ---- random data --------------------------------------------------------------------------- */

static pthread_once_t seed_once = PTHREAD_ONCE_INIT;
static uint64_t process_seed;

static void read_seed(void)
{
    const char *value = getenv("OMPBATCH_TEST_SEED");
    if (ob_test_seed_parse(value, &process_seed)) {
        fprintf(stderr, "harness: OMPBATCH_TEST_SEED=%" PRIu64 " (from the environment)\n",
                process_seed);
        return;
    }
    if (value != NULL && value[0] != '\0')
        fprintf(stderr, "harness: ignoring OMPBATCH_TEST_SEED=\"%s\": expected an unsigned "
                        "integer\n", value);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    process_seed = ob_test_mix((uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec) ^
                   (uint64_t)getpid();
    fprintf(stderr, "harness: OMPBATCH_TEST_SEED=%" PRIu64
                    " (from the clock; set it in the environment to reproduce this run)\n",
            process_seed);
}

uint64_t harness_seed(void)
{
    pthread_once(&seed_once, read_seed);
    return process_seed;
}

void harness_rng_init(harness_rng *rng, uint64_t seed, const char *name)
{
    /* Each test's stream depends only on the seed and its name. */
    rng->state = ob_test_rng_make(seed, ob_test_salt(name)).state;
}

uint64_t harness_rng_next(harness_rng *rng)
{
    ob_test_rng r = {rng->state};
    uint64_t x = ob_test_rng_next(&r);
    rng->state = r.state;
    return x;
}

uint64_t harness_rng_below(harness_rng *rng, uint64_t bound)
{
    ob_test_rng r = {rng->state};
    uint64_t x = ob_test_rng_below(&r, bound);
    rng->state = r.state;
    return x;
}

void harness_fill_random(harness_rng *rng, void *dst, size_t bytes)
{
    ob_test_rng r = {rng->state};
    ob_test_rng_fill(&r, dst, bytes);
    rng->state = r.state;
}

/* ---- comparison ---------------------------------------------------------------------------- */

int harness_compare(const void *expected, const void *actual, size_t bytes, size_t *first_diff)
{
    if (bytes == 0 || memcmp(expected, actual, bytes) == 0)
        return 0;
    const unsigned char *e = expected;
    const unsigned char *a = actual;
    size_t first = SIZE_MAX, last = 0, count = 0;
    for (size_t i = 0; i < bytes; i++) {
        if (e[i] == a[i])
            continue;
        if (first == SIZE_MAX)
            first = i;
        last = i;
        count++;
    }
    if (first_diff != NULL)
        *first_diff = first;
    fail(1,
         "byte %zu of %zu differs: expected 0x%02x, got 0x%02x; %zu byte(s) differ in all, "
         "the last at %zu",
         first, bytes, e[first], a[first], count, last);
    return 1;
}

int harness_compare_buffer(const void *expected, const harness_buffer *actual, size_t bytes,
                           size_t *first_diff)
{
    int status = check_range("harness_compare_buffer", actual, 0, bytes);
    if (status != OMPBATCH_OK)
        return status;
    if (harness_mem_kind_is_host(actual->kind))
        return harness_compare(expected, actual->ptr, bytes, first_diff);
    void *copy = malloc(bytes ? bytes : 1);
    if (copy == NULL)
        return fail(OMPBATCH_ERR_NO_MEMORY, "harness_compare_buffer: cannot allocate %zu bytes",
                    bytes);
    status = harness_read(actual, 0, copy, bytes);
    if (status == OMPBATCH_OK)
        status = harness_compare(expected, copy, bytes, first_diff);
    free(copy);
    return status;
}
