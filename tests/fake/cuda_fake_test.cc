// The CUDA backend driven through the fake driver (tests/fake_cuda): loader and batch forms,
// classification, attribute groups, routing, ordering, splitting, failures with the copy
// index, and bytes checked after the fake's lazy streams have run.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ompbatch.h"
#include "tests/support/rect_reference.h"
#include "tests/support/test_random.h"

extern "C" {
#include "plugin/api/batch.h"
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/cuda/driver.h"
#include "plugin/cuda/omp_runtime.h"
#include "tests/fake_cuda/fake_cuda_control.h"
}

#include "tests/support/fake_fixture.h"

namespace {

// The driver loader and the CUDA backend, on a freshly loaded fake driver per test.
class CudaBackend : public FakeDriver {};

// ---- loader --------------------------------------------------------------------------------

TEST_F(CudaBackend, ChoosesTheBatchFormByDriverVersion)
{
    struct {
        int version;
        const char *form;
        int expect;
        int forced;
    } rows[] = {
        {13000, nullptr, OMPBATCH_FORM_V13000, 0},   {12080, nullptr, OMPBATCH_FORM_V12080, 0},
        {12090, nullptr, OMPBATCH_FORM_V12080, 0},   {12040, nullptr, OMPBATCH_FORM_PER_COPY, 0},
        {13000, "12080", OMPBATCH_FORM_V12080, 1},   {13000, "percopy", OMPBATCH_FORM_PER_COPY, 1},
        {12080, "13000", OMPBATCH_FORM_V12080, 0},   {12040, "12080", OMPBATCH_FORM_PER_COPY, 0},
    };
    for (const auto &row : rows) {
        load(row.version, row.form);
        ompbatch_driver_info info;
        std::memset(&info, 0, sizeof(info));
        info.struct_size = sizeof(info);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_get_driver_info(&info));
        EXPECT_EQ(1, info.driver_loaded);
        EXPECT_EQ(row.version, info.driver_version);
        EXPECT_EQ(2, info.device_count);
        EXPECT_EQ(row.expect, info.batch_form) << row.version << " " << (row.form ? row.form : "");
        EXPECT_EQ(row.forced, info.forced);
        EXPECT_STREQ("", info.reason);
    }
    // A driver that answers the lookup of an entry point it lacks with CUDA_SUCCESS, saying so
    // only in the lookup's result: the form is chosen by what it has all the same.
    for (int version : {13000, 12080, 12040}) {
        load(version);
        fake().set_unavailable_result(CUDA_SUCCESS);
        fake().deinit();
        ob_driver_reload_for_testing();
        ASSERT_TRUE(ob_driver_get()->loaded) << ob_driver_get()->reason;
        ompbatch_driver_info info;
        std::memset(&info, 0, sizeof(info));
        info.struct_size = sizeof(info);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_get_driver_info(&info));
        EXPECT_EQ(version >= 13000   ? OMPBATCH_FORM_V13000
                  : version >= 12080 ? OMPBATCH_FORM_V12080
                                     : OMPBATCH_FORM_PER_COPY,
                  info.batch_form)
            << version;
    }
    load();
}

TEST_F(CudaBackend, FailedInitMeansNoDriverWithTheReason)
{
    fake().set_init_result(CUDA_ERROR_NO_DEVICE);
    fake().deinit();
    ob_driver_reload_for_testing();
    const ob_driver *d = ob_driver_get();
    EXPECT_EQ(0, d->loaded);
    EXPECT_NE(nullptr, std::strstr(d->reason, "cuInit failed: CUDA_ERROR_NO_DEVICE"));
    // The failure's name cannot be had either: the reason still says what failed, by number.
    fake().deinit();
    ASSERT_EQ(0, fake().inject_failure("cuGetErrorName", 1, CUDA_ERROR_UNKNOWN));
    ob_driver_reload_for_testing();
    EXPECT_EQ(0, ob_driver_get()->loaded);
    EXPECT_NE(nullptr, std::strstr(ob_driver_get()->reason, "cuInit failed: unknown error (100)"))
        << ob_driver_get()->reason;
    fake().clear_injections();
    fake().deinit();
    ob_driver_reload_for_testing();
    d = ob_driver_get();
    ompbatch_batch *b = nullptr;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE, ompbatch_batch_create(&b, 1, nullptr, nullptr));
    EXPECT_TRUE(message_has("no CUDA driver"));
    fake().set_init_result(CUDA_SUCCESS);
}

TEST_F(CudaBackend, AMissingRequiredEntryPointMeansNoDriver)
{
    fake().deinit();
    // cuGetProcAddress is asked for cuInit first, cuDriverGetVersion second...
    ASSERT_EQ(0, fake().inject_failure("cuGetProcAddress", 2, CUDA_ERROR_NOT_FOUND));
    ob_driver_reload_for_testing();
    EXPECT_EQ(0, ob_driver_get()->loaded);
    EXPECT_NE(nullptr, std::strstr(ob_driver_get()->reason, "the driver lacks"))
        << ob_driver_get()->reason;
}

TEST_F(CudaBackend, AnUnopenableLibraryIsReported)
{
    setenv("OMPBATCH_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    ob_driver_reload_for_testing();
    const ob_driver *d = ob_driver_get();
    EXPECT_EQ(0, d->loaded);
    EXPECT_NE(nullptr, std::strstr(d->reason, "cannot open the CUDA driver"));
    setenv("OMPBATCH_CUDA_LIBRARY", fake_library_path().c_str(), 1);
    load();
}

TEST_F(CudaBackend, ALibraryWithoutCuGetProcAddressIsNoDriver)
{
    setenv("OMPBATCH_CUDA_LIBRARY", "libm.so.6", 1);
    ob_driver_reload_for_testing();
    EXPECT_EQ(0, ob_driver_get()->loaded);
    EXPECT_NE(nullptr, std::strstr(ob_driver_get()->reason, "has no cuGetProcAddress"))
        << ob_driver_get()->reason;
    setenv("OMPBATCH_CUDA_LIBRARY", fake_library_path().c_str(), 1);
}

TEST_F(CudaBackend, ADriverThatCannotCountDevicesIsNoDriver)
{
    fake().deinit();
    ASSERT_EQ(0, fake().inject_failure("cuDeviceGetCount", 1, CUDA_ERROR_UNKNOWN));
    ob_driver_reload_for_testing();
    EXPECT_EQ(0, ob_driver_get()->loaded);
    EXPECT_NE(nullptr, std::strstr(ob_driver_get()->reason, "cannot query"));
}

TEST_F(CudaBackend, AFailedContextPopIsReported)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(0, fake().inject_failure("cuCtxPopCurrent", 1, CUDA_ERROR_INVALID_CONTEXT));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("cuCtxPopCurrent failed")) << ompbatch_last_error();
    // The copy itself was enqueued and completes.
    EXPECT_EQ(1u, batch.stats().copies_done);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    // The failed pop left the context pushed; take it off for the next tests.
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
}

