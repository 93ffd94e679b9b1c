// Endurance: many batches in a loop must grow nothing. OMPBATCH_ENDURANCE_BATCHES batches
// (default 100000) of 8 copies each -- pinned and pageable host memory both ways, every
// strategy, the same copies (reused plans, kept descriptors) and changing ones (new plans),
// plus a batch created and destroyed every 1000 -- after a warm-up of 1000. Between the
// warm-up and the end, nothing may grow: the library's streams, kernel modules, staging
// (pinned and device), kept descriptors, the host heap (beyond 256 KiB of allocator slack),
// and on a real GPU the device's free memory (beyond 2 MiB). Bytes are checked on fresh data
// every 5000 batches. Runs on the GPU (gpu tag) and against the fake driver (CPU machines).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ompbatch.h"
#include "tests/support/test_random.h"

extern "C" {
#include "plugin/cuda/driver.h"
#include "plugin/cuda/resources.h"
#include "plugin/cuda/staging.h"
}

namespace {

constexpr size_t kSlab = 1 << 20;
constexpr size_t kCopies = 8;
constexpr size_t kHeapSlack = 256 << 10;
constexpr long long kDeviceSlack = 2 << 20;

struct Snapshot {
    ob_resource_counts resources;
    ob_staging_totals staging;
    size_t heap;
    long long device_free; // -1 when unknown (the fake driver)
};

// The real driver's free device memory, looked up beside the library's own libcuda handle.
long long DeviceFree()
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda == nullptr || std::getenv("OMPBATCH_CUDA_LIBRARY") != nullptr)
        return -1;
    using MemGetInfo = CUresult (*)(size_t *, size_t *);
    auto info = reinterpret_cast<MemGetInfo>(dlsym(cuda, "cuMemGetInfo_v2"));
    size_t free_bytes = 0, total = 0;
    // cuMemGetInfo answers for the current context: the device's primary one.
    long long result = -1;
    if (info != nullptr && ob_driver_push_context(0) == OMPBATCH_OK) {
        if (info(&free_bytes, &total) == CUDA_SUCCESS)
            result = static_cast<long long>(free_bytes);
        ob_driver_pop_context();
    }
    dlclose(cuda);
    return result;
}

Snapshot Take()
{
    Snapshot s;
    ob_resources_get(&s.resources);
    ob_staging_get_totals(&s.staging);
    s.heap = mallinfo2().uordblks;
    s.device_free = DeviceFree();
    return s;
}

size_t Batches()
{
    const char *v = std::getenv("OMPBATCH_ENDURANCE_BATCHES");
    return v != nullptr && std::atol(v) > 0 ? static_cast<size_t>(std::atol(v)) : 100000;
}

class Endurance : public ::testing::Test {
protected:
    void SetUp() override
    {
        const ob_driver *d = ob_driver_get();
        if (!d->loaded) {
            if (std::getenv("OMPBATCH_REQUIRE_GPU") != nullptr)
                FAIL() << "no CUDA driver: " << d->reason;
            GTEST_SKIP() << "no CUDA driver: " << d->reason;
        }
        driver_ = d;
        ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
        void *pinned = nullptr;
        ASSERT_EQ(CUDA_SUCCESS, d->fn.cuMemAllocHost(&pinned, kSlab));
        pinned_ = static_cast<unsigned char *>(pinned);
        ASSERT_EQ(CUDA_SUCCESS, d->fn.cuMemAlloc(&device_, kSlab));
        pageable_.assign(kSlab, 0);
        ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    }
    void TearDown() override
    {
        if (driver_ == nullptr)
            return;
        EXPECT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
        EXPECT_EQ(CUDA_SUCCESS, driver_->fn.cuMemFreeHost(pinned_));
        EXPECT_EQ(CUDA_SUCCESS, driver_->fn.cuMemFree(device_));
        EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    }

    // Copy k's host slab: pinned and pageable alternate; odd shapes are all pinned (the staged
    // strategy then moves them in place and keeps their descriptors).
    unsigned char *HostOf(size_t k, size_t shape)
    {
        return k % 2 || shape % 2 ? pinned_ : pageable_.data();
    }

    // Fills a batch with 8 copies between the host slabs and the device slab; `shape` picks
    // sizes and places (a few shapes repeat, so plans are both reused and rebuilt).
    void Fill(ompbatch_batch *b, size_t shape)
    {
        for (size_t k = 0; k < kCopies; k++) {
            size_t bytes = 64 + ((shape * 7 + k * 13) % 16) * 256;
            size_t at = k * 16384 + (shape % 3) * 8;
            unsigned char *host = HostOf(k, shape);
            char *dev = reinterpret_cast<char *>(device_) + at;
            if (k < kCopies / 2)
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b, dev, 0, host + at,
                                                          OMPBATCH_HOST_DEVICE, bytes, 0));
            else
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b, host + at + 512 * 1024,
                                                          OMPBATCH_HOST_DEVICE,
                                                          dev - (kCopies / 2) * 16384, 0, bytes,
                                                          0));
        }
    }

    // One batch on fresh data, every byte of the copies checked.
    void Check(ompbatch_batch *b, size_t shape, uint64_t seed)
    {
        std::vector<unsigned char> bytes = random_bytes(kSlab / 2, seed);
        std::memcpy(pinned_, bytes.data(), kSlab / 2);
        std::memcpy(pageable_.data(), bytes.data(), kSlab / 2);
        std::memset(pinned_ + kSlab / 2, 0xA5, kSlab / 2);
        std::memset(pageable_.data() + kSlab / 2, 0xA5, kSlab / 2);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b));
        // First the host-to-device half, then the device-to-host half reads it back.
        Fill(b, shape);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b)) << ompbatch_last_error();
        for (size_t k = kCopies / 2; k < kCopies; k++) {
            size_t bytes_k = 64 + ((shape * 7 + k * 13) % 16) * 256;
            size_t bytes_w = 64 + ((shape * 7 + (k - kCopies / 2) * 13) % 16) * 256;
            size_t at = k * 16384 + (shape % 3) * 8;
            size_t src_at = (k - kCopies / 2) * 16384 + (shape % 3) * 8;
            const unsigned char *writer = HostOf(k - kCopies / 2, shape);
            const unsigned char *host = HostOf(k, shape);
            size_t same = bytes_k < bytes_w ? bytes_k : bytes_w;
            ASSERT_EQ(0, std::memcmp(host + at + 512 * 1024, writer + src_at, same))
                << "copy " << k << " of shape " << shape;
        }
    }

    const ob_driver *driver_ = nullptr;
    unsigned char *pinned_ = nullptr;
    CUdeviceptr device_ = 0;
    std::vector<unsigned char> pageable_;
};

