// The OpenMP hook's parts below the entry points: the mapping mirror, the globals table, and
// the copy layer (device verdicts, pinned staging of device-to-host pieces, failures) driven
// through the fake CUDA driver. The entry points themselves run against the real libomptarget
// in tests/hook.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <string>
#include <vector>

#include "ompbatch.h"
#include "tests/support/test_random.h"

extern "C" {
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/cuda/driver.h"
#include "plugin/cuda/staging.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_mirror.h"
#include "tests/fake_cuda/fake_cuda_control.h"
}

namespace {

// ---- mirror --------------------------------------------------------------------------------

ob_mirror_entry entry(uintptr_t begin, uintptr_t end, uintptr_t device = 0x9000)
{
    ob_mirror_entry e{};
    e.begin = begin;
    e.end = end;
    e.device = device;
    e.dyn = 1;
    return e;
}

int insert(int device, ob_mirror_entry e)
{
    return ob_mirror_insert(device, &e);
}

class Mirror : public ::testing::Test {
protected:
    void SetUp() override { ob_mirror_drop_device(kDevice); }
    void TearDown() override { ob_mirror_drop_device(kDevice); }
    static constexpr int kDevice = 5;
};

TEST_F(Mirror, FindsRangesInsideOneEntryOnly)
{
    ASSERT_EQ(0, insert(kDevice, entry(100, 200, 7000)));
    ASSERT_EQ(0, insert(kDevice, entry(200, 300, 9000)));
    ob_mirror_entry *found = nullptr;
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, 100, 200, &found));
    ASSERT_NE(nullptr, found);
    EXPECT_EQ(7000u, found->device);
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, 250, 251, &found));
    EXPECT_EQ(9000u, found->device);
    // Adjacent entries are two mappings: a range across them is not inside either.
    EXPECT_EQ(OB_MIRROR_PARTIAL, ob_mirror_find(kDevice, 150, 250, nullptr));
    EXPECT_EQ(OB_MIRROR_PARTIAL, ob_mirror_find(kDevice, 50, 101, nullptr));
    EXPECT_EQ(OB_MIRROR_PARTIAL, ob_mirror_find(kDevice, 299, 301, nullptr));
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(kDevice, 50, 100, nullptr));
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(kDevice, 300, 400, nullptr));
    EXPECT_EQ(2u, ob_mirror_count(kDevice));
}

TEST_F(Mirror, InsertReplacesOverlappingEntriesAndKeepsOrder)
{
    for (uintptr_t b = 0; b < 50; b++) // inserted out of order
        ASSERT_EQ(0, insert(kDevice, entry(
                                                   ((b * 37) % 50) * 10, ((b * 37) % 50) * 10 + 5)));
    EXPECT_EQ(50u, ob_mirror_count(kDevice));
    for (uintptr_t b = 0; b < 50; b++)
        EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, b * 10, b * 10 + 5, nullptr)) << b;
    ASSERT_EQ(0, insert(kDevice, entry(42, 133)));
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, 42, 133, nullptr));
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(kDevice, 40, 42, nullptr)) << "40..45 was dropped";
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, 30, 35, nullptr));
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, 140, 145, nullptr));
    EXPECT_EQ(50u - 10u + 1u, ob_mirror_count(kDevice)); // 40, 50, ..., 130 replaced
}

// Looks that start where the last one succeeded (the same entry, the next) answer exactly as a
// search would, whatever was inserted or dropped since: every lookup is compared with a model
// of the entries, over random inserts, drops and lookups in ascending runs and at random. The
// steps alternate between phases that mostly insert and phases that mostly drop, so dropped
// entries pile up as tombstones, are swept, and are reused by inserts, in every order.
TEST_F(Mirror, LookupsFromTheLastEntryFoundMatchAModel)
{
    TestRng rng(test_seed() + 71);
    std::vector<std::pair<uintptr_t, uintptr_t>> model; // [begin, end), disjoint
    auto model_find = [&](uintptr_t b, uintptr_t e, uintptr_t *device) {
        int overlaps = 0;
        for (auto &m : model) {
            if (m.first <= b && e <= m.second) {
                *device = 0x100000 + m.first;
                return OB_MIRROR_INSIDE;
            }
            overlaps += m.first < e && b < m.second;
        }
        return overlaps > 0 ? OB_MIRROR_PARTIAL : OB_MIRROR_ABSENT;
    };
    for (int step = 0; step < 20000; step++) {
        unsigned what = rng() % 10;
        bool filling = (step / 1000) % 2 == 0;
        bool inserting = filling ? what < 4 : what == 0;
        bool dropping = filling ? what == 4 : what >= 1 && what < 5;
        uintptr_t b = 64 * (rng() % 512), e = b + 64 * (1 + rng() % 4);
        if (rng() % 4 == 0) // an exact mapping again, or a lone byte
            e = rng() % 2 ? b + 64 : b + 1;
        if (inserting) {
            ASSERT_EQ(0, insert(kDevice, entry(b, e, 0x100000 + b)));
            model.erase(std::remove_if(model.begin(), model.end(),
                                       [&](auto &m) { return m.first < e && b < m.second; }),
                        model.end());
            model.push_back({b, e});
        } else if (dropping) {
            ob_mirror_drop_range(kDevice, b, e);
            model.erase(std::remove_if(model.begin(), model.end(),
                                       [&](auto &m) { return m.first < e && b < m.second; }),
                        model.end());
        } else {
            // An ascending run of lookups, as a construct's items in allocation order.
            for (int k = 0; k < 8; k++, b += 64 * (1 + rng() % 3)) {
                uintptr_t end = b + 1 + rng() % 64, want_device = 0, got_device = 0;
                ob_mirror_entry *found = nullptr;
                ob_mirror_found got = ob_mirror_find(kDevice, b, end, &found);
                ASSERT_EQ(model_find(b, end, &want_device), got) << "step " << step << " at " << b;
                if (got == OB_MIRROR_INSIDE) {
                    got_device = found->device;
                    ASSERT_EQ(want_device, got_device) << "step " << step << " at " << b;
                }
            }
        }
        ASSERT_EQ(model.size(), ob_mirror_count(kDevice));
    }
}