// Between two GPUs the one-shot call copies in index order: a later copy over an earlier one's
// destination wins, and one reading it sees the earlier copy's bytes.
TEST_F(CudaBackend, OneShotCopiesBetweenTwoDevices)
{
    Buffer a(DEVICE, 4096, 0), b(DEVICE, 4096, 1), seed(PINNED, 4096), back(PINNED, 4096);
    seed.fill(31);
    void *up[] = {a.ptr};
    const void *from_host[] = {seed.ptr};
    size_t whole[] = {4096};
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(up, from_host, whole, nullptr, nullptr,
                                                        1, 0, OMPBATCH_HOST_DEVICE));
    // Copy 2 writes over part of copy 0's destination: it must land after it.
    void *dst[] = {b.ptr, b.ptr + 2100, b.ptr + 500};
    const void *src[] = {a.ptr, a.ptr + 3000, a.ptr + 1000};
    size_t len[] = {1000, 50, 700};
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(dst, src, len, nullptr, nullptr, 3, 1, 0))
        << ompbatch_last_error();
    void *down[] = {back.ptr};
    const void *from_b[] = {b.ptr};
    std::memset(back.ptr, 0xA5, 4096);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(down, from_b, whole, nullptr, nullptr, 1,
                                                        OMPBATCH_HOST_DEVICE, 1));
    std::vector<unsigned char> want(4096, 0xA5);  // the fake's fresh device memory
    std::memcpy(want.data(), seed.ptr, 1000);
    std::memcpy(want.data() + 2100, seed.ptr + 3000, 50);
    std::memcpy(want.data() + 500, seed.ptr + 1000, 700);
    EXPECT_EQ(0, std::memcmp(back.ptr, want.data(), 4096));
    // A host-offload or other non-CUDA device on one side is still refused.
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE,
              ompbatch_target_memcpy_batch(dst, src, len, nullptr, nullptr, 1, 1, 7));
}

TEST_F(CudaBackend, OneShotWithinOneDeviceAndFromIt)
{
    Buffer a(DEVICE, 4096), b(DEVICE, 4096);
    std::vector<unsigned char> host(4096, 0xA5);
    a.fill(22);
    void *dst[] = {b.ptr, b.ptr + 1024};
    const void *src[] = {a.ptr, a.ptr + 2048};
    size_t len[] = {512, 300};
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(dst, src, len, nullptr, nullptr, 2, 0, 0))
        << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(b.ptr, a.ptr, 512));
    EXPECT_EQ(0, std::memcmp(b.ptr + 1024, a.ptr + 2048, 300));
    void *hdst[] = {host.data(), host.data() + 2048};
    const void *dsrc[] = {b.ptr, b.ptr + 1024};
    ASSERT_EQ(OMPBATCH_OK,
              ompbatch_target_memcpy_batch(hdst, dsrc, len, nullptr, nullptr, 2, H, 0));
    EXPECT_EQ(0, std::memcmp(host.data(), a.ptr, 512));
    EXPECT_EQ(0, std::memcmp(host.data() + 2048, a.ptr + 2048, 300));
    EXPECT_EQ(0xA5, host[512]);
}

// ---- copies --------------------------------------------------------------------------------

// n pieces of `size` bytes with gaps, from host kind `kind` to the device and back.
void round_trip(Kind kind, size_t n, size_t size, uint64_t salt)
{
    size_t stride = size + 64;
    Buffer host(kind, n * stride), dev(DEVICE, n * stride), back(kind, n * stride);
    host.fill(salt);
    {
        Batch up;
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(up.b, dev.ptr + i * stride, 0,
                                                      host.ptr + i * stride, H, size, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(up.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(up.b)) << ompbatch_last_error();
        EXPECT_EQ(n, up.stats().copies_done);
    }
    {
        Batch down;
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(down.b, back.ptr + i * stride, H,
                                                      dev.ptr + i * stride, 0, size, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(down.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(down.b));
    }
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(0, std::memcmp(back.ptr + i * stride, host.ptr + i * stride, size))
            << "piece " << i;
        ASSERT_EQ(0xA5, back.ptr[i * stride + size]) << "gap after piece " << i << " written";
    }
}

TEST_F(CudaBackend, RoundTripsAreExactForEveryFormAndHostKind)
{
    for (int version : {13000, 12080, 12040}) {
        load(version);
        for (Kind kind : {PAGEABLE, PINNED, MANAGED})
            for (size_t size : {1, 8, 4096})
                round_trip(kind, 37, size, version + kind * 10 + size);
    }
}

// Random rectangles host -> device -> host for each host memory kind, and device -> device:
// the device array starts poisoned, so only the rectangle may change there, and the copy
// back into a poisoned host array must hold exactly the reference.
TEST_F(CudaBackend, RectanglesAreExactInEveryDirectionAndMemoryKind)
{
    TestRng rng(test_seed() ^ 0x4ec7);
    for (Kind kind : {PAGEABLE, PINNED, MANAGED})
        for (int trial = 0; trial < 60; trial++) {
            RectShape r = random_rect(rng, 12);
            Buffer host(kind, r.src_bytes()), dev(DEVICE, r.dst_bytes()),
                dev2(DEVICE, r.dst_bytes()), back(kind, r.dst_bytes());
            host.fill(1000 * kind + trial);
            dev.fill(2000 * kind + trial);
            dev2.fill(3000 * kind + trial);
            back.fill(4000 * kind + trial);
            std::vector<unsigned char> want_dev(dev.ptr, dev.ptr + r.dst_bytes());
            rect_reference(r, want_dev.data(), host.ptr);
            ASSERT_EQ(OMPBATCH_OK,
                      ompbatch_target_memcpy_rect(dev.ptr, host.ptr, r.element, r.dims,
                                                  r.volume.data(), r.dst_off.data(),
                                                  r.src_off.data(), r.dst_dim.data(),
                                                  r.src_dim.data(), 0, H))
                << ompbatch_last_error();
            ASSERT_EQ(0, std::memcmp(dev.ptr, want_dev.data(), r.dst_bytes()))
                << "host to device, kind " << kind << ", trial " << trial;
            // Device to device and device to host: the same geometry within dst-shaped arrays.
            RectShape same = r;
            same.src_dim = r.dst_dim;
            same.src_off = r.dst_off;
            std::vector<unsigned char> want2(dev2.ptr, dev2.ptr + r.dst_bytes());
            rect_reference(same, want2.data(), dev.ptr);
            std::vector<unsigned char> want_back(back.ptr, back.ptr + r.dst_bytes());
            rect_reference(same, want_back.data(), dev.ptr);
            Batch both;
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add_rect(
                                       both.b, dev2.ptr, 0, dev.ptr, 0, same.element, same.dims,
                                       same.volume.data(), same.dst_off.data(),
                                       same.src_off.data(), same.dst_dim.data(),
                                       same.src_dim.data(), 0));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add_rect(
                                       both.b, back.ptr, H, dev.ptr, 0, same.element, same.dims,
                                       same.volume.data(), same.dst_off.data(),
                                       same.src_off.data(), same.dst_dim.data(),
                                       same.src_dim.data(), OMPBATCH_MAP_FROM));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(both.b)) << ompbatch_last_error();
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(both.b)) << ompbatch_last_error();
            ASSERT_EQ(0, std::memcmp(dev2.ptr, want2.data(), r.dst_bytes()))
                << "device to device, trial " << trial;
            ASSERT_EQ(0, std::memcmp(back.ptr, want_back.data(), r.dst_bytes()))
                << "device to host, kind " << kind << ", trial " << trial;
        }
}

TEST_F(CudaBackend, NothingIsReadBeforeTheWait)
{
    Buffer dev(DEVICE, 64 * 128), host(PINNED, 64 * 128);
    dev.fill(5);
    Batch batch;
    for (int i = 0; i < 64; i += 2)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, host.ptr + i * 128, H, dev.ptr + i * 128, 0, 128, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(0xA5, host.ptr[0]);  // the fake's stream has not run yet
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, std::memcmp(host.ptr, dev.ptr, 128));
}

