/*
 * Self-test of the fake CUDA driver: loads it the way ompbatch does (dlopen, cuGetProcAddress_v2
 * for every entry point of the X-macro list) and checks the rules the library's tests rely on.
 *
 * Usage: fake_cuda_selftest [path/to/libfake_cuda.so]   (default: $OMPBATCH_CUDA_LIBRARY)
 *
 * The fake's state is process-wide, so the tests run in order and each leaves the context stack
 * and the streams as it found them. Device memory of the fake is host memory; only this test
 * reads it directly, to see when bytes land.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/cuda/driver_api.h"
#include "tests/fake_cuda/fake_cuda_control.h"
#include "tests/support/check.h"

static struct fake_cuda_control ctl;
static PFN_cuGetProcAddress_v12000 get_proc;

static struct driver {
#define DRIVER_FIELD(field, symbol, version, need) PFN_##symbol##_v##version field;
    OMPBATCH_DRIVER_ENTRY_POINTS(DRIVER_FIELD)
#undef DRIVER_FIELD
} cu;

/* The C tests' one check (tests/support/check.h); failures counts them. */
#define failures ((int)ob_check_failures())
#define CHECK(cond) OB_CHECK(cond, "CHECK(%s) failed", #cond)
#define CHECK_EQ(a, b) OB_CHECK_EQ(a, b)

#define CHECK_CU(expected, call)                                                                \
    do {                                                                                        \
        CUresult r_ = (call);                                                                   \
        OB_CHECK(r_ == (expected), "%s returned %d, expected %d (fake: %s)", #call, (int)r_,    \
                 (int)(expected), ctl.last_failure());                                          \
    } while (0)

#define OK(call) CHECK_CU(CUDA_SUCCESS, call)

/* ---------------------------------------------------------------------------------------------
 * Helpers.
 */

static CUcontext ctx0, ctx1;
static CUstream stream;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static unsigned char random_byte(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned char)rng_state;
}

static void *checked_malloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static unsigned char *random_buffer(size_t n)
{
    unsigned char *p = checked_malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = random_byte();
    return p;
}

static unsigned char *poisoned_buffer(size_t n)
{
    unsigned char *p = checked_malloc(n);
    memset(p, 0x5A, n);
    return p;
}

static bool all_bytes(const unsigned char *p, size_t n, unsigned char value)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != value)
            return false;
    return true;
}

static CUdeviceptr dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

static void *hptr(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

static struct fake_cuda_stats stats(void)
{
    struct fake_cuda_stats s;
    ctl.get_stats(&s);
    return s;
}

static CUmemcpyAttributes attr(CUmemcpySrcAccessOrder order)
{
    CUmemcpyAttributes a;
    memset(&a, 0, sizeof a);
    a.srcAccessOrder = order;
    return a;
}

/* A batch under construction: up to 64 copies, one attribute unless the test adds more. */
struct batch {
    CUdeviceptr dsts[64], srcs[64];
    size_t sizes[64];
    size_t count;
    CUmemcpyAttributes attrs[8];
    size_t idxs[8];
    size_t nattrs;
};

static void batch_init(struct batch *b, CUmemcpySrcAccessOrder order)
{
    memset(b, 0, sizeof *b);
    b->attrs[0] = attr(order);
    b->nattrs = 1;
}

static void batch_add(struct batch *b, void *dst, const void *src, size_t n)
{
    b->dsts[b->count] = dptr(dst);
    b->srcs[b->count] = dptr(src);
    b->sizes[b->count] = n;
    b->count++;
}

static CUresult batch_v13(struct batch *b, CUstream s)
{
    return cu.cuMemcpyBatchAsync_v13000(b->dsts, b->srcs, b->sizes, b->count, b->attrs, b->idxs,
                                        b->nattrs, s);
}

static CUresult batch_v12(struct batch *b, CUstream s, size_t *fail_idx)
{
    return cu.cuMemcpyBatchAsync_v12080(b->dsts, b->srcs, b->sizes, b->count, b->attrs, b->idxs,
                                        b->nattrs, fail_idx, s);
}

/* ---------------------------------------------------------------------------------------------
 * Loading.
 */

static int load(const char *path)
{
    ctl = fake_cuda_control_open(path);
    if (ctl.handle == NULL) {
        fprintf(stderr, "cannot open the fake: %s\n", ctl.error);
        return -1;
    }
    void *sym = dlsym(ctl.handle, "cuGetProcAddress_v2");
    if (sym == NULL) {
        fprintf(stderr, "cuGetProcAddress_v2 is not exported\n");
        return -1;
    }
    memcpy(&get_proc, &sym, sizeof sym);
    /* Whatever the environment says, these tests expect the defaults. */
    ctl.set_driver_version(13000);
    ctl.set_device_count(2);
    ctl.set_init_result(CUDA_SUCCESS);
    ctl.set_strict_dependencies(1);
    ctl.set_unavailable_result(CUDA_ERROR_NOT_FOUND);
    ctl.set_any_reads_early(0);
#define DRIVER_RESOLVE(field, symbol, version, need)                                         \
    do {                                                                                     \
        void *fn = NULL;                                                                     \
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;            \
        OK(get_proc(#symbol, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st));               \
        CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);                                           \
        CHECK(fn != NULL);                                                                   \
        memcpy(&cu.field, &fn, sizeof fn);                                                   \
    } while (0);
    OMPBATCH_DRIVER_ENTRY_POINTS(DRIVER_RESOLVE)
#undef DRIVER_RESOLVE
    return failures == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------------------------------------
 * Tests.
 */

static void test_calls_before_cuinit(void)
{
    int n = -1, version = 0;
    const char *text = NULL;
    CHECK_CU(CUDA_ERROR_NOT_INITIALIZED, cu.cuDeviceGetCount(&n));
    CHECK_CU(CUDA_ERROR_NOT_INITIALIZED, cu.cuMemAlloc(&(CUdeviceptr){0}, 16));
    OK(cu.cuDriverGetVersion(&version));
    CHECK_EQ(version, 13000);
    OK(cu.cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &text));
    CHECK(text != NULL && strcmp(text, "CUDA_ERROR_INVALID_VALUE") == 0);
}

static void test_cuinit_failure_and_success(void)
{
    int n = -1;
    ctl.set_init_result(CUDA_ERROR_NO_DEVICE);
    CHECK_CU(CUDA_ERROR_NO_DEVICE, cu.cuInit(0));
    CHECK_CU(CUDA_ERROR_NOT_INITIALIZED, cu.cuDeviceGetCount(&n));
    ctl.set_init_result(CUDA_SUCCESS);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuInit(1));
    OK(cu.cuInit(0));
    OK(cu.cuDeviceGetCount(&n));
    CHECK_EQ(n, 2);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetCount(NULL));
}