TEST_F(Mirror, DropsEveryEntryARangeTouches)
{
    for (uintptr_t b = 0; b < 10; b++)
        ASSERT_EQ(0, insert(kDevice, entry(b * 100, b * 100 + 50)));
    ob_mirror_drop_range(kDevice, 149, 301); // touches 100..150 and 300..350, not 200..250's neighbours
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(kDevice, 100, 101, nullptr));
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(kDevice, 200, 201, nullptr));
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(kDevice, 300, 301, nullptr));
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, 0, 50, nullptr));
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, 400, 450, nullptr));
    ob_mirror_drop_range(kDevice, 450, 500); // starts at an entry's end: touches nothing
    EXPECT_EQ(7u, ob_mirror_count(kDevice));
    ob_mirror_drop_device(kDevice);
    EXPECT_EQ(0u, ob_mirror_count(kDevice));
}

TEST_F(Mirror, IgnoresDevicesOutsideItsTable)
{
    EXPECT_EQ(-1, insert(-1, entry(1, 2)));
    EXPECT_EQ(-1, insert(OB_MIRROR_MAX_DEVICES, entry(1, 2)));
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(OB_MIRROR_MAX_DEVICES, 1, 2, nullptr));
    ob_mirror_drop_range(-3, 0, 10);
    ob_mirror_drop_device(OB_MIRROR_MAX_DEVICES + 1);
    EXPECT_EQ(0u, ob_mirror_count(-1));
}

TEST_F(Mirror, InsertFailsCleanlyWithoutMemory)
{
    ob_alloc_fail_after_for_testing(0);
    int rc = insert(kDevice + 1, entry(1, 2));
    ob_alloc_fail_after_for_testing(-1);
    EXPECT_EQ(-1, rc);
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(kDevice + 1, 1, 2, nullptr));
}

TEST(Globals, OverlapTestsCoverMergedRanges)
{
    // Addresses far from anything another test registers.
    const uintptr_t base = uintptr_t(1) << 40;
    ob_globals_add(base + 100, base + 200);
    ob_globals_add(base + 150, base + 300); // overlaps: merged
    ob_globals_add(base + 300, base + 310); // adjacent: its own range
    EXPECT_TRUE(ob_globals_overlap(base + 299, base + 300));
    EXPECT_TRUE(ob_globals_overlap(base + 99, base + 101));
    EXPECT_TRUE(ob_globals_overlap(base + 305, base + 306));
    EXPECT_FALSE(ob_globals_overlap(base + 50, base + 100));
    EXPECT_FALSE(ob_globals_overlap(base + 310, base + 400));
}

// ---- foreign ranges ------------------------------------------------------------------------