TEST_F(CudaBackend, GroupsAttributesIntoTheFewestEntries)
{
    Buffer pageable(PAGEABLE, 1 << 16), pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 18);
    pageable.fill(1);
    pinned.fill(2);
    Batch batch;
    // Interleave pinned sources, pageable LITERAL sources and device sources.
    for (int i = 0; i < 30; i++) {
        unsigned char *d = dev.ptr + i * 1024;
        if (i % 3 == 0)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d, 0, pinned.ptr + i * 1024, H, 512, 0));
        else if (i % 3 == 1)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d, 0, pageable.ptr + i * 1024, H,
                                                      512, OMPBATCH_MAP_LITERAL));
        else
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d, 0, dev.ptr + 100000 + i * 1024,
                                                      0, 512, 0));
    }
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    ASSERT_EQ(1u, fake().batch_record_count());
    fake_cuda_batch_record r = last_batch();
    EXPECT_EQ(30u, r.count);
    // STREAM (pinned and device sources share it) and DURING_API_CALL (literal).
    ASSERT_EQ(2u, r.num_attrs);
    EXPECT_EQ(0u, r.attrs_idxs[0]);
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, r.attrs[0].srcAccessOrder);
    EXPECT_EQ(20u, r.attrs_idxs[1]);
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL, r.attrs[1].srcAccessOrder);
    EXPECT_EQ(2u, batch.stats().attr_groups);
    for (int i = 0; i < 30; i++) {
        const unsigned char *src = i % 3 == 0   ? pinned.ptr + i * 1024
                                   : i % 3 == 1 ? pageable.ptr + i * 1024
                                                : dev.ptr + 100000 + i * 1024;
        ASSERT_EQ(0, std::memcmp(dev.ptr + i * 1024, src, 512)) << "copy " << i;
    }
}

TEST_F(CudaBackend, SynchronousCallsLetPageableSourcesBeReadAnyTime)
{
    Buffer dev(DEVICE, 4096);
    std::vector<unsigned char> a = random_bytes(256, 1), b = random_bytes(256, 2);
    void *dst[] = {dev.ptr, dev.ptr + 1024};
    const void *src[] = {a.data(), b.data()};
    size_t len[] = {256, 256};
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(dst, src, len, nullptr, nullptr, 2, 0, H))
        << ompbatch_last_error();
    fake_cuda_batch_record r = last_batch();
    ASSERT_EQ(1u, r.num_attrs);
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_ANY, r.attrs[0].srcAccessOrder);
    EXPECT_EQ(0, std::memcmp(dev.ptr, a.data(), 256));
    EXPECT_EQ(0, std::memcmp(dev.ptr + 1024, b.data(), 256));
}

TEST_F(CudaBackend, ManagedMemoryGetsLocationHints)
{
    Buffer managed(MANAGED, 8192), pinned(PINNED, 8192);
    pinned.fill(3);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, managed.ptr, 0, pinned.ptr, H, 100, 0));
    ASSERT_EQ(OMPBATCH_OK,
              ompbatch_batch_add(batch.b, managed.ptr + 4096, 0, pinned.ptr + 4096, H, 100, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    fake_cuda_batch_record r = last_batch();
    ASSERT_EQ(1u, r.num_attrs);
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, r.attrs[0].dstLocHint.type);
    EXPECT_EQ(0, r.attrs[0].dstLocHint.id);
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_INVALID, r.attrs[0].srcLocHint.type);
    EXPECT_EQ(0, std::memcmp(managed.ptr + 4096, pinned.ptr + 4096, 100));
}

TEST_F(CudaBackend, PreferOverlapReachesTheDriver)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    ompbatch_batch_options o{};
    o.struct_size = sizeof(o);
    o.prefer_overlap = 1;
    Batch batch(0, nullptr, &o);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 8, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 64, 0, pinned.ptr + 64, H, 8, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(static_cast<unsigned>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE),
              last_batch().attrs[0].flags);
}

TEST_F(CudaBackend, RoutesByTheTable)
{
    Buffer pageable(PAGEABLE, 1 << 20), pinned(PINNED, 1 << 20), dev(DEVICE, 1 << 20);
    struct {
        unsigned char *dst;
        int dst_dev;
        unsigned char *src;
        int src_dev;
        size_t n, size;
        unsigned paths;
    } rows[] = {
        {dev.ptr, 0, pinned.ptr, H, 64, 4096, OMPBATCH_PATH_BATCH},
        {pinned.ptr, H, dev.ptr, 0, 64, 4096, OMPBATCH_PATH_BATCH},
        {pageable.ptr, H, dev.ptr, 0, 64, 4096, OMPBATCH_PATH_PER_COPY},
        {dev.ptr, 0, pageable.ptr, H, 64, 4096, OMPBATCH_PATH_BATCH},
        {dev.ptr, 0, pageable.ptr, H, 8, 65536, OMPBATCH_PATH_PER_COPY},
        {dev.ptr, 0, pinned.ptr, H, 1, 4096, OMPBATCH_PATH_PER_COPY},
        {pinned.ptr, H, pageable.ptr, H, 64, 4096, OMPBATCH_PATH_HOST},
    };
    for (const auto &row : rows) {
        fake().reset();
        Batch batch;
        for (size_t i = 0; i < row.n; i++)  // every other slot: nothing merges
            ASSERT_EQ(OMPBATCH_OK,
                      ompbatch_batch_add(batch.b, row.dst + 2 * i * row.size, row.dst_dev,
                                         row.src + 2 * i * row.size, row.src_dev, row.size, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        ompbatch_stats s = batch.stats();
        EXPECT_EQ(row.paths, s.paths) << "row n=" << row.n << " size=" << row.size;
        EXPECT_EQ(row.n, s.copies_planned);
        long long per_copy = fake().call_count("cuMemcpyAsync");
        EXPECT_EQ(row.paths == OMPBATCH_PATH_PER_COPY ? (long long)row.n : 0, per_copy);
        for (size_t i = 0; i < row.n; i++)
            ASSERT_EQ(0, std::memcmp(row.dst + 2 * i * row.size, row.src + 2 * i * row.size,
                                     row.size));
    }
}

TEST_F(CudaBackend, DisableSendsEveryCopyAlone)
{
    load(13000, nullptr, "1");
    Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    pinned.fill(9);
    Batch batch;
    for (int i = 0; i < 32; i++)  // contiguous: would merge when enabled
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, dev.ptr + i * 256, 0, pinned.ptr + i * 256, H, 256, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(32, fake().call_count("cuMemcpyAsync"));
    EXPECT_EQ(0u, fake().batch_record_count());
    EXPECT_EQ(0, std::memcmp(dev.ptr, pinned.ptr, 32 * 256));
}

TEST_F(CudaBackend, MergesContiguousPiecesOfOneAllocation)
{
    Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    pinned.fill(10);
    Batch batch;
    for (int i = 31; i >= 0; i--)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, dev.ptr + i * 256, 0, pinned.ptr + i * 256, H, 256, 0));
    ASSERT_EQ(OMPBATCH_OK,  // and one that is not contiguous
              ompbatch_batch_add(batch.b, dev.ptr + 20000, 0, pinned.ptr + 30000, H, 256, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(33u, s.copies_added);
    EXPECT_EQ(2u, s.copies_planned);
    EXPECT_EQ(2u, s.driver_calls);  // two copies of 8 KiB and 256 B: routed per copy
    EXPECT_EQ(2, fake().call_count("cuMemcpyAsync"));
    EXPECT_EQ(0, std::memcmp(dev.ptr, pinned.ptr, 32 * 256));
    EXPECT_EQ(0, std::memcmp(dev.ptr + 20000, pinned.ptr + 30000, 256));
}

TEST_F(CudaBackend, DependentCopiesRunInAddOrderAcrossSubBatches)
{
    // host -> X, X -> Y (device to device), Y -> back: each reads what the previous wrote.
    Buffer host(PINNED, 4096), x(DEVICE, 4096), y(DEVICE, 4096), back(PINNED, 4096);
    host.fill(11);
    Batch batch;
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, x.ptr + i * 512, 0, host.ptr + i * 512, H, 300, 0));
    }
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, y.ptr + i * 512, 0, x.ptr + i * 512, 0, 300, 0));
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, back.ptr + i * 512, H, y.ptr + i * 512, 0, 300, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(3u, s.sub_batches);
    EXPECT_EQ(3u, fake().batch_record_count());
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(0, std::memcmp(back.ptr + i * 512, host.ptr + i * 512, 300)) << i;
}