static CUresult lookup(const char *symbol, int version, void **fn,
                       CUdriverProcAddressQueryResult *status)
{
    return get_proc(symbol, fn, version, CU_GET_PROC_ADDRESS_DEFAULT, status);
}

static void test_proc_address_versions(void)
{
    void *fn = &fn;
    void *v12080, *v13000;
    memcpy(&v12080, &cu.cuMemcpyBatchAsync_v12080, sizeof fn);
    memcpy(&v13000, &cu.cuMemcpyBatchAsync_v13000, sizeof fn);
    CUdriverProcAddressQueryResult st;
    CHECK(v12080 != v13000);

    CHECK_CU(CUDA_ERROR_NOT_FOUND, lookup("cuNoSuchThing", 13000, &fn, &st));
    CHECK(fn == NULL);
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    OK(lookup("cuMemcpyBatchAsync", 13000, &fn, &st));
    CHECK(fn == v13000);
    OK(lookup("cuMemcpyBatchAsync", 12090, &fn, &st));
    CHECK(fn == v12080);
    OK(lookup("cuMemcpyBatchAsync", 12080, &fn, &st));
    CHECK(fn == v12080);
    CHECK_CU(CUDA_ERROR_NOT_FOUND, lookup("cuMemcpyBatchAsync", 12070, &fn, &st));
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE,
             get_proc("cuInit", &fn, 13000, 0x100, &st));

    /* A 12.8 driver has only the v12080 form and refuses requests from the future. */
    ctl.set_driver_version(12080);
    CHECK_CU(CUDA_ERROR_NOT_FOUND, lookup("cuMemcpyBatchAsync", 13000, &fn, &st));
    CHECK(fn == NULL);
    OK(lookup("cuMemcpyBatchAsync", 12080, &fn, &st));
    CHECK(fn == v12080);

    /* A 12.4 driver has no batch copy at all. */
    ctl.set_driver_version(12040);
    CHECK_CU(CUDA_ERROR_NOT_FOUND, lookup("cuMemcpyBatchAsync", 12080, &fn, &st));
    CHECK_CU(CUDA_ERROR_NOT_FOUND, lookup("cuMemcpyBatchAsync", 12040, &fn, &st));
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    OK(lookup("cuMemcpyAsync", 4000, &fn, &st));
    ctl.set_driver_version(13000);

    /* The form cuda.h documents: success with a NULL function. */
    ctl.set_unavailable_result(CUDA_SUCCESS);
    fn = &fn;
    OK(lookup("cuNoSuchThing", 13000, &fn, &st));
    CHECK(fn == NULL);
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ctl.set_unavailable_result(CUDA_ERROR_NOT_FOUND);

    PFN_cuGetProcAddress_v11030 get_proc_v1;
    void *sym = dlsym(ctl.handle, "cuGetProcAddress");
    CHECK(sym != NULL);
    memcpy(&get_proc_v1, &sym, sizeof sym);
    if (sym != NULL) {
        OK(get_proc_v1("cuMemcpyBatchAsync", &fn, 13000, 0));
        CHECK(fn == v13000);
    }
}