// The ranges where the runtime may hold entries the mirror does not, over random adds, clears
// and whole-device adds, answer every overlap question as a byte map of the same steps does;
// learning an entry clears its range, forgetting one makes it foreign again.
TEST(Foreign, RangesMatchAByteModel)
{
    const int device = 5;
    const uintptr_t kBytes = 4096;
    TestRng rng(test_seed() + 73);
    ob_foreign_reset(device);
    std::vector<char> model(kBytes, 0);
    bool all = false;    // the whole device: every byte, also past the model's
    bool beyond = false; // bytes past the model's are foreign (since a whole-device add)
    for (int step = 0; step < 20000; step++) {
        unsigned what = rng() % 16;
        uintptr_t b = rng() % kBytes, e = b + 1 + rng() % 200;
        if (e > kBytes)
            e = kBytes;
        if (what < 6) {
            ob_foreign_add(device, b, e);
            std::fill(model.begin() + b, model.begin() + e, 1);
        } else if (what < 12) {
            ob_foreign_clear(device, b, e);
            if (all) { // everything but the cleared range, beyond the model too
                std::fill(model.begin(), model.end(), 1);
                all = false;
            }
            std::fill(model.begin() + b, model.begin() + e, 0);
        } else if (what == 12 && rng() % 50 == 0) {
            ob_foreign_add_device(device);
            all = beyond = true;
        } else {
            for (int k = 0; k < 8; k++) {
                uintptr_t qb = rng() % kBytes, qe = qb + 1 + rng() % 100;
                if (qe > kBytes)
                    qe = kBytes;
                bool want = all || std::any_of(model.begin() + qb, model.begin() + qe,
                                               [](char c) { return c != 0; });
                ASSERT_EQ(want, ob_foreign_overlaps(device, qb, qe) != 0)
                    << "step " << step << " [" << qb << ", " << qe << ")";
            }
        }
        // Past the model's bytes only a whole-device add reaches, and clears below keep it.
        ASSERT_EQ(beyond, ob_foreign_overlaps(device, kBytes + 100, kBytes + 200) != 0)
            << "step " << step;
    }
    ob_foreign_reset(device);
    // Learning and forgetting through the mirror.
    ob_foreign_add_device(device);
    ob_mirror_entry e = entry(1000, 2000);
    ASSERT_EQ(0, ob_foreign_learn_entry(device, &e));
    EXPECT_FALSE(ob_foreign_overlaps(device, 1000, 2000));
    EXPECT_TRUE(ob_foreign_overlaps(device, 999, 1001));
    EXPECT_TRUE(ob_foreign_overlaps(device, 1999, 2001));
    EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(device, 1000, 2000, nullptr));
    ob_foreign_forget_range(device, 1500, 1600);
    EXPECT_EQ(OB_MIRROR_ABSENT, ob_mirror_find(device, 1000, 2000, nullptr));
    EXPECT_TRUE(ob_foreign_overlaps(device, 1550, 1551));
    EXPECT_FALSE(ob_foreign_overlaps(device, 1000, 1500));
    ob_foreign_forget_device(device);
    EXPECT_TRUE(ob_foreign_overlaps(device, 1000, 1500));
    EXPECT_TRUE(ob_foreign_overlaps(device, UINTPTR_MAX - 2, UINTPTR_MAX - 1));
    ob_foreign_reset(device);
    ob_mirror_drop_device(device);
}

// ---- copies through the fake driver ---------------------------------------------------------

const std::string &fake_library_path()
{
    static const std::string path = [] {
        const char *p = std::getenv("OMPBATCH_CUDA_LIBRARY");
        return std::string(p ? p : "");
    }();
    return path;
}

fake_cuda_control &fake()
{
    static fake_cuda_control ctl = fake_cuda_control_open(fake_library_path().c_str());
    return ctl;
}

// Device memory of the fake (host-addressable, so the test reads and poisons it directly).
struct DeviceBuffer {
    unsigned char *ptr = nullptr;
    int ordinal;
    DeviceBuffer(size_t n, int dev) : ordinal(dev)
    {
        CUdeviceptr p = 0;
        EXPECT_EQ(OMPBATCH_OK, ob_driver_push_context(dev));
        EXPECT_EQ(CUDA_SUCCESS, ob_driver_get()->fn.cuMemAlloc(&p, n));
        EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
        ptr = reinterpret_cast<unsigned char *>(p);
    }
    ~DeviceBuffer()
    {
        EXPECT_EQ(OMPBATCH_OK, ob_driver_push_context(ordinal));
        EXPECT_EQ(CUDA_SUCCESS, ob_driver_get()->fn.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
        EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    }
};

// Pieces of random sizes (1 byte and odd sizes included) laid out in one device buffer and
// in separate host buffers; both sides hold different random bytes.
struct Pieces {
    std::vector<size_t> sizes, offsets;
    std::vector<std::vector<unsigned char>> host;
    size_t total = 0;
    Pieces(size_t count, uint64_t salt)
    {
        auto r = random_bytes(count * 2, salt);
        for (size_t i = 0; i < count; i++) {
            size_t n = i == 0 ? 1 : 1 + (size_t(r[2 * i]) << 5 | r[2 * i + 1]) % 9000;
            sizes.push_back(n);
            offsets.push_back(total);
            total += n + (i % 3); // odd gaps, so pieces start at odd addresses
            host.push_back(random_bytes(n, salt * 1000 + i));
        }
    }
};

class HookCopy : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_NE(nullptr, fake().handle) << fake().error;
        fake().reset_config();
        fake().reset();
        fake().set_device_count(2);
        fake().deinit();
        unsetenv("OMPBATCH_STRATEGY"); // the default, auto, with the built-in cost model
        ob_config_reload();
        ob_hook_copy_reset_for_testing();
        ob_driver_reload_for_testing();
        ASSERT_TRUE(ob_driver_get()->loaded) << ob_driver_get()->reason;
    }
    void TearDown() override
    {
        ob_hook_copy_reset_for_testing();
        fake().clear_injections();
        unsetenv("OMPBATCH_BUS_KB");
        ob_config_reload();
    }
    // Small staged levels over the bus (the default), or through device staging and a bulk
    // copy with OMPBATCH_BUS_KB=0.
    static void over_the_bus(bool bus)
    {
        setenv("OMPBATCH_BUS_KB", bus ? "1024" : "0", 1);
        ob_config_reload();
    }
};