TEST_F(CudaBackend, HostCopiesInADeviceBatchWaitForEarlierDeviceWork)
{
    Buffer dev(DEVICE, 4096), pinned(PINNED, 4096);
    std::vector<unsigned char> out(4096, 0x5A);
    dev.fill(12);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, pinned.ptr, H, dev.ptr, 0, 1000, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, pinned.ptr + 2000, H, dev.ptr + 2000, 0, 1000, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, out.data(), H, pinned.ptr, H, 1000, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, std::memcmp(out.data(), dev.ptr, 1000));
    EXPECT_EQ((unsigned)(OMPBATCH_PATH_BATCH | OMPBATCH_PATH_HOST), batch.stats().paths);
}

TEST_F(CudaBackend, LongPlansAreSplitAtMaxCopies)
{
    Buffer pinned(PINNED, 1 << 20), dev(DEVICE, 1 << 20);
    pinned.fill(13);
    ompbatch_batch_options o{};
    o.struct_size = sizeof(o);
    o.max_copies = 16;
    Batch batch(0, nullptr, &o);
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, dev.ptr + i * 128, 0, pinned.ptr + i * 256, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(7u, batch.stats().sub_batches);
    EXPECT_EQ(7u, fake().batch_record_count());
    for (size_t back = 0; back < 7; back++)
        EXPECT_LE(last_batch(back).count, 16u);
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(0, std::memcmp(dev.ptr + i * 128, pinned.ptr + i * 256, 64)) << i;
}

TEST_F(CudaBackend, MaxCopiesComesFromTheEnvironmentToo)
{
    setenv("OMPBATCH_MAX_COPIES", "10", 1);
    load();
    Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    pinned.fill(21);
    Batch batch;
    for (int i = 0; i < 25; i++)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, dev.ptr + i * 128, 0, pinned.ptr + i * 256, H, 16, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(3u, fake().batch_record_count());
    EXPECT_EQ(5u, last_batch().count);
    EXPECT_EQ(0, std::memcmp(dev.ptr + 24 * 128, pinned.ptr + 24 * 256, 16));
}

TEST_F(CudaBackend, UsesTheCallersStream)
{
    const ob_driver *d = ob_driver_get();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    CUstream stream = nullptr;
    ASSERT_EQ(CUDA_SUCCESS, d->fn.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    {
        Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
        pinned.fill(14);
        Batch batch(0, stream);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 128, 0, pinned.ptr + 128, H, 64, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
        EXPECT_EQ(stream, last_batch().stream);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        EXPECT_EQ(0, std::memcmp(dev.ptr + 128, pinned.ptr + 128, 64));
    }
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    EXPECT_EQ(CUDA_SUCCESS, d->fn.cuStreamDestroy(stream));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
}

// A stream of another device's context, or something that is not a stream, is refused at
// create, naming the stream; a driver that cannot say (cuStreamGetCtx failing) is reported.
TEST_F(CudaBackend, AStreamOfAnotherContextIsRefused)
{
    const ob_driver *d = ob_driver_get();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(1));
    CUstream other = nullptr;
    ASSERT_EQ(CUDA_SUCCESS, d->fn.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    ompbatch_batch *b = nullptr;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_create(&b, 0, other, nullptr));
    EXPECT_TRUE(message_has("belongs to another context than device 0's")) << ompbatch_last_error();
    EXPECT_EQ(nullptr, b);
    EXPECT_EQ(0, fake().ctx_stack_depth());
    // On its own device it is fine.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, 1, other, nullptr)) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
    int junk = 0;
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_create(&b, 0, &junk, nullptr));
    EXPECT_TRUE(message_has("cuStreamGetCtx failed: CUDA_ERROR_INVALID_HANDLE"))
        << ompbatch_last_error();
    ASSERT_EQ(0, fake().inject_failure("cuStreamGetCtx", 1, CUDA_ERROR_UNKNOWN));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_create(&b, 1, other, nullptr));
    EXPECT_EQ(0, fake().ctx_stack_depth());
    // The device's context cannot be made current to ask: reported, nothing left pushed.
    ASSERT_EQ(0, fake().inject_failure("cuCtxPushCurrent", 1, CUDA_ERROR_UNKNOWN));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_create(&b, 1, other, nullptr));
    EXPECT_TRUE(message_has("cuCtxPushCurrent failed")) << ompbatch_last_error();
    EXPECT_EQ(nullptr, b);
    EXPECT_EQ(0, fake().ctx_stack_depth());
    fake().clear_injections();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(1));
    EXPECT_EQ(CUDA_SUCCESS, d->fn.cuStreamDestroy(other));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
}

// ---- validation against memory kinds ------------------------------------------------------

TEST_F(CudaBackend, RejectsMemoryThatDoesNotMatchItsDeviceNumber)
{
    Buffer pageable(PAGEABLE, 4096), dev(DEVICE, 4096), other(DEVICE, 4096, 1);
    struct {
        unsigned char *dst;
        int dst_dev;
        unsigned char *src;
        int src_dev;
        const char *message;
    } rows[] = {
        {pageable.ptr, 0, pageable.ptr + 2048, H, "is pageable host memory, not memory of device 0"},
        {other.ptr, 0, pageable.ptr, H, "of another device"},
        {pageable.ptr, H, dev.ptr, H, "names the host"},
    };
    for (const auto &row : rows) {
        Batch batch;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, pageable.ptr + 3000, H, pageable.ptr + 3500, H, 8, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, row.dst, row.dst_dev, row.src, row.src_dev, 64, 0));
        EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
        EXPECT_TRUE(message_has("copy 1:")) << ompbatch_last_error();
        EXPECT_TRUE(message_has(row.message)) << ompbatch_last_error();
        EXPECT_EQ(0u, batch.stats().copies_done);
    }
    EXPECT_EQ(0u, fake().batch_record_count());
}

TEST_F(CudaBackend, RejectsACopyRunningPastItsAllocation)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 1024);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr + 2000, H, 100, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 1000, 0, pinned.ptr, H, 100, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 1: dst")) << ompbatch_last_error();
    EXPECT_TRUE(message_has("runs past the end of its allocation"));
}

TEST_F(CudaBackend, RefillingAfterResetAsksTheDriverNothingNew)
{
    Buffer pageable(PAGEABLE, 64 * 8192), dev(DEVICE, 64 * 8192);
    pageable.fill(17);
    Batch batch;
    auto fill = [&] {
        for (int i = 0; i < 64; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + i * 8192, 0,
                                                      pageable.ptr + i * 8192, H, 4096, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    };
    fill();
    long long first = fake().call_count("cuPointerGetAttributes");
    EXPECT_GE(first, 64);  // one per pageable page, one for the device allocation
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    fill();
    EXPECT_EQ(first, fake().call_count("cuPointerGetAttributes"));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_forget_memory(batch.b));
    fill();
    EXPECT_EQ(2 * first, fake().call_count("cuPointerGetAttributes"));
    EXPECT_EQ(0, std::memcmp(dev.ptr + 63 * 8192, pageable.ptr + 63 * 8192, 4096));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pageable.ptr, H, 8, 0));
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_forget_memory(batch.b));
    EXPECT_TRUE(message_has("1 copies not yet submitted")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_forget_memory(nullptr));
}