static void *thread_without_context(void *arg)
{
    CUstream s;
    *(CUresult *)arg = cu.cuStreamCreate(&s, 0);
    return NULL;
}

static void test_devices_and_contexts(void)
{
    CUdevice dev = -1;
    char name[64];
    CUcontext c = NULL, again = NULL;
    OK(cu.cuDeviceGet(&dev, 1));
    CHECK_EQ(dev, 1);
    CHECK_CU(CUDA_ERROR_INVALID_DEVICE, cu.cuDeviceGet(&dev, 2));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGet(NULL, 0));
    OK(cu.cuDeviceGetName(name, sizeof name, 1));
    CHECK(strcmp(name, "Fake CUDA Device 1") == 0);
    OK(cu.cuDeviceGetName(name, 5, 0));
    CHECK(strcmp(name, "Fake") == 0);

    OK(cu.cuDevicePrimaryCtxRetain(&c, 0));
    OK(cu.cuDevicePrimaryCtxRetain(&again, 0));
    CHECK(c == again && c != NULL);
    CHECK_EQ(ctl.primary_ctx_refcount(0), 2);
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, cu.cuStreamCreate(&stream, 0));
    OK(cu.cuCtxPushCurrent(c));
    CHECK_EQ(ctl.ctx_stack_depth(), 1);
    OK(cu.cuCtxPopCurrent(&again));
    CHECK(again == c);
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxPopCurrent(NULL));
    OK(cu.cuDevicePrimaryCtxRelease(0));
    OK(cu.cuDevicePrimaryCtxRelease(0));
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, cu.cuDevicePrimaryCtxRelease(0));
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxPushCurrent(c));

    /* The contexts the remaining tests use: device 0 current, device 1 retained. */
    OK(cu.cuDevicePrimaryCtxRetain(&ctx0, 0));
    OK(cu.cuDevicePrimaryCtxRetain(&ctx1, 1));
    OK(cu.cuCtxPushCurrent(ctx0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuStreamCreate(&stream, 0x8));
    OK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    pthread_t t;
    CUresult other = CUDA_SUCCESS;
    CHECK(pthread_create(&t, NULL, thread_without_context, &other) == 0);
    pthread_join(t, NULL);
    CHECK_EQ(other, CUDA_ERROR_INVALID_CONTEXT);
}

static void query(CUdeviceptr p, unsigned int *type, unsigned int *managed, int *ordinal,
                  CUdeviceptr *start, size_t *size, CUcontext *ctx)
{
    CUpointer_attribute which[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,       CU_POINTER_ATTRIBUTE_CONTEXT,
    };
    void *data[] = {type, managed, ordinal, start, size, ctx};
    OK(cu.cuPointerGetAttributes(6, which, data, p));
}

static void test_memory_and_pointer_attributes(void)
{
    CUdeviceptr dev = 0, managed = 0;
    void *pinned = NULL;
    unsigned int type, is_managed;
    int ordinal;
    CUdeviceptr start;
    size_t size;
    CUcontext owner;

    OK(cu.cuMemAlloc(&dev, 1000));
    OK(cu.cuMemAllocHost(&pinned, 300));
    OK(cu.cuMemAllocManaged(&managed, 500, CU_MEM_ATTACH_GLOBAL));
    CHECK_EQ(dev % 256, 0);
    CHECK(!all_bytes(hptr(dev), 1000, 0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemAlloc(&start, 0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemAllocManaged(&start, 16, 0));

    query(dev + 10, &type, &is_managed, &ordinal, &start, &size, &owner);
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CHECK_EQ(is_managed, 0);
    CHECK_EQ(ordinal, 0);
    CHECK_EQ(start, dev);
    CHECK_EQ(size, 1000);
    CHECK(owner == ctx0);
    query(dptr(pinned) + 299, &type, &is_managed, &ordinal, &start, &size, &owner);
    CHECK_EQ(type, CU_MEMORYTYPE_HOST);
    CHECK_EQ(start, dptr(pinned));
    query(managed, &type, &is_managed, &ordinal, &start, &size, &owner);
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CHECK_EQ(is_managed, 1);
    int on_stack = 0;
    query(dptr(&on_stack), &type, &is_managed, &ordinal, &start, &size, &owner);
    CHECK_EQ(type, 0);
    CHECK_EQ(is_managed, 0);
    CHECK_EQ(ordinal, CU_DEVICE_INVALID);
    CHECK_EQ(start, 0);
    CHECK_EQ(size, 0);
    CHECK(owner == NULL);
    query(dev + 1000, &type, &is_managed, &ordinal, &start, &size, &owner);
    CHECK(start != dev);
    CUpointer_attribute tokens = CU_POINTER_ATTRIBUTE_P2P_TOKENS;
    void *data[] = {&size};
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuPointerGetAttributes(1, &tokens, data, dev));

    OK(cu.cuMemsetD8(dev, 0x11, 1000));
    CHECK(all_bytes(hptr(dev), 1000, 0x11));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD8(dev + 1, 0, 1000));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD8(dptr(&on_stack), 0, 1));

    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemFreeHost(hptr(dev)));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(dptr(pinned)));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(dev + 8));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(dptr(&on_stack)));
    OK(cu.cuMemFree(dev));
    OK(cu.cuMemFree(managed));
    OK(cu.cuMemFreeHost(pinned));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(dev));
    CHECK_EQ(stats().live_allocations, 0);
}