TEST_F(HookCopy, DeviceVerdictFollowsTheMemoryLibomptargetHandsOut)
{
    DeviceBuffer on0(4096, 0), on1(4096, 1);
    std::vector<unsigned char> host(64);
    EXPECT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(on0.ptr)));
    EXPECT_EQ(1, ob_hook_device_usable(1, reinterpret_cast<uintptr_t>(on1.ptr)));
    // OpenMP device 2 handing out CUDA device 0's memory is a numbering the hook does not know.
    EXPECT_EQ(0, ob_hook_device_usable(2, reinterpret_cast<uintptr_t>(on0.ptr)));
    // A host-offload device hands out ordinary host memory: copies are memcpy.
    EXPECT_EQ(1, ob_hook_device_usable(3, reinterpret_cast<uintptr_t>(host.data())));
    // The verdict is kept: later addresses are not classified again.
    long long queries = fake().call_count("cuPointerGetAttributes");
    EXPECT_EQ(0, ob_hook_device_usable(2, reinterpret_cast<uintptr_t>(on1.ptr)));
    EXPECT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(on1.ptr)));
    EXPECT_EQ(queries, fake().call_count("cuPointerGetAttributes"));
    EXPECT_EQ(0, ob_hook_device_usable(-1, 0));
    EXPECT_EQ(0, ob_hook_device_usable(OB_MIRROR_MAX_DEVICES, 0));
}

// Memory the hook cannot place on the device's CUDA ordinal makes it forward that device's
// transfers, and the verdict stays: an address whose classification fails, pinned host
// memory, managed memory.
TEST_F(HookCopy, ADeviceWhoseMemoryCannotBePlacedIsForwarded)
{
    DeviceBuffer on0(4096, 0);
    ASSERT_EQ(0, fake().inject_failure("cuPointerGetAttributes", 1, CUDA_ERROR_INVALID_VALUE));
    EXPECT_EQ(0, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(on0.ptr)));
    fake().clear_injections();
    EXPECT_EQ(0, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(on0.ptr)))
        << "the verdict changed once the driver answered";
    const ob_driver *driver = ob_driver_get();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(1));
    void *pinned = nullptr;
    CUdeviceptr managed = 0;
    ASSERT_EQ(CUDA_SUCCESS, driver->fn.cuMemAllocHost(&pinned, 4096));
    ASSERT_EQ(CUDA_SUCCESS, driver->fn.cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL));
    EXPECT_EQ(0, ob_hook_device_usable(1, reinterpret_cast<uintptr_t>(pinned)));
    EXPECT_EQ(0, ob_hook_device_usable(2, static_cast<uintptr_t>(managed)));
    EXPECT_EQ(CUDA_SUCCESS, driver->fn.cuMemFreeHost(pinned));
    EXPECT_EQ(CUDA_SUCCESS, driver->fn.cuMemFree(managed));
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
}

// An end's buffer for a CUDA device is pinned staging; refused (no pinned memory to be had),
// the buffer is host memory and serves as well.
TEST_F(HookCopy, AnExitsBufferWithoutPinnedStagingIsHostMemory)
{
    DeviceBuffer dev(4096, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    ob_staging_free_idle();
    ASSERT_EQ(0, fake().inject_failure("cuMemAllocHost", 1, CUDA_ERROR_OUT_OF_MEMORY));
    ob_hook_buffer buffer;
    const size_t bytes = 48 << 10;
    ASSERT_EQ(0, ob_hook_buffer_get(0, bytes, &buffer));
    fake().clear_injections();
    EXPECT_EQ(nullptr, buffer.region) << "pinned staging was made after all";
    ASSERT_NE(nullptr, buffer.bytes);
    EXPECT_EQ(0, fake().ctx_stack_depth());
    auto fill = random_bytes(bytes, 72);
    std::memcpy(buffer.bytes, fill.data(), bytes);
    EXPECT_EQ(0, std::memcmp(buffer.bytes, fill.data(), bytes));
    ob_hook_buffer_put(&buffer);
    // With pinned memory back, the next buffer is staging again.
    ASSERT_EQ(0, ob_hook_buffer_get(0, bytes, &buffer));
    EXPECT_NE(nullptr, buffer.region);
    ob_hook_buffer_put(&buffer);
}

// Without a usable driver the hook can only memcpy: right for host-offload devices, fatal for
// a CUDA device whose memory the library cannot reach. Reserved address space without access,
// as the driver makes for device memory, must therefore make the hook forward.
TEST_F(HookCopy, WithoutTheDriverOnlyHostMemoryIsCopied)
{
    setenv("OMPBATCH_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    ob_driver_reload_for_testing();
    ob_hook_copy_reset_for_testing();
    ASSERT_FALSE(ob_driver_get()->loaded);
    void *reserved = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, reserved);
    std::vector<unsigned char> host(4096, 0x3C), back(4096, 0);
    EXPECT_EQ(0, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(reserved) + 4096));
    EXPECT_EQ(1, ob_hook_device_usable(1, reinterpret_cast<uintptr_t>(host.data())));
    ob_hook_copy copy{back.data(), host.data(), host.size(), 0, nullptr};
    EXPECT_EQ(OMPBATCH_OK, ob_hook_copy_run(1, nullptr, &copy, 1)) << ompbatch_last_error();
    EXPECT_EQ(host, back);
    munmap(reserved, 1 << 16);
    setenv("OMPBATCH_CUDA_LIBRARY", fake_library_path().c_str(), 1);
    ob_hook_copy_reset_for_testing();
    ob_driver_reload_for_testing();
}