TEST_F(CudaBackend, CleaningUpAfterAFailureKeepsItsMessage)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    ompbatch_batch *b = nullptr;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, 0, nullptr, nullptr));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b, dev.ptr + 128, 0, pinned.ptr + 128, H, 64, 0));
    // The batch call fails, and so does the first copy sent alone after it.
    ASSERT_EQ(0, fake().inject_batch_failure(1, 0, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_INVALID_VALUE));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(b));
    std::string message = ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
    EXPECT_EQ(message, ompbatch_last_error());
}

// A clean-up that fails after an earlier failure is logged where it fails, but the earlier
// failure is the one reported, status and message; after a success, the clean-up's own failure
// is.
TEST_F(CudaBackend, ACleanUpThatFailsAfterAFailureKeepsTheFirstMessage)
{
    const char *first = "the first failure";
    for (int earlier : {OMPBATCH_ERR_INVALID_ARGUMENT, OMPBATCH_OK}) {
        SCOPED_TRACE(earlier ? "after a failure" : "after a success");
        // What the clean-up returned and left in the message: the earlier failure's, or its own.
        auto expect_reported = [&](int status, const char *own) {
            if (earlier != OMPBATCH_OK) {
                EXPECT_EQ(earlier, status);
                EXPECT_STREQ(first, ompbatch_last_error());
            } else {
                EXPECT_EQ(OMPBATCH_ERR_DRIVER, status);
                EXPECT_TRUE(message_has(own)) << ompbatch_last_error();
            }
        };
        // A context popped.
        ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
        if (earlier != OMPBATCH_OK)
            ob_fail(earlier, "%s", first);
        ASSERT_EQ(0, fake().inject_failure("cuCtxPopCurrent", 1, CUDA_ERROR_INVALID_CONTEXT));
        int status = ob_driver_pop_context_after(earlier);
        ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context()); // the failed pop left it pushed
        expect_reported(status, "cuCtxPopCurrent failed");
        // A batch destroyed while its copy is still queued, the wait failing.
        Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
        ompbatch_batch *batch = nullptr;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&batch, 0, nullptr, nullptr));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch, dev.ptr, 0, pinned.ptr, H, 64, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch)) << ompbatch_last_error();
        if (earlier != OMPBATCH_OK)
            ob_fail(earlier, "%s", first);
        fake().fail_next_sync(CUDA_ERROR_LAUNCH_FAILED);
        status = ob_batch_destroy_after(batch, earlier);
        fake().clear_injections();
        expect_reported(status, "CUDA_ERROR_LAUNCH_FAILED");
    }
}

// A driver that cannot name its own error still gets the error reported: the message carries
// the number and says the name and description are unknown.
TEST_F(CudaBackend, AnErrorTheDriverCannotNameIsStillReported)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_ILLEGAL_ADDRESS));
    ASSERT_EQ(0, fake().inject_failure("cuGetErrorName", 1, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(0, fake().inject_failure("cuGetErrorString", 1, CUDA_ERROR_INVALID_VALUE));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    char expected[64];
    std::snprintf(expected, sizeof(expected), "unknown CUresult (%d: no description)",
                  (int)CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_TRUE(message_has("cuMemcpyAsync failed")) << ompbatch_last_error();
    EXPECT_TRUE(message_has(expected)) << ompbatch_last_error();
    fake().clear_injections();
    // The next submit of the same batch works and copies.
    pinned.fill(61);
    std::memset(dev.ptr, 0xA5, dev.bytes);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, std::memcmp(dev.ptr, pinned.ptr, 64));
}

TEST_F(CudaBackend, DependentSourcesAreReadInStreamOrderWhateverTheirMapType)
{
    // D2H into pinned P, then P -> device marked LITERAL: the second must not read P early.
    Buffer x(DEVICE, 4096), p(PINNED, 4096), y(DEVICE, 4096);
    x.fill(18);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, p.ptr, H, x.ptr, 0, 256, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, p.ptr + 1024, H, x.ptr + 1024, 0, 256, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, y.ptr, 0, p.ptr, H, 256, OMPBATCH_MAP_LITERAL));
    ASSERT_EQ(OMPBATCH_OK,
              ompbatch_batch_add(batch.b, y.ptr + 1024, 0, p.ptr + 1024, H, 256, OMPBATCH_MAP_LITERAL));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, last_batch().attrs[0].srcAccessOrder);
    EXPECT_EQ(0, std::memcmp(y.ptr, x.ptr, 256));
    EXPECT_EQ(0, std::memcmp(y.ptr + 1024, x.ptr + 1024, 256));
}

TEST_F(CudaBackend, ALoneHostNamedCopyOfDeviceMemoryIsLeftToTheDriver)
{
    Buffer dev(DEVICE, 4096), pinned(PINNED, 4096);
    pinned.fill(19);
    Batch batch;
    // Both sides named the host, but dst is device memory: memcpy would be wrong.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, H, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(1, fake().call_count("cuMemcpyAsync"));
    EXPECT_EQ(static_cast<unsigned>(OMPBATCH_PATH_PER_COPY), batch.stats().paths);
    EXPECT_EQ(0, std::memcmp(dev.ptr, pinned.ptr, 64));
}

// A host batch copies with memcpy, which cannot touch device memory: with a driver loaded it
// classifies its sides and refuses device memory (one copy or many, either side, the batch
// API and the one-shot call alike), writing nothing; host memory of every kind still copies.
TEST_F(CudaBackend, AHostBatchRefusesDeviceMemory)
{
    Buffer dev(DEVICE, 4096), pinned(PINNED, 4096), pageable(PAGEABLE, 4096);
    pinned.fill(41);
    std::vector<unsigned char> poison(4096, 0xA5);
    for (size_t copies : {1, 3}) {
        SCOPED_TRACE(std::to_string(copies) + " copies");
        Batch host(H);
        for (size_t i = 0; i + 1 < copies; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(host.b, pageable.ptr + 1024 + 64 * i, H,
                                                      pinned.ptr + 64 * i, H, 64, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(host.b, dev.ptr, H, pinned.ptr, H, 64, 0));
        EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(host.b));
        EXPECT_TRUE(message_has("copy " + std::to_string(copies - 1) + ": dst") &&
                    message_has("is device memory of device 0, but its device number names "
                                "the host"))
            << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(host.b));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(host.b, pageable.ptr, H, dev.ptr, H, 64, 0));
        EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(host.b));
        EXPECT_TRUE(message_has("copy 0: src")) << ompbatch_last_error();
    }
    EXPECT_EQ(0, std::memcmp(dev.ptr, poison.data(), 4096)) << "a refused copy wrote";
    EXPECT_EQ(0, std::memcmp(pageable.ptr, poison.data(), 4096)) << "a refused copy wrote";
    void *dst[] = {pageable.ptr, dev.ptr + 512};
    const void *src[] = {pinned.ptr, pinned.ptr + 512};
    size_t len[] = {100, 100};
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_target_memcpy_batch(dst, src, len, nullptr, nullptr, 2, H, H));
    EXPECT_TRUE(message_has("copy 1: dst")) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(pageable.ptr, poison.data(), 4096)) << "a refused batch wrote";
    // Host memory of both kinds copies as before.
    dst[1] = pinned.ptr + 2048;
    src[1] = pageable.ptr + 3000;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(dst, src, len, nullptr, nullptr, 2, H, H))
        << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(pageable.ptr, pinned.ptr, 100));
    EXPECT_EQ(0, std::memcmp(pinned.ptr + 2048, poison.data(), 100));
}