static bool disjoint(CUdeviceptr a, size_t na, CUdeviceptr b, size_t nb)
{
    return a + na <= b || b + nb <= a;
}

static void test_allocations_are_disjoint_and_freed_memory_is_refused(void)
{
    CUdeviceptr d[3] = {0};
    size_t n[3] = {100, 70000, 4096};
    for (int i = 0; i < 3; i++)
        OK(cu.cuMemAlloc(&d[i], n[i]));
    OK(cu.cuMemFree(d[1]));
    CUdeviceptr again = 0;
    OK(cu.cuMemAlloc(&again, 5000));
    CHECK(disjoint(again, 5000, d[0], n[0]) && disjoint(again, 5000, d[2], n[2]));
    CHECK(disjoint(d[0], n[0], d[2], n[2]));

    unsigned char host[64];
    OK(cu.cuMemFree(again));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyAsync(dptr(host), again, 64, stream));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyAsync(dptr(host), d[0] + 200, 64, stream));
    OK(cu.cuMemFree(d[0]));
    OK(cu.cuMemFree(d[2]));

    /* Malloc'd memory never comes from where fake allocations live. */
    void *heap = checked_malloc(100);
    unsigned int type = 99;
    CUpointer_attribute which = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data[] = {&type};
    OK(cu.cuPointerGetAttributes(1, &which, data, dptr(heap)));
    CHECK_EQ(type, 0);
    free(heap);
}

static void test_memcpy_async_is_lazy(void)
{
    enum { N = 4096 };
    unsigned char *src = random_buffer(N), *dst = poisoned_buffer(N);
    CUdeviceptr dev = 0;
    OK(cu.cuMemAlloc(&dev, N));
    OK(cu.cuMemcpyAsync(dev, dptr(src), N, stream));
    OK(cu.cuMemcpyAsync(dptr(dst), dev, N, stream));
    CHECK_EQ(stats().pending_copies, 2);
    CHECK(all_bytes(dst, N, 0x5A));
    OK(cu.cuStreamSynchronize(stream));
    CHECK(memcmp(dst, src, N) == 0);
    CHECK_EQ(stats().pending_copies, 0);

    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyAsync(dev + 1, dptr(src), N, stream));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, cu.cuMemcpyAsync(dev, dptr(src), N, (CUstream)src));

    /* The legacy stream is allowed here, and counted. */
    memset(dst, 0x5A, N);
    OK(cu.cuMemcpyAsync(dptr(dst), dev, N, NULL));
    CHECK(all_bytes(dst, N, 0x5A));
    OK(cu.cuStreamSynchronize(NULL));
    CHECK(memcmp(dst, src, N) == 0);
    CHECK_EQ(stats().legacy_stream_copies, 1);
    OK(cu.cuMemFree(dev));
    free(src);
    free(dst);
}