// Pageable destinations: the pieces are gathered by the kernel into pinned staging (over the
// bus, or into device staging and then one bulk copy) and unpacked, so the driver never writes
// the program's memory itself.
TEST_F(HookCopy, DeviceToHostPiecesArriveThroughReusedPinnedStaging)
{
    Pieces p(48, 1);
    DeviceBuffer dev(p.total, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    for (bool bus : {true, false}) {
        SCOPED_TRACE(bus ? "over the bus" : "bulk copy");
        over_the_bus(bus);
        long long launches = fake().call_count("cuLaunchKernel");
        long long copies_before = fake().call_count("cuMemcpyAsync");
        for (int round = 0; round < 2; round++) {
            std::vector<ob_hook_copy> copies;
            std::vector<std::vector<unsigned char>> dst(p.sizes.size());
            for (size_t i = 0; i < p.sizes.size(); i++) {
                auto bytes = random_bytes(p.sizes[i], 77 + round * 100 + i + bus * 1000);
                std::memcpy(dev.ptr + p.offsets[i], bytes.data(), p.sizes[i]);
                p.host[i] = bytes;
                dst[i].assign(p.sizes[i] + 2, 0x5A); // poisoned, with a guard byte each side
                copies.push_back(
                    {dst[i].data() + 1, dev.ptr + p.offsets[i], p.sizes[i], 0, nullptr});
            }
            ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()))
                << ompbatch_last_error();
            for (size_t i = 0; i < p.sizes.size(); i++) {
                ASSERT_EQ(0, std::memcmp(dst[i].data() + 1, p.host[i].data(), p.sizes[i]))
                    << "round " << round << " piece " << i;
                EXPECT_EQ(0x5A, dst[i][0]);
                EXPECT_EQ(0x5A, dst[i][p.sizes[i] + 1]);
            }
            // Gathered by one kernel a construct; a bulk copy into pinned staging unless over
            // the bus; unpacked: the driver never copied into the pageable destinations.
            EXPECT_EQ(round + 1, fake().call_count("cuLaunchKernel") - launches);
            EXPECT_EQ(bus ? 0 : round + 1, fake().call_count("cuMemcpyAsync") - copies_before);
            EXPECT_EQ(0u, fake().batch_record_count());
        }
    }
    EXPECT_EQ(1, fake().call_count("cuMemAllocHost")) << "the staging area is reused";
}

TEST_F(HookCopy, HostToDeviceAndMixedDirectionsAreByteExact)
{
    Pieces p(40, 2);
    DeviceBuffer dev(p.total, 1);
    ASSERT_EQ(1, ob_hook_device_usable(1, reinterpret_cast<uintptr_t>(dev.ptr)));
    std::memset(dev.ptr, 0xC3, p.total);
    std::vector<ob_hook_copy> copies;
    std::vector<std::vector<unsigned char>> back(p.sizes.size());
    for (size_t i = 0; i < p.sizes.size(); i++) {
        if (i % 2 == 0) {
            copies.push_back({dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i], 1, nullptr});
        } else {
            back[i].assign(p.sizes[i], 0x11);
            copies.push_back({back[i].data(), dev.ptr + p.offsets[i], p.sizes[i], 0, nullptr});
        }
    }
    // Over the bus one kernel scatters the packed pieces from pinned staging and gathers the
    // others into it: no copy by the driver at all.
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(1, nullptr, copies.data(), copies.size()))
        << ompbatch_last_error();
    EXPECT_EQ(1, fake().call_count("cuLaunchKernel"));
    EXPECT_EQ(0, fake().call_count("cuMemcpyAsync"));
    EXPECT_EQ(0u, fake().batch_record_count());
    // Through device staging, both directions' bulk copies in one batch call.
    over_the_bus(false);
    for (size_t i = 1; i < p.sizes.size(); i += 2)
        back[i].assign(p.sizes[i], 0x11);
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(1, nullptr, copies.data(), copies.size()))
        << ompbatch_last_error();
    // Both directions went through pinned staging: the driver saw none of the host buffers.
    fake_cuda_batch_record r;
    ASSERT_EQ(0, fake().get_batch_record(0, &r));
    for (size_t k = 0; k < r.count && k < FAKE_CUDA_RECORD_MAX_COPIES; k++) {
        for (size_t i = 0; i < p.sizes.size(); i++) {
            const auto *h = i % 2 == 0 ? p.host[i].data() : back[i].data();
            auto lo = reinterpret_cast<CUdeviceptr>(h), hi = lo + p.sizes[i];
            EXPECT_FALSE(r.srcs[k] >= lo && r.srcs[k] < hi) << "copy " << k << " reads piece " << i;
            EXPECT_FALSE(r.dsts[k] >= lo && r.dsts[k] < hi) << "copy " << k << " writes piece " << i;
        }
    }
    for (size_t i = 0; i < p.sizes.size(); i++) {
        if (i % 2 == 0) {
            EXPECT_EQ(0, std::memcmp(dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i])) << i;
        } else {
            std::vector<unsigned char> poison(p.sizes[i], 0xC3);
            EXPECT_EQ(0, std::memcmp(back[i].data(), poison.data(), p.sizes[i])) << i;
        }
    }
}