TEST_F(CudaBackend, ALoneCopyGoesStraightToTheDriver)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    pinned.fill(16);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 100, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 200, 0, pinned.ptr, H, 0, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, fake().call_count("cuPointerGetAttributes"));
    EXPECT_EQ(1, fake().call_count("cuMemcpyAsync"));
    EXPECT_EQ(0, std::memcmp(dev.ptr, pinned.ptr, 100));
    // Its own overlap is still refused before the driver sees it.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 8, 0, dev.ptr, 0, 16, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(1, fake().call_count("cuMemcpyAsync"));
}

TEST_F(CudaBackend, MappedTransfersNeedAnOffloadRuntime)
{
    ob_omp_runtime none{0, nullptr, nullptr, nullptr};
    ob_omp_runtime_set_for_testing(&none);
    Batch batch;
    char x[16];
    EXPECT_EQ(OMPBATCH_ERR_NO_OFFLOAD_RUNTIME,
              ompbatch_batch_add_mapped(batch.b, x, 16, OMPBATCH_MAP_TO));
    EXPECT_TRUE(message_has("omp_get_mapped_ptr"));
    ob_omp_runtime_set_for_testing(nullptr);
}

// ---- driver failures -----------------------------------------------------------------------

// A batch call that fails at run time costs nothing but time: the step's copies go again one
// cuMemcpyAsync each, every byte arrives, and the stats count the fallback. Both batch forms.
TEST_F(CudaBackend, AFailedBatchCallFallsBackToOneCopyAtATime)
{
    for (int version : {12080, 13000}) {
        load(version);
        Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
        pinned.fill(static_cast<uint64_t>(version));
        std::memset(dev.ptr, 0xA5, dev.bytes);
        Batch batch;
        for (int i = 0; i < 10; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + i * 512, 0,
                                                      pinned.ptr + i * 512, H, 100, 0));
        ASSERT_EQ(0, fake().inject_batch_failure(1, 6, CUDA_ERROR_INVALID_VALUE));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        for (int i = 0; i < 10; i++)
            EXPECT_EQ(0, std::memcmp(dev.ptr + i * 512, pinned.ptr + i * 512, 100)) << i;
        EXPECT_EQ(0xA5, dev.ptr[100]) << "a gap was written";
        ompbatch_stats s = batch.stats();
        EXPECT_EQ(10u, s.copies_done);
        EXPECT_EQ(1u, s.batch_fallbacks);
        EXPECT_EQ(11u, s.driver_calls) << "the failed batch call, then one call per copy";
        EXPECT_NE(0u, s.paths & OMPBATCH_PATH_PER_COPY);
        EXPECT_EQ(10, fake().call_count("cuMemcpyAsync"));
        // The next submit tries the batch call again.
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        for (int i = 0; i < 10; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + i * 512, 0,
                                                      pinned.ptr + i * 512, H, 100, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
        EXPECT_EQ(0u, batch.stats().batch_fallbacks);
        EXPECT_EQ(1u, batch.stats().driver_calls);
    }
}

// Sources that die after submit (LITERAL) are still read during the call when the batch call
// failed and the copies went one at a time: the caller's overwrite after submit changes nothing.
TEST_F(CudaBackend, TheFallbackStillReadsDyingSourcesDuringTheCall)
{
    Buffer pinned(PINNED, 1 << 14), dev(DEVICE, 1 << 14);
    pinned.fill(77);
    std::vector<unsigned char> before(pinned.ptr, pinned.ptr + 8 * 512);
    Batch batch;
    for (int i = 0; i < 8; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + i * 512, 0, pinned.ptr + i * 512,
                                                  H, 100, OMPBATCH_MAP_LITERAL));
    ASSERT_EQ(0, fake().inject_batch_failure(1, 0, CUDA_ERROR_NOT_SUPPORTED));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    std::memset(pinned.ptr, 0x11, 8 * 512);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    for (int i = 0; i < 8; i++)
        EXPECT_EQ(0, std::memcmp(dev.ptr + i * 512, before.data() + i * 512, 100)) << i;
    EXPECT_EQ(1u, batch.stats().batch_fallbacks);
    // If that wait fails, the submit says so.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    for (int i = 0; i < 8; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + i * 512, 0, pinned.ptr + i * 512,
                                                  H, 100, OMPBATCH_MAP_LITERAL));
    ASSERT_EQ(0, fake().inject_batch_failure(1, 0, CUDA_ERROR_NOT_SUPPORTED));
    fake().fail_next_sync(CUDA_ERROR_LAUNCH_FAILED);
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("after sending a failed batch's copies one by one"))
        << ompbatch_last_error();
}

// When a copy also fails on its own, that failure is reported, naming the copy.
TEST_F(CudaBackend, AFailureAfterTheFallbackNamesTheCopy)
{
    load(12080);
    Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    Batch batch;
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, dev.ptr + i * 512, 0, pinned.ptr + i * 512, H, 100, 0));
    ASSERT_EQ(0, fake().inject_batch_failure(1, 6, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 7, CUDA_ERROR_INVALID_VALUE));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    // Copies are sorted by destination, and were added in that order, so entry 6 is copy 6.
    EXPECT_TRUE(message_has("copy 6: cuMemcpyAsync failed: CUDA_ERROR_INVALID_VALUE"))
        << ompbatch_last_error();
    EXPECT_EQ(0u, batch.stats().copies_done);
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
}

// Copies the planner merged fail as one: the message names the first copy added of the run
// and how many neighbours it took in, for the batch call's failed index (12080 reports one)
// and for the copy sent alone after it; every byte still arrives when only the batch call
// failed.
TEST_F(CudaBackend, AFailureOnMergedCopiesNamesTheRunsFirstCopy)
{
    for (int version : {12080, 13000}) {
        load(version);
        Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
        pinned.fill(static_cast<uint64_t>(version) + 3);
        std::memset(dev.ptr, 0xA5, dev.bytes);
        Batch batch;
        // Two runs of four touching copies, far apart: two copies after merging.
        auto add_runs = [&] {
            for (size_t run : {0u, 8192u})
                for (size_t i = 0; i < 4; i++)
                    ASSERT_EQ(OMPBATCH_OK,
                              ompbatch_batch_add(batch.b, dev.ptr + run + i * 100, 0,
                                                 pinned.ptr + run + i * 100, H, 100, 0));
        };
        add_runs();
        ASSERT_EQ(0, fake().inject_batch_failure(1, 1, CUDA_ERROR_INVALID_VALUE));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        if (version == 12080)
            EXPECT_TRUE(message_has("copy 4 (merged with 3 neighbours): cuMemcpyBatchAsync"))
                << ompbatch_last_error();
        else
            EXPECT_TRUE(message_has("batch of 2 copies (copy 0 first): cuMemcpyBatchAsync"))
                << ompbatch_last_error();
        for (size_t run : {0u, 8192u}) {
            EXPECT_EQ(0, std::memcmp(dev.ptr + run, pinned.ptr + run, 400)) << run;
            EXPECT_EQ(0xA5, dev.ptr[run + 400]) << "past the run at " << run;
        }
        EXPECT_EQ(2u, batch.stats().copies_done) << "planned copies: the two merged ones";
        EXPECT_EQ(2, fake().call_count("cuMemcpyAsync")) << "one call per merged copy";
        // The fallback's own copy fails too: that failure is the one reported.
        std::memset(dev.ptr, 0xA5, dev.bytes);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        add_runs();
        ASSERT_EQ(0, fake().inject_batch_failure(1, 0, CUDA_ERROR_INVALID_VALUE));
        ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_LAUNCH_FAILED));
        EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
        EXPECT_TRUE(message_has("copy 0 (merged with 3 neighbours): cuMemcpyAsync failed: "
                                "CUDA_ERROR_LAUNCH_FAILED"))
            << ompbatch_last_error();
        EXPECT_EQ(0u, batch.stats().copies_done);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        fake().clear_injections();
    }
}