/* Pieces of random sizes into one device buffer and back, in both forms. */
static void test_batch_round_trip(void)
{
    enum { PIECES = 48, MAX_PIECE = 200 };
    size_t offsets[PIECES + 1] = {0};
    for (int i = 0; i < PIECES; i++)
        offsets[i + 1] = offsets[i] + 1 + random_byte() % MAX_PIECE;
    size_t total = offsets[PIECES];
    unsigned char *src = random_buffer(total), *back = poisoned_buffer(total);
    CUdeviceptr dev = 0;
    OK(cu.cuMemAlloc(&dev, total));
    unsigned char *garbage = checked_malloc(total);
    memcpy(garbage, hptr(dev), total);

    struct batch b;
    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    for (int i = 0; i < PIECES; i++)
        batch_add(&b, (unsigned char *)hptr(dev) + offsets[i], src + offsets[i],
                  offsets[i + 1] - offsets[i]);
    b.attrs[1] = attr(CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
    b.attrs[1].flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
    b.idxs[1] = 10;
    b.nattrs = 2;
    OK(batch_v13(&b, stream));
    CHECK(memcmp(hptr(dev), garbage, total) == 0);
    CHECK_EQ(stats().pending_copies, PIECES);

    struct fake_cuda_batch_record rec;
    CHECK_EQ(ctl.get_batch_record(0, &rec), 0);
    CHECK_EQ(rec.form, 13000);
    CHECK_EQ(rec.result, CUDA_SUCCESS);
    CHECK_EQ(rec.count, PIECES);
    CHECK_EQ(rec.num_attrs, 2);
    CHECK_EQ(rec.attrs_idxs[1], 10);
    CHECK_EQ(rec.attrs[1].srcAccessOrder, CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
    CHECK_EQ(rec.total_bytes, total);
    CHECK_EQ(rec.sizes[5], offsets[6] - offsets[5]);
    CHECK(rec.stream == stream);

    OK(cu.cuStreamSynchronize(stream));
    CHECK(memcmp(hptr(dev), src, total) == 0);

    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    for (int i = 0; i < PIECES; i++)
        batch_add(&b, back + offsets[i], (unsigned char *)hptr(dev) + offsets[i],
                  offsets[i + 1] - offsets[i]);
    size_t fail_idx = 0;
    OK(batch_v12(&b, stream, &fail_idx));
    CHECK_EQ(fail_idx, SIZE_MAX);
    CHECK(all_bytes(back, total, 0x5A));
    OK(cu.cuStreamSynchronize(stream));
    CHECK(memcmp(back, src, total) == 0);
    CHECK_EQ(ctl.get_batch_record(0, &rec), 0);
    CHECK_EQ(rec.form, 12080);
    CHECK_EQ(ctl.call_count("cuMemcpyBatchAsync"), 2);
    CHECK_EQ(ctl.call_count("cuMemcpyBatchAsync_v12080"), 1);

    OK(cu.cuMemFree(dev));
    free(src);
    free(back);
    free(garbage);
}

static void test_during_api_call_reads_source_at_call(void)
{
    enum { N = 256 };
    unsigned char *first = random_buffer(4 * N), *second = random_buffer(4 * N);
    unsigned char *src = checked_malloc(4 * N), *dst = poisoned_buffer(4 * N);
    memcpy(src, first, 4 * N);
    struct batch b;
    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL);
    for (int i = 0; i < 4; i++)
        batch_add(&b, dst + i * N, src + i * N, N);
    b.attrs[1] = attr(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    b.idxs[1] = 2;
    b.nattrs = 2;
    unsigned long long early = stats().early_reads;
    OK(batch_v13(&b, stream));
    CHECK_EQ(stats().early_reads - early, 2);
    memcpy(src, second, 4 * N); /* the caller reuses the source right after the call */
    CHECK(all_bytes(dst, 4 * N, 0x5A));
    OK(cu.cuStreamSynchronize(stream));
    CHECK(memcmp(dst, first, 2 * N) == 0);
    CHECK(memcmp(dst + 2 * N, second + 2 * N, 2 * N) == 0);
    free(first);
    free(second);
    free(src);
    free(dst);
}

static void expect_shape_error(struct batch *b, const char *what)
{
    size_t fail_idx = 0;
    unsigned long long before = stats().copies_enqueued;
    CUresult r = batch_v12(b, stream, &fail_idx);
    if (r != CUDA_ERROR_INVALID_VALUE || fail_idx != SIZE_MAX) {
        OB_CHECK(0, "batch with %s: result %d, failIdx %zu (fake: %s)", what, (int)r, fail_idx,
                 ctl.last_failure());
    }
    CHECK_EQ(stats().copies_enqueued, before);
}

static void test_batch_validation(void)
{
    unsigned char src[64], dst[64];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = random_byte();
    struct batch good, b;
    batch_init(&good, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    for (int i = 0; i < 4; i++)
        batch_add(&good, dst + 16 * i, src + 16 * i, 16);

    b = good, b.count = 0;
    expect_shape_error(&b, "count 0");
    b = good, b.nattrs = 0;
    expect_shape_error(&b, "numAttrs 0");
    b = good, b.nattrs = 5;
    expect_shape_error(&b, "numAttrs > count");
    b = good, b.idxs[0] = 1;
    expect_shape_error(&b, "attrsIdxs[0] != 0");
    b = good, b.nattrs = 3, b.idxs[1] = 2, b.idxs[2] = 2;
    b.attrs[1] = b.attrs[2] = b.attrs[0];
    expect_shape_error(&b, "attrsIdxs not increasing");
    b = good, b.nattrs = 2, b.idxs[1] = 4, b.attrs[1] = b.attrs[0];
    expect_shape_error(&b, "attrsIdxs past count");
    b = good, b.attrs[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    expect_shape_error(&b, "srcAccessOrder INVALID");
    b = good, b.attrs[0].srcAccessOrder = (CUmemcpySrcAccessOrder)7;
    expect_shape_error(&b, "srcAccessOrder 7");
    b = good, b.attrs[0].flags = 2;
    expect_shape_error(&b, "unknown flags");
    b = good, b.attrs[0].dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE,
    b.attrs[0].dstLocHint.id = 5;
    expect_shape_error(&b, "a hint naming device 5");

    CHECK_CU(CUDA_ERROR_INVALID_VALUE,
             cu.cuMemcpyBatchAsync_v13000(good.dsts, NULL, good.sizes, 4, good.attrs, good.idxs,
                                          1, stream));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE,
             cu.cuMemcpyBatchAsync_v12080(good.dsts, good.srcs, good.sizes, 4, good.attrs,
                                          good.idxs, 1, NULL, stream));

    CHECK_CU(CUDA_ERROR_INVALID_VALUE, batch_v13(&good, NULL));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, batch_v13(&good, CU_STREAM_LEGACY));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, batch_v13(&good, CU_STREAM_PER_THREAD));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, batch_v13(&good, (CUstream)&good));
    CUstream dead;
    OK(cu.cuStreamCreate(&dead, 0));
    OK(cu.cuStreamDestroy(dead));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, batch_v13(&good, dead));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamDestroy(dead));
    CHECK_EQ(stats().pending_copies, 0);

    OK(cu.cuCtxPopCurrent(NULL));
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, batch_v13(&good, stream));
    OK(cu.cuCtxPushCurrent(ctx0));
    OK(batch_v13(&good, stream));
    OK(cu.cuStreamSynchronize(stream));
    CHECK(memcmp(dst, src, sizeof dst) == 0);
}