// Host-to-device pieces only: packed and scattered by one launch, from pinned staging over the
// bus, or after one bulk copy (the construct's one driver copy) into device staging.
TEST_F(HookCopy, HostToDevicePiecesAreScatteredByTheKernel)
{
    Pieces p(37, 7);
    DeviceBuffer dev(p.total + 64, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    for (int round = 0; round < 4; round++) {
        bool bus = round < 2;
        over_the_bus(bus);
        std::memset(dev.ptr, 0xE7, p.total + 64);
        std::vector<ob_hook_copy> copies;
        for (size_t i = 0; i < p.sizes.size(); i++) {
            p.host[i] = random_bytes(p.sizes[i], 700 + round * 100 + i);
            copies.push_back({dev.ptr + 1 + p.offsets[i], p.host[i].data(), p.sizes[i], 1, nullptr});
        }
        ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()))
            << ompbatch_last_error();
        EXPECT_EQ(0xE7, dev.ptr[0]) << "a byte before the first piece changed";
        for (size_t i = 0; i < p.sizes.size(); i++) {
            ASSERT_EQ(0, std::memcmp(dev.ptr + 1 + p.offsets[i], p.host[i].data(), p.sizes[i]))
                << "round " << round << " piece " << i;
            size_t gap = i + 1 < p.sizes.size() ? p.offsets[i + 1] - p.offsets[i] - p.sizes[i] : 0;
            for (size_t g = 0; g < gap; g++)
                EXPECT_EQ(0xE7, dev.ptr[1 + p.offsets[i] + p.sizes[i] + g]) << "gap after " << i;
        }
    }
    EXPECT_EQ(4, fake().call_count("cuLaunchKernel"));
    // Over the bus none; else one bulk copy per construct, alone in its level: a
    // cuMemcpyAsync, not a batch of one.
    EXPECT_EQ(2, fake().call_count("cuMemcpyAsync"));
    EXPECT_EQ(1, fake().call_count("cuModuleLoadData")) << "the module is loaded once";
    EXPECT_EQ(0u, fake().batch_record_count());
}

// The hook vouches for the device side (the runtime mapped it there), so a construct asks the
// driver about host pointers only, once: an end forgets device memory, not host pages.
TEST_F(HookCopy, OnlyHostPointersAreClassifiedAndTheyStayKnown)
{
    Pieces p(16, 21);
    DeviceBuffer dev(p.total, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    std::vector<ob_hook_copy> copies;
    for (size_t i = 0; i < p.sizes.size(); i++)
        copies.push_back({dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i], 1, nullptr});
    long long before = fake().call_count("cuPointerGetAttributes");
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()))
        << ompbatch_last_error();
    long long first = fake().call_count("cuPointerGetAttributes") - before;
    EXPECT_GE(first, 1);
    EXPECT_LE(first, 2 * 16) << "at most the host pages of 16 pieces";
    ob_hook_copy_forget_memory(); /* as after an end */
    before = fake().call_count("cuPointerGetAttributes");
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()));
    EXPECT_EQ(before, fake().call_count("cuPointerGetAttributes"));
    for (size_t i = 0; i < p.sizes.size(); i++)
        EXPECT_EQ(0, std::memcmp(dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i])) << i;
}

// The buffer for an exit's bytes comes from the device's pinned staging; when the device's
// context cannot be made current it comes from host memory, and a failed pop of the context
// is reported but does not take the buffer away.
TEST_F(HookCopy, AnExitsBufferServesWhateverTheContextCallsDo)
{
    DeviceBuffer dev(4096, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    const size_t bytes = 64 << 10;
    for (const char *failing : {"", "cuCtxGetCurrent", "cuCtxPopCurrent"}) {
        SCOPED_TRACE(*failing ? failing : "no failure");
        fake().reset();
        if (*failing) {
            ASSERT_EQ(0, fake().inject_failure(failing, 1, CUDA_ERROR_INVALID_CONTEXT));
        }
        ob_hook_buffer buffer;
        ASSERT_EQ(0, ob_hook_buffer_get(0, bytes, &buffer));
        fake().clear_injections();
        EXPECT_EQ(std::string(failing) == "cuCtxGetCurrent", buffer.region == nullptr);
        if (std::string(failing) == "cuCtxPopCurrent") {
            EXPECT_NE(nullptr, std::strstr(ompbatch_last_error(), "cuCtxPopCurrent failed"))
                << ompbatch_last_error();
            ASSERT_EQ(1, fake().ctx_stack_depth());
            ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context()); // the failed pop left it pushed
        }
        EXPECT_EQ(0, fake().ctx_stack_depth());
        auto fill = random_bytes(bytes, 71);
        std::memcpy(buffer.bytes, fill.data(), bytes);
        EXPECT_EQ(0, std::memcmp(buffer.bytes, fill.data(), bytes));
        ob_hook_buffer_put(&buffer);
    }
}