// A sticky error (the context is gone) fails the copies sent alone too: reported.
TEST_F(CudaBackend, AStickyBatchFailureIsReported)
{
    Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    Batch batch;
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, dev.ptr + i * 512, 0, pinned.ptr + i * 512, H, 100, 0));
    ASSERT_EQ(0, fake().inject_batch_failure(1, 3, CUDA_ERROR_ILLEGAL_ADDRESS));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_ILLEGAL_ADDRESS));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 0: cuMemcpyAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS"))
        << ompbatch_last_error();
}

TEST_F(CudaBackend, LaterSubBatchesAreNotSubmittedAfterAFailure)
{
    Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    ompbatch_batch_options o{};
    o.struct_size = sizeof(o);
    o.max_copies = 4;
    Batch batch(0, nullptr, &o);
    for (int i = 0; i < 12; i++)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, dev.ptr + i * 512, 0, pinned.ptr + i * 512, H, 100, 0));
    // The second sub-batch's call fails, and its first copy sent alone too.
    ASSERT_EQ(0, fake().inject_batch_failure(2, 0, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_INVALID_VALUE));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(2u, fake().batch_record_count());
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(4u, s.copies_done);
    EXPECT_EQ(3u, s.driver_calls);
}

// max_copies of SIZE_MAX, a caller's "no limit", splits nothing: each level is one batch call
// and a later level's copies never run again before the copies that read what they write.
TEST_F(CudaBackend, MaxCopiesOfSizeMaxIsNoLimit)
{
    Buffer dev(DEVICE, 1 << 16);
    dev.fill(41);
    std::vector<unsigned char> before(dev.ptr, dev.ptr + dev.bytes);
    ompbatch_batch_options o{};
    o.struct_size = sizeof(o);
    o.strategy = OMPBATCH_STRATEGY_DIRECT;
    o.max_copies = SIZE_MAX;
    Batch batch(0, nullptr, &o);
    unsigned char *x = dev.ptr, *p = dev.ptr + 16384, *q = dev.ptr + 32768;
    for (int i = 0; i < 3; i++) // level 0 reads p
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, x + i * 4096, 0, p + i * 4096, 0,
                                                  1000 + i, 0));
    for (int i = 0; i < 3; i++) // level 1 overwrites it
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, p + i * 4096, 0, q + i * 4096, 0,
                                                  1000 + i, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(0, std::memcmp(x + i * 4096, &before[16384 + i * 4096], 1000 + i)) << i;
        EXPECT_EQ(0, std::memcmp(p + i * 4096, &before[32768 + i * 4096], 1000 + i)) << i;
    }
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(6u, s.copies_done);
    EXPECT_EQ(2u, s.sub_batches);
    EXPECT_EQ(2u, s.driver_calls);
}

TEST_F(CudaBackend, PerCopyFailureNamesTheCopy)
{
    Buffer pageable(PAGEABLE, 1 << 16), dev(DEVICE, 1 << 16);
    Batch batch;
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, pageable.ptr + i * 512, H, dev.ptr + i * 512, 0, 100, 0));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 4, CUDA_ERROR_INVALID_VALUE));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 3: cuMemcpyAsync failed")) << ompbatch_last_error();
    EXPECT_EQ(3u, batch.stats().copies_done);
}

TEST_F(CudaBackend, WaitReportsAFailedSynchronisation)
{
    // Polling off: the wait blocks in cuStreamSynchronize straight away.
    setenv("OMPBATCH_WAIT_POLL_US", "0", 1);
    ob_config_reload();
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 128, 0, pinned.ptr + 128, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    fake().fail_next_sync(CUDA_ERROR_LAUNCH_FAILED);
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_wait(batch.b));
    EXPECT_TRUE(message_has("cuStreamSynchronize failed: CUDA_ERROR_LAUNCH_FAILED"))
        << ompbatch_last_error();
    EXPECT_EQ(0, fake().call_count("cuStreamQuery"));
    unsetenv("OMPBATCH_WAIT_POLL_US");
    ob_config_reload();
}

TEST_F(CudaBackend, WaitPollsTheStreamBeforeBlocking)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    auto bytes = random_bytes(256, 31);
    std::memcpy(pinned.ptr, bytes.data(), bytes.size());
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 128, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 128, 0, pinned.ptr + 128, H, 128, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    // The fake answers "not ready" once, then "done": the wait saw both and never blocked.
    EXPECT_EQ(2, fake().call_count("cuStreamQuery"));
    EXPECT_EQ(0, fake().call_count("cuStreamSynchronize"));
    EXPECT_EQ(0, std::memcmp(dev.ptr, bytes.data(), 256));
}

TEST_F(CudaBackend, WaitReportsAFailedQuery)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 128, 0, pinned.ptr + 128, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(0, fake().inject_failure("cuStreamQuery", 1, CUDA_ERROR_ILLEGAL_ADDRESS));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_wait(batch.b));
    EXPECT_TRUE(message_has("cuStreamQuery failed: CUDA_ERROR_ILLEGAL_ADDRESS"))
        << ompbatch_last_error();
}

TEST_F(CudaBackend, ClassificationFailureNamesTheCopy)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096), pinned2(PINNED, 4096), dev2(DEVICE, 4096);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    // Other allocations, so the memory-kind cache cannot answer for copy 1.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev2.ptr, 0, pinned2.ptr, H, 64, 0));
    ASSERT_EQ(0, fake().inject_failure("cuPointerGetAttributes", 3, CUDA_ERROR_INVALID_CONTEXT));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 1: cuPointerGetAttributes failed")) << ompbatch_last_error();
}

TEST_F(CudaBackend, ContextAndStreamFailuresAreReportedAndRecoverable)
{
    ompbatch_batch *b = nullptr;
    // Device 1's context and stream are created on first use; each step can fail.
    ASSERT_EQ(0, fake().inject_failure("cuDevicePrimaryCtxRetain", 1, CUDA_ERROR_OUT_OF_MEMORY));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_create(&b, 1, nullptr, nullptr));
    EXPECT_TRUE(message_has("cuDevicePrimaryCtxRetain failed: CUDA_ERROR_OUT_OF_MEMORY"));
    ASSERT_EQ(0, fake().inject_failure("cuCtxPushCurrent", 1, CUDA_ERROR_INVALID_CONTEXT));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_create(&b, 1, nullptr, nullptr));
    EXPECT_TRUE(message_has("cuCtxPushCurrent failed"));
    ASSERT_EQ(0, fake().inject_failure("cuStreamCreate", 1, CUDA_ERROR_OUT_OF_MEMORY));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_create(&b, 1, nullptr, nullptr));
    EXPECT_TRUE(message_has("cuStreamCreate failed: CUDA_ERROR_OUT_OF_MEMORY"));
    EXPECT_EQ(nullptr, b);
    EXPECT_EQ(0, fake().ctx_stack_depth());
    // With the faults gone, the same calls work.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, 1, nullptr, nullptr)) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
    EXPECT_EQ(0, fake().ctx_stack_depth());
}