static void expect_copy_error(struct batch *b, size_t index, const char *what)
{
    size_t fail_idx = SIZE_MAX;
    CUresult r = batch_v12(b, stream, &fail_idx);
    if (r != CUDA_ERROR_INVALID_VALUE || fail_idx != index) {
        OB_CHECK(0, "batch with %s: result %d, failIdx %zu, expected failIdx %zu (fake: %s)",
                 what, (int)r, fail_idx, index, ctl.last_failure());
    }
}

static void test_batch_ranges(void)
{
    CUdeviceptr dev = 0, managed = 0;
    void *pinned = NULL;
    OK(cu.cuMemAlloc(&dev, 1024));
    OK(cu.cuMemAllocHost(&pinned, 512));
    OK(cu.cuMemAllocManaged(&managed, 256, CU_MEM_ATTACH_GLOBAL));
    unsigned char host[2048] = {0};
    unsigned char *d = hptr(dev), *p = pinned, *m = hptr(managed);
    struct batch good, b;
    batch_init(&good, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    batch_add(&good, d, host, 100);
    batch_add(&good, host + 100, p + 400, 112);
    batch_add(&good, d + 1000, m + 200, 24); /* interior pointers, ending exactly at the end */
    batch_add(&good, host + 300, d + 200, 100);

    b = good, b.sizes[2] = 25;
    expect_copy_error(&b, 2, "a device destination crossing its end");
    b = good, b.sizes[1] = 113;
    expect_copy_error(&b, 1, "a pinned source crossing its end");
    b = good, b.srcs[2] = dptr(m + 240);
    expect_copy_error(&b, 2, "a managed source crossing its end");
    b = good, b.sizes[3] = 0;
    expect_copy_error(&b, 3, "an empty copy");
    b = good, b.dsts[1] = 0;
    expect_copy_error(&b, 1, "a null destination");
    b = good, b.srcs[0] = dev - 16, b.sizes[0] = 32;
    expect_copy_error(&b, 0, "pageable memory running into a device allocation");
    CHECK_EQ(stats().pending_copies, 0);

    size_t fail_idx = 0;
    OK(batch_v12(&good, stream, &fail_idx));
    OK(cu.cuStreamSynchronize(stream));
    OK(cu.cuMemFree(dev));
    OK(cu.cuMemFree(managed));
    OK(cu.cuMemFreeHost(pinned));
}

static void test_batch_injection(void)
{
    unsigned char src[80] = {0}, dst[80];
    struct batch b;
    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    for (int i = 0; i < 5; i++)
        batch_add(&b, dst + 16 * i, src + 16 * i, 16);
    size_t fail_idx = 0;

    CHECK_EQ(ctl.inject_batch_failure(1, 3, CUDA_ERROR_INVALID_VALUE), 0);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, batch_v12(&b, stream, &fail_idx));
    CHECK_EQ(fail_idx, 3);
    CHECK_EQ(stats().pending_copies, 0);
    OK(batch_v12(&b, stream, &fail_idx));

    CHECK_EQ(ctl.inject_batch_failure(2, 99, CUDA_ERROR_OUT_OF_MEMORY), 0);
    OK(batch_v12(&b, stream, &fail_idx));
    CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY, batch_v12(&b, stream, &fail_idx));
    CHECK_EQ(fail_idx, SIZE_MAX);

    CHECK_EQ(ctl.inject_failure("cuMemcpyBatchAsync_v13000", 1, CUDA_ERROR_ILLEGAL_ADDRESS), 0);
    CHECK_CU(CUDA_ERROR_ILLEGAL_ADDRESS, batch_v13(&b, stream));
    CHECK_EQ(ctl.inject_failure("cuMemAlloc", 1, CUDA_ERROR_OUT_OF_MEMORY), 0);
    CUdeviceptr dev = 0;
    CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY, cu.cuMemAlloc(&dev, 64));
    CHECK_EQ(dev, 0);
    CHECK_EQ(ctl.inject_failure("cuNoSuchThing", 1, CUDA_ERROR_UNKNOWN), -1);
    CHECK_EQ(ctl.inject_failure("cuMemAlloc", 0, CUDA_ERROR_UNKNOWN), -1);
    CHECK_EQ(stats().injected_failures, 4);
    OK(cu.cuStreamSynchronize(stream));
}