// Pinned program memory is packed and unpacked by the CPU, never accessed by the kernel in
// place: a stale classification (memory freed and reused) then costs speed, not bytes.
TEST_F(HookCopy, PinnedHostMemoryIsPackedNotAccessedInPlace)
{
    setenv("OMPBATCH_STRATEGY", "staged", 1);
    ob_config_reload();
    const size_t n = 8, piece = 1000;
    DeviceBuffer dev(n * 1024, 0);
    void *h = nullptr;
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    ASSERT_EQ(CUDA_SUCCESS, ob_driver_get()->fn.cuMemAllocHost(&h, n * 1024));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    auto *host = static_cast<unsigned char *>(h);
    auto bytes = random_bytes(n * 1024, 33);
    std::memcpy(host, bytes.data(), bytes.size());
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    std::vector<ob_hook_copy> copies;
    for (size_t i = 0; i < n; i++)
        copies.push_back({dev.ptr + i * 1024, host + i * 1024, piece, 1, nullptr});
    ASSERT_EQ(OMPBATCH_OK, ompbatch_hook_reset_stats());
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()))
        << ompbatch_last_error();
    ompbatch_hook_stats after = {};
    after.struct_size = sizeof(after);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_hook_get_stats(&after));
    EXPECT_EQ(unsigned(OMPBATCH_PATH_KERNEL | OMPBATCH_PATH_STAGED), after.paths)
        << "packed by the CPU, one bulk copy, the scatter";
    for (size_t i = 0; i < n; i++)
        EXPECT_EQ(0, std::memcmp(dev.ptr + i * 1024, host + i * 1024, piece)) << i;
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    EXPECT_EQ(CUDA_SUCCESS, ob_driver_get()->fn.cuMemFreeHost(h));
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    unsetenv("OMPBATCH_STRATEGY");
    ob_config_reload();
}

TEST_F(HookCopy, WithoutTheKernelPiecesGoDirect)
{
    for (int mode = 0; mode < 2; mode++) {
        ob_hook_copy_reset_for_testing();
        fake().reset();
        if (mode == 0) {
            setenv("OMPBATCH_STRATEGY", "direct", 1);
        } else {
            unsetenv("OMPBATCH_STRATEGY");
            ASSERT_EQ(0, fake().inject_failure("cuModuleLoadData", 1, CUDA_ERROR_INVALID_PTX));
        }
        ob_config_reload();
        Pieces p(16, 8 + mode);
        DeviceBuffer dev(p.total, 0);
        ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
        std::vector<ob_hook_copy> copies;
        for (size_t i = 0; i < p.sizes.size(); i++)
            copies.push_back({dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i], 1, nullptr});
        for (int round = 0; round < 2; round++) {
            std::memset(dev.ptr, 0, p.total);
            ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()))
                << ompbatch_last_error();
            for (size_t i = 0; i < p.sizes.size(); i++)
                EXPECT_EQ(0, std::memcmp(dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i]));
        }
        EXPECT_EQ(0, fake().call_count("cuLaunchKernel")) << "mode " << mode;
        EXPECT_EQ(mode, fake().call_count("cuModuleLoadData")) << "tried once, not per batch";
        // The copy engine moved them: a batch or per-copy copies, as the routing decides.
        EXPECT_GT(fake().batch_record_count() + (size_t)fake().call_count("cuMemcpyAsync"), 0u);
    }
    unsetenv("OMPBATCH_STRATEGY");
    ob_config_reload();
}

TEST_F(HookCopy, AFailedLaunchIsReported)
{
    Pieces p(6, 10);
    DeviceBuffer dev(p.total, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    std::vector<ob_hook_copy> copies;
    for (size_t i = 0; i < p.sizes.size(); i++)
        copies.push_back({dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i], 1, nullptr});
    setenv("OMPBATCH_STRATEGY", "staged", 1); // six pieces alone would go direct
    ob_config_reload();
    ASSERT_EQ(0, fake().inject_failure("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()));
    EXPECT_NE(nullptr, std::strstr(ompbatch_last_error(), "cuLaunchKernel failed"))
        << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()));
    for (size_t i = 0; i < p.sizes.size(); i++)
        EXPECT_EQ(0, std::memcmp(dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i]));
    EXPECT_EQ(2, fake().call_count("cuLaunchKernel"));
    unsetenv("OMPBATCH_STRATEGY");
    ob_config_reload();
}

TEST_F(HookCopy, WithoutPinnedMemoryPiecesGoStraightToTheirDestinations)
{
    Pieces p(20, 3);
    DeviceBuffer dev(p.total, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    ASSERT_EQ(0, fake().inject_failure("cuMemAllocHost", 1, CUDA_ERROR_OUT_OF_MEMORY));
    std::vector<ob_hook_copy> copies;
    std::vector<std::vector<unsigned char>> dst(p.sizes.size());
    for (size_t i = 0; i < p.sizes.size(); i++) {
        std::memcpy(dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i]);
        dst[i].assign(p.sizes[i], 0x77);
        copies.push_back({dst[i].data(), dev.ptr + p.offsets[i], p.sizes[i], 0, nullptr});
    }
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()))
        << ompbatch_last_error();
    EXPECT_EQ(1, fake().call_count("cuMemAllocHost"));
    for (size_t i = 0; i < p.sizes.size(); i++)
        EXPECT_EQ(0, std::memcmp(dst[i].data(), p.host[i].data(), p.sizes[i])) << i;
}