TEST_F(CudaBackend, SubmitLeavesNoContextPushed)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(0, fake().inject_batch_failure(1, 0, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 128, 0, pinned.ptr + 128, H, 64, 0));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(0, fake().ctx_stack_depth());
}

TEST_F(CudaBackend, BatchesOnTheSecondDeviceUseItsContext)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096, 1);
    pinned.fill(15);
    Batch batch(1);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 1, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 128, 1, pinned.ptr + 128, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(dev.ptr + 128, pinned.ptr + 128, 64));
}

TEST_F(CudaBackend, TheLegacyAndPerThreadStreamsAreRefusedAtCreate)
{
    ompbatch_batch *b = nullptr;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_create(&b, 0, CU_STREAM_LEGACY, nullptr));
    EXPECT_TRUE(message_has("legacy default"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_create(&b, 0, CU_STREAM_PER_THREAD, nullptr));
    EXPECT_TRUE(message_has("per-thread"));
    EXPECT_EQ(nullptr, b);
}

TEST_F(CudaBackend, NoContextIsPushedWhenTheDevicesContextIsCurrent)
{
    Buffer pinned(PINNED, 4096), dev(DEVICE, 4096);
    pinned.fill(20);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));  // as libomptarget leaves it
    fake().reset();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr + 128, 0, pinned.ptr + 128, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, fake().call_count("cuCtxPushCurrent"));
    EXPECT_EQ(1, fake().ctx_stack_depth());
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(1, fake().call_count("cuCtxPushCurrent"));
    EXPECT_EQ(0, fake().ctx_stack_depth());
    EXPECT_EQ(0, std::memcmp(dev.ptr + 128, pinned.ptr + 128, 64));
}

// Random batches over every memory kind and direction, with overlaps, map types and options,
// against a model that performs the copies one after another in the order added. The fake runs
// batch entries in reverse, reads ANY sources late and DURING_API_CALL sources early, so any
// ordering the library gets wrong shows up in the bytes.
TEST_F(CudaBackend, RandomBatchesMatchSequentialCopies)
{
    const size_t arena = 16384;
    Buffer pageable(PAGEABLE, arena), pinned(PINNED, arena), managed(MANAGED, arena);
    Buffer dev(DEVICE, arena), dev2(DEVICE, arena);
    Buffer *buffers[] = {&pageable, &pinned, &managed, &dev, &dev2};
    const bool on_device[] = {false, false, false, true, true};
    TestRng rng(test_seed() + 4242);
    for (int round = 0; round < 200; round++) {
        std::vector<std::vector<unsigned char>> model;
        for (size_t b = 0; b < 5; b++) {
            buffers[b]->fill(round * 8 + b);
            model.emplace_back(buffers[b]->ptr, buffers[b]->ptr + arena);
        }
        ompbatch_batch_options o{};
        o.struct_size = sizeof(o);
        o.max_copies = 1 + rng() % 8;
        o.synchronous = static_cast<int>(rng() % 2);
        o.prefer_overlap = static_cast<int>(rng() % 2);
        Batch batch(0, nullptr, &o);
        size_t copies = 1 + rng() % 24;
        for (size_t i = 0; i < copies; i++) {
            size_t d = rng() % 5, s = rng() % 5;
            size_t bytes = (rng() % 3 == 0) ? 1 + rng() % 2048 : 1 + rng() % 64;
            size_t to = rng() % (arena - bytes), from = rng() % (arena - bytes);
            if (rng() % 4 == 0)  // contiguous runs, so merging happens too
                to = (to / 64) * 64, from = (from / 64) * 64, bytes = 64;
            if (d == s && to < from + bytes && from < to + bytes)
                continue;  // a copy may not overlap itself
            uint64_t map = rng() % 5 == 0 ? OMPBATCH_MAP_LITERAL : 0;
            int dn = on_device[d] ? 0 : H, sn = on_device[s] ? 0 : H;
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, buffers[d]->ptr + to, dn,
                                                      buffers[s]->ptr + from, sn, bytes, map))
                << ompbatch_last_error();
            std::memmove(&model[d][to], &model[s][from], bytes);
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << "round " << round << ": "
                                                               << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        for (size_t b = 0; b < 5; b++)
            ASSERT_EQ(0, std::memcmp(buffers[b]->ptr, model[b].data(), arena))
                << "round " << round << ", buffer " << b;
    }
}

TEST_F(CudaBackend, EveryAllocationFailureOfADeviceBatchIsReportedCleanly)
{
    Buffer pageable(PAGEABLE, 1 << 16), pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    pageable.fill(23);
    pinned.fill(24);
    int failures = 0;
    for (long allowed = 0; allowed < 300; allowed++) {
        std::memset(dev.ptr, 0xA5, 1 << 16);
        ob_alloc_fail_after_for_testing(allowed);
        ompbatch_batch *b = nullptr;
        int status = ompbatch_batch_create(&b, 0, nullptr, nullptr);
        for (int i = 0; i < 100 && status == OMPBATCH_OK; i++) {  // many pages: cache growth
            unsigned char *src = i % 2 ? pinned.ptr + i * 512 : pageable.ptr + i * 600;
            status = ompbatch_batch_add(b, dev.ptr + i * 512, 0, src, H, 64, 0);
        }
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_submit(b);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(b);
        ob_alloc_fail_after_for_testing(-1);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
        if (status == OMPBATCH_OK) {
            for (int i = 0; i < 100; i++) {
                unsigned char *src = i % 2 ? pinned.ptr + i * 512 : pageable.ptr + i * 600;
                ASSERT_EQ(0, std::memcmp(dev.ptr + i * 512, src, 64)) << i;
            }
            break;
        }
        EXPECT_EQ(OMPBATCH_ERR_NO_MEMORY, status) << "allocation " << allowed << ": "
                                                  << ompbatch_last_error();
        failures++;
    }
    EXPECT_GE(failures, 5);  // create, add growth, cache growth, plan, scratch arrays
    EXPECT_EQ(0, fake().ctx_stack_depth());
}

TEST_F(CudaBackend, ThreadsWithTheirOwnBatchesShareTheDevice)
{
    std::vector<std::thread> threads;
    std::vector<int> ok(6, 0);
    for (int t = 0; t < 6; t++) {
        threads.emplace_back([t, &ok] {
            Buffer pinned(PINNED, 1 << 16), dev(DEVICE, 1 << 16, t % 2);
            pinned.fill(700 + t);
            int good = 1;
            for (int round = 0; round < 20 && good; round++) {
                ompbatch_batch *b = nullptr;
                good &= ompbatch_batch_create(&b, t % 2, nullptr, nullptr) == OMPBATCH_OK;
                for (int i = 0; i < 32 && good; i++)
                    good &= ompbatch_batch_add(b, dev.ptr + i * 1024, t % 2, pinned.ptr + i * 2048, H,
                                               512, 0) == OMPBATCH_OK;
                good &= ompbatch_batch_submit(b) == OMPBATCH_OK;
                good &= ompbatch_batch_destroy(b) == OMPBATCH_OK;
            }
            for (int i = 0; i < 32; i++)
                good &= std::memcmp(dev.ptr + i * 1024, pinned.ptr + i * 2048, 512) == 0;
            ok[t] = good;
        });
    }
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < 6; t++)
        EXPECT_EQ(1, ok[t]) << "thread " << t;
}

}  // namespace