static void test_sync_failure_drops_pending_copies(void)
{
    enum { N = 512 };
    unsigned char *src = random_buffer(N), *dst = poisoned_buffer(N);
    OK(cu.cuMemcpyAsync(dptr(dst), dptr(src), N, stream));
    ctl.fail_next_sync(CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(CUDA_ERROR_LAUNCH_FAILED, cu.cuStreamSynchronize(stream));
    CHECK_EQ(stats().copies_discarded, 1);
    OK(cu.cuStreamSynchronize(stream));
    CHECK(all_bytes(dst, N, 0x5A));
    free(src);
    free(dst);
}

static void test_dependent_copies(void)
{
    unsigned char a[64], bb[64], c[64];
    memset(a, 1, sizeof a);
    memset(bb, 2, sizeof bb);
    memset(c, 3, sizeof c);
    struct batch b;

    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    batch_add(&b, c, a, 32);       /* copy 0 writes c[0..32) */
    batch_add(&b, c + 16, bb, 32); /* copy 1 writes c[16..48): overlaps copy 0 */
    batch_add(&b, bb + 48, a, 16); /* independent; shares a source, which is fine */
    size_t fail_idx = 0;
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, batch_v12(&b, stream, &fail_idx));
    CHECK_EQ(fail_idx, 0);
    CHECK_EQ(stats().dependent_copies, 2);
    CHECK_EQ(stats().pending_copies, 0);

    /* Without strict mode the batch runs, copies in reverse order: copy 0 lands last. */
    ctl.set_strict_dependencies(0);
    OK(batch_v12(&b, stream, &fail_idx));
    OK(cu.cuStreamSynchronize(stream));
    CHECK(all_bytes(c, 32, 1));
    CHECK(all_bytes(c + 32, 16, 2));
    CHECK_EQ(stats().dependent_copies, 4);
    ctl.set_strict_dependencies(1);

    /* A chain: copy 1 reads what copy 0 writes. */
    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    batch_add(&b, bb, a, 8);
    batch_add(&b, c, bb + 4, 8);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, batch_v13(&b, stream));
    CHECK_EQ(stats().dependent_copies, 6);

    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    batch_add(&b, bb, a, 8);
    batch_add(&b, bb + 8, a, 8);
    batch_add(&b, c, a + 4, 8);
    OK(batch_v13(&b, stream));
    OK(cu.cuStreamSynchronize(stream));
    CHECK_EQ(stats().dependent_copies, 6);
}