TEST_F(Endurance, ManyBatchesGrowNothing)
{
    const int strategies[] = {OMPBATCH_STRATEGY_AUTO, OMPBATCH_STRATEGY_DIRECT,
                              OMPBATCH_STRATEGY_STAGED};
    std::vector<ompbatch_batch *> batches;
    for (int strategy : strategies) {
        ompbatch_batch_options o;
        std::memset(&o, 0, sizeof(o));
        o.struct_size = sizeof(o);
        o.strategy = strategy;
        ompbatch_batch *b = nullptr;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, 0, nullptr, &o)) << ompbatch_last_error();
        batches.push_back(b);
    }
    // The library keeps the emptied structs of the last 256 destroyed batches (so that a use
    // after destroy is an error, not a crash): fill that window first, so that later destroys
    // replace entries in it instead of counting as growth.
    for (int i = 0; i < 256; i++) {
        ompbatch_batch *b = nullptr;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, 0, nullptr, nullptr));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
    }
    // The warm-up runs every shape on every batch (shapes 4-100 come every 10th batch, the
    // three batches in turn): each batch keeps the plans of up to 128 small sets of copies,
    // which fill their slots once and then only replace each other.
    const size_t total = Batches(), warm = 4000;
    Snapshot start{};
    auto began = std::chrono::steady_clock::now();
    for (size_t i = 0; i < warm + total; i++) {
        if (i == warm) {
            start = Take();
            began = std::chrono::steady_clock::now();
        }
        ompbatch_batch *b = batches[i % batches.size()];
        // Shapes 0-3 repeat (plans reused; 1 and 3 keep descriptors); every 10th batch a new
        // shape.
        size_t shape = i % 10 == 9 ? 4 + i % 97 : (i / batches.size()) % 4;
        if (i % 5000 == 4999) {
            Check(b, shape, i);
            if (HasFatalFailure())
                return;
            continue;
        }
        if (i % 1000 == 500) {
            // A batch created and destroyed: its plan, exec and kept state must all go.
            ompbatch_batch *once = nullptr;
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&once, 0, nullptr, nullptr));
            for (int round = 0; round < 3; round++) {
                Fill(once, 1);
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(once)) << ompbatch_last_error();
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(once));
            }
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(once));
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b));
        Fill(b, shape);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b)) << "batch " << i << ": "
                                                          << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b)) << ompbatch_last_error();
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    Snapshot end = Take();
    long long heap = static_cast<long long>(end.heap) - static_cast<long long>(start.heap);
    long long device = start.device_free >= 0 && end.device_free >= 0
                           ? start.device_free - end.device_free
                           : 0;
    std::printf("endurance: %zu batches of %zu copies (+%zu checked) in %.2f s after %zu "
                "warm-up; growth: host heap %+lld B, library streams %+ld, modules %+ld, "
                "staging regions %+ld, pinned %+ld B, device staging %+ld B, kept descriptors "
                "%+ld B, device memory in use %+lld B%s\n",
                total, kCopies, total / 5000, seconds, warm, heap,
                static_cast<long>(end.resources.streams_created - start.resources.streams_created),
                static_cast<long>(end.resources.modules_loaded - start.resources.modules_loaded),
                static_cast<long>(end.staging.regions) - static_cast<long>(start.staging.regions),
                static_cast<long>(end.staging.host_bytes) -
                    static_cast<long>(start.staging.host_bytes),
                static_cast<long>(end.staging.device_bytes) -
                    static_cast<long>(start.staging.device_bytes),
                static_cast<long>(end.resources.kept_device_bytes) -
                    static_cast<long>(start.resources.kept_device_bytes),
                device, start.device_free < 0 ? " (not measured: no real driver)" : "");
    EXPECT_EQ(start.resources.streams_created, end.resources.streams_created);
    EXPECT_EQ(start.resources.modules_loaded, end.resources.modules_loaded);
    EXPECT_EQ(start.staging.regions, end.staging.regions);
    EXPECT_EQ(start.staging.host_bytes, end.staging.host_bytes);
    EXPECT_EQ(start.staging.device_bytes, end.staging.device_bytes);
    EXPECT_EQ(start.staging.allocations, end.staging.allocations);
    EXPECT_EQ(start.resources.kept_device_bytes, end.resources.kept_device_bytes);
    EXPECT_EQ(start.resources.kept_tables, end.resources.kept_tables);
    EXPECT_LE(heap, static_cast<long long>(kHeapSlack));
    EXPECT_LE(device, kDeviceSlack);
    for (ompbatch_batch *b : batches)
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
    ob_resource_counts after;
    ob_resources_get(&after);
    EXPECT_EQ(0u, after.kept_tables) << "destroyed batches still hold kept descriptors";
    EXPECT_EQ(0u, after.kept_device_bytes);
}

} // namespace