TEST_F(HookCopy, PinnedStagingStaysWithinItsProcessWideCap)
{
    setenv("OMPBATCH_STAGING_MB", "1", 1);
    setenv("OMPBATCH_STRATEGY", "staged", 1); // these pieces are large enough to go direct
    ob_config_reload();
    const size_t piece = 700 << 10; // two need more than 1 MiB of staging
    DeviceBuffer dev(2 * piece, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    auto bytes = random_bytes(2 * piece, 61);
    std::memcpy(dev.ptr, bytes.data(), bytes.size());
    std::vector<unsigned char> dst(2 * piece, 0x42);
    ob_hook_copy two[2] = {{dst.data(), dev.ptr, piece, 0, nullptr},
                           {dst.data() + piece, dev.ptr + piece, piece, 0, nullptr}};
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, two, 2)) << ompbatch_last_error();
    EXPECT_EQ(bytes, dst);
    EXPECT_EQ(0, fake().call_count("cuMemAllocHost")) << "1.4 MiB of staging passes the cap";
    // Two smaller pieces fit: staged through one area of 1 MiB, the cap.
    std::fill(dst.begin(), dst.end(), 0x42);
    ob_hook_copy smaller[2] = {{dst.data(), dev.ptr, piece / 2, 0, nullptr},
                               {dst.data() + piece, dev.ptr + piece, piece / 2, 0, nullptr}};
    ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, smaller, 2)) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(dst.data(), bytes.data(), piece / 2));
    EXPECT_EQ(0, std::memcmp(dst.data() + piece, bytes.data() + piece, piece / 2));
    EXPECT_EQ(0x42, dst[piece / 2]) << "a byte past the first piece changed";
    EXPECT_EQ(1, fake().call_count("cuMemAllocHost"));
    unsetenv("OMPBATCH_STAGING_MB");
    unsetenv("OMPBATCH_STRATEGY");
    ob_config_reload();
}

TEST_F(HookCopy, ADriverFailureIsReportedAndTheNextBatchWorks)
{
    Pieces p(12, 4);
    DeviceBuffer dev(p.total, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    std::vector<ob_hook_copy> copies;
    for (size_t i = 0; i < p.sizes.size(); i++)
        copies.push_back({dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i], 1, nullptr});
    for (bool bus : {true, false}) {
        SCOPED_TRACE(bus ? "over the bus: the kernel fails" : "bulk copy: the copy fails");
        over_the_bus(bus);
        if (bus) {
            ASSERT_EQ(0, fake().inject_failure("cuLaunchKernel", 1, CUDA_ERROR_INVALID_VALUE));
        } else {
            ASSERT_EQ(0, fake().inject_batch_failure(1, 0, CUDA_ERROR_INVALID_VALUE));
            ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_INVALID_VALUE));
        }
        EXPECT_EQ(OMPBATCH_ERR_DRIVER,
                  ob_hook_copy_run(0, nullptr, copies.data(), copies.size()));
        EXPECT_NE(nullptr, std::strstr(ompbatch_last_error(), "CUDA_ERROR_INVALID_VALUE"))
            << ompbatch_last_error();
        fake().clear_injections();
        std::memset(dev.ptr, 0, p.total);
        ASSERT_EQ(OMPBATCH_OK, ob_hook_copy_run(0, nullptr, copies.data(), copies.size()))
            << ompbatch_last_error();
        for (size_t i = 0; i < p.sizes.size(); i++)
            EXPECT_EQ(0, std::memcmp(dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i])) << i;
    }
}

TEST_F(HookCopy, OutOfMemoryIsReportedAtEveryAllocation)
{
    Pieces p(8, 5);
    DeviceBuffer dev(p.total, 0);
    ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
    std::vector<ob_hook_copy> copies;
    for (size_t i = 0; i < p.sizes.size(); i++)
        copies.push_back({dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i], 1, nullptr});
    int failures = 0;
    for (long allowed = 0; allowed < 64; allowed++) {
        ob_hook_copy_reset_for_testing();
        ASSERT_EQ(1, ob_hook_device_usable(0, reinterpret_cast<uintptr_t>(dev.ptr)));
        std::memset(dev.ptr, 0, p.total);
        ob_alloc_fail_after_for_testing(allowed);
        int rc = ob_hook_copy_run(0, nullptr, copies.data(), copies.size());
        ob_alloc_fail_after_for_testing(-1);
        if (rc == OMPBATCH_OK) {
            for (size_t i = 0; i < p.sizes.size(); i++)
                ASSERT_EQ(0, std::memcmp(dev.ptr + p.offsets[i], p.host[i].data(), p.sizes[i]));
            break;
        }
        EXPECT_EQ(OMPBATCH_ERR_NO_MEMORY, rc) << "allowed " << allowed;
        failures++;
    }
    EXPECT_GT(failures, 0);
}

} // namespace