static void test_peer_copy_between_devices(void)
{
    enum { N = 1000 };
    CUdeviceptr on0 = 0, on1 = 0;
    OK(cu.cuMemAlloc(&on0, N));
    OK(cu.cuCtxPushCurrent(ctx1));
    OK(cu.cuMemAlloc(&on1, N));
    OK(cu.cuCtxPopCurrent(NULL));
    int ordinal = -1;
    CUpointer_attribute which = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
    void *data[] = {&ordinal};
    OK(cu.cuPointerGetAttributes(1, &which, data, on1 + 5));
    CHECK_EQ(ordinal, 1);

    unsigned char *src = random_buffer(N);
    memcpy(hptr(on0), src, N);
    struct batch b;
    batch_init(&b, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    batch_add(&b, hptr(on1), hptr(on0), N);
    OK(batch_v13(&b, stream));
    /* Freeing synchronizes, so the pending copy lands before its source goes. */
    OK(cu.cuMemFree(on0));
    CHECK(memcmp(hptr(on1), src, N) == 0);
    CHECK_EQ(stats().pending_copies, 0);
    OK(cu.cuMemFree(on1));
    free(src);
}

static void test_stream_destroy_runs_pending_work(void)
{
    enum { N = 300 };
    unsigned char *src = random_buffer(N), *dst = poisoned_buffer(N);
    CUstream s;
    OK(cu.cuStreamCreate(&s, 0));
    OK(cu.cuMemcpyAsync(dptr(dst), dptr(src), N, s));
    CHECK(all_bytes(dst, N, 0x5A));
    OK(cu.cuStreamDestroy(s));
    CHECK(memcmp(dst, src, N) == 0);
    free(src);
    free(dst);
}

static void test_last_release_destroys_context_resources(void)
{
    CUcontext c;
    CUstream s;
    CUdeviceptr dev = 0;
    OK(cu.cuDevicePrimaryCtxRelease(1));
    OK(cu.cuDevicePrimaryCtxRetain(&c, 1));
    OK(cu.cuCtxPushCurrent(c));
    OK(cu.cuStreamCreate(&s, 0));
    OK(cu.cuMemAlloc(&dev, 64));
    OK(cu.cuDevicePrimaryCtxRelease(1));
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, cu.cuMemAlloc(&dev, 64));
    OK(cu.cuCtxPopCurrent(NULL));
    CHECK_EQ(stats().resources_reclaimed, 2);
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamSynchronize(s));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(dev));
    OK(cu.cuDevicePrimaryCtxRetain(&ctx1, 1));
}

static void test_error_strings(void)
{
    const char *text = NULL;
    OK(cu.cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text));
    CHECK(text != NULL && strcmp(text, "invalid argument") == 0);
    OK(cu.cuGetErrorName(CUDA_ERROR_LAUNCH_FAILED, &text));
    CHECK(text != NULL && strcmp(text, "CUDA_ERROR_LAUNCH_FAILED") == 0);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuGetErrorString((CUresult)12345, &text));
    CHECK(text == NULL);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, cu.cuGetErrorName(CUDA_SUCCESS, NULL));
}

static void test_deinit(void)
{
    int n;
    ctl.deinit();
    CHECK_CU(CUDA_ERROR_NOT_INITIALIZED, cu.cuDeviceGetCount(&n));
    OK(cu.cuInit(0));
    OK(cu.cuDeviceGetCount(&n));
}

static void test_teardown_leaves_nothing(void)
{
    OK(cu.cuStreamDestroy(stream));
    OK(cu.cuCtxPopCurrent(NULL));
    OK(cu.cuDevicePrimaryCtxRelease(0));
    OK(cu.cuDevicePrimaryCtxRelease(1));
    struct fake_cuda_stats s = stats();
    CHECK_EQ(s.live_streams, 0);
    CHECK_EQ(s.live_allocations, 0);
    CHECK_EQ(s.pending_copies, 0);
    CHECK_EQ(ctl.ctx_stack_depth(), 0);
    CHECK_EQ(ctl.primary_ctx_refcount(0), 0);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"calls_before_cuinit", test_calls_before_cuinit},
        {"cuinit_failure_and_success", test_cuinit_failure_and_success},
        {"proc_address_versions", test_proc_address_versions},
        {"devices_and_contexts", test_devices_and_contexts},
        {"memory_and_pointer_attributes", test_memory_and_pointer_attributes},
        {"allocations_are_disjoint_and_freed_memory_is_refused",
         test_allocations_are_disjoint_and_freed_memory_is_refused},
        {"memcpy_async_is_lazy", test_memcpy_async_is_lazy},
        {"batch_round_trip", test_batch_round_trip},
        {"during_api_call_reads_source_at_call", test_during_api_call_reads_source_at_call},
        {"batch_validation", test_batch_validation},
        {"batch_ranges", test_batch_ranges},
        {"batch_injection", test_batch_injection},
        {"sync_failure_drops_pending_copies", test_sync_failure_drops_pending_copies},
        {"dependent_copies", test_dependent_copies},
        {"peer_copy_between_devices", test_peer_copy_between_devices},
        {"stream_destroy_runs_pending_work", test_stream_destroy_runs_pending_work},
        {"last_release_destroys_context_resources",
         test_last_release_destroys_context_resources},
        {"error_strings", test_error_strings},
        {"deinit", test_deinit},
        {"teardown_leaves_nothing", test_teardown_leaves_nothing},
    };
    if (load(argc > 1 ? argv[1] : NULL) != 0)
        return 1;
    int failed_tests = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = failures;
        ctl.reset();
        tests[i].run();
        printf("[%s] %s\n", failures == before ? "  OK  " : "FAILED", tests[i].name);
        failed_tests += failures != before;
    }
    printf("%d of %zu tests failed\n", failed_tests, sizeof tests / sizeof tests[0]);
    fake_cuda_control_close(&ctl);
    return failed_tests == 0 ? 0 : 1;
}
