// The hook's registration of long-lived mapped host ranges (OMPBATCH_REGISTER_MB) through the
// fake driver: when a mirrored entry is registered, that its copies then go straight to the
// device byte for byte, that it is unregistered whichever way it leaves the mirror, the cap,
// and every refusal (the driver's, the cap's, a host-offload device's) leaving the copies as
// they were. Last, through the hook's own entry points over a libomptarget.so.16 stand-in
// (fake_runtime/fake_omptarget.c, linked in): every registration undone when the hook turns
// pass-through for good.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/support/fake_fixture.h"

extern "C" {
#include "plugin/core/config.h"
#include "plugin/cuda/memkind.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_register.h"
#include "plugin/hook/hook_state.h"
#include "plugin/hook/omp_abi.h"

// The hook's entry points, defined by the library linked into this test; the stand-in runtime
// after it is what they forward to.
void __tgt_register_requires(int64_t flags);
int __tgt_target_kernel(ob_ident *loc, int64_t device_id, int32_t num_teams,
                        int32_t thread_limit, void *host_ptr, ob_kernel_args *args);
}

namespace {

constexpr int kDevice = 0;
constexpr size_t kMiB = size_t(1) << 20;

// The driver's current word on host memory, through a fresh cache.
ob_mem_kind kind_of(const void *p)
{
    ob_mem_cache cache = {};
    ob_mem_info info = {};
    EXPECT_EQ(OMPBATCH_OK,
              ob_mem_classify(ob_driver_get(), &cache, reinterpret_cast<uintptr_t>(p), &info));
    ob_mem_cache_free(&cache);
    return info.kind;
}

long long registrations()
{
    return fake().call_count("cuMemHostRegister");
}

long long unregistrations()
{
    return fake().call_count("cuMemHostUnregister");
}

class HookRegister : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_NE(nullptr, fake().handle) << fake().error;
        fake().reset_config();
        fake().reset();
        fake().set_device_count(1);
        fake().deinit();
        unsetenv("OMPBATCH_STRATEGY");
        set_cap(nullptr);
        ob_hook_copy_reset_for_testing();
        ob_driver_reload_for_testing();
        ASSERT_TRUE(ob_driver_get()->loaded) << ob_driver_get()->reason;
        ob_mirror_drop_device(kDevice);
    }
    void TearDown() override
    {
        ob_mirror_drop_device(kDevice);
        EXPECT_EQ(0u, ob_hook_registered_bytes()) << "every registration was undone";
        ob_hook_copy_reset_for_testing();
        fake().clear_injections();
        set_cap(nullptr);
    }
    static void set_cap(const char *mib)
    {
        if (mib != nullptr)
            setenv("OMPBATCH_REGISTER_MB", mib, 1);
        else
            unsetenv("OMPBATCH_REGISTER_MB");
        ob_config_reload();
    }
    // A mirrored entry for [host, host + bytes) at dev, the device verdict made.
    static ob_mirror_entry *mirror(const unsigned char *host, size_t bytes,
                                   const unsigned char *dev)
    {
        EXPECT_EQ(1, ob_hook_device_usable(kDevice, reinterpret_cast<uintptr_t>(dev)));
        ob_mirror_entry e{};
        e.begin = reinterpret_cast<uintptr_t>(host);
        e.end = e.begin + bytes;
        e.device = reinterpret_cast<uintptr_t>(dev);
        e.dyn = 1;
        EXPECT_EQ(0, ob_mirror_insert(kDevice, &e));
        return found(host, bytes);
    }
    static ob_mirror_entry *found(const unsigned char *host, size_t bytes)
    {
        ob_mirror_entry *entry = nullptr;
        uintptr_t begin = reinterpret_cast<uintptr_t>(host);
        EXPECT_EQ(OB_MIRROR_INSIDE, ob_mirror_find(kDevice, begin, begin + bytes, &entry));
        return entry;
    }
    // n updates of the whole range whose copies took `ns` each (as the hook's update notes
    // them: before the copies, then their time).
    static void updates(const unsigned char *host, size_t bytes, int n, uint64_t ns)
    {
        for (int i = 0; i < n; i++) {
            ob_hook_register_note_update(kDevice, found(host, bytes));
            ob_hook_register_note_time(found(host, bytes), bytes, ns);
        }
    }
    // A copy time that earns a registration of `bytes` in `k` updates, the registration coming
    // at the update after them.
    static uint64_t earning_in(size_t bytes, uint64_t k)
    {
        return ob_hook_registered_copy_ns(bytes) + (ob_hook_register_cost_ns(bytes) + k - 1) / k;
    }
    static constexpr int kEarn = 3; // updates(..., kEarn + 1, earning_in(bytes, kEarn)) registers
    static void earn(const unsigned char *host, size_t bytes, int extra = 0)
    {
        updates(host, bytes, kEarn + 1 + extra, earning_in(bytes, kEarn));
    }
    // One update each way of the whole range on fresh bytes, poisoned destinations first;
    // returns the paths the hook's batches took.
    static unsigned round_trip(Buffer &host, Buffer &dev, uint64_t salt)
    {
        EXPECT_EQ(OMPBATCH_OK, ompbatch_hook_reset_stats());
        host.fill(salt);
        std::vector<unsigned char> want(host.ptr, host.ptr + host.bytes);
        std::memset(dev.ptr, 0x5A, dev.bytes);
        ob_hook_copy to = {dev.ptr, host.ptr, host.bytes, 1, nullptr};
        EXPECT_EQ(OMPBATCH_OK, ob_hook_copy_run(kDevice, nullptr, &to, 1)) << ompbatch_last_error();
        EXPECT_EQ(0, std::memcmp(dev.ptr, want.data(), want.size())) << "to the device";
        dev.fill(salt + 1);
        want.assign(dev.ptr, dev.ptr + dev.bytes);
        std::memset(host.ptr, 0x3C, host.bytes);
        ob_hook_copy from = {host.ptr, dev.ptr, host.bytes, 0, nullptr};
        EXPECT_EQ(OMPBATCH_OK, ob_hook_copy_run(kDevice, nullptr, &from, 1))
            << ompbatch_last_error();
        EXPECT_EQ(0, std::memcmp(host.ptr, want.data(), want.size())) << "from the device";
        ompbatch_hook_stats stats = {};
        stats.struct_size = sizeof(stats);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_hook_get_stats(&stats));
        return stats.paths;
    }
};

TEST_F(HookRegister, NothingIsRegisteredUnlessAsked)
{
    Buffer host(PAGEABLE, 2 * kMiB), dev(DEVICE, 2 * kMiB);
    ob_mirror_entry *entry = mirror(host.ptr, host.bytes, dev.ptr);
    earn(host.ptr, host.bytes, 10);
    EXPECT_EQ(OB_PIN_NONE, entry->pinned);
    EXPECT_EQ(0, registrations());
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(host.ptr));
}

// Once the time its updates took beyond registered copies' pace reaches the cost of a
// registration, the range is registered before its next update; its copies then go between
// its own pages and the device (no pack, no unpack) and arrive byte for byte; dropped, it is
// unregistered.
TEST_F(HookRegister, ARangeIsRegisteredOnceItsUpdatesPaidForIt)
{
    set_cap("64");
    Buffer host(PAGEABLE, 2 * kMiB + 123), dev(DEVICE, 2 * kMiB + 123);
    mirror(host.ptr, host.bytes, dev.ptr);
    unsigned before = round_trip(host, dev, 1);
    EXPECT_NE(0u, before & OMPBATCH_PATH_STAGED) << "pageable: through pinned staging";
    const uint64_t slow = earning_in(host.bytes, 5);
    updates(host.ptr, host.bytes, 5, slow);
    EXPECT_EQ(0, registrations()) << "paid for, not yet bought";
    ompbatch_hook_stats stats = {};
    stats.struct_size = sizeof(stats);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_hook_reset_stats());
    updates(host.ptr, host.bytes, 1, slow);
    EXPECT_EQ(1, registrations());
    ASSERT_EQ(OMPBATCH_OK, ompbatch_hook_get_stats(&stats));
    EXPECT_EQ(1u, stats.registrations);
    EXPECT_EQ(host.bytes, stats.bytes_registered);
    EXPECT_EQ(OB_PIN_REGISTERED, found(host.ptr, host.bytes)->pinned);
    EXPECT_EQ(host.bytes, ob_hook_registered_bytes());
    EXPECT_EQ(OB_MEM_PINNED, kind_of(host.ptr));
    EXPECT_EQ(OB_MEM_PINNED, kind_of(host.ptr + host.bytes - 1));
    unsigned after = round_trip(host, dev, 3);
    EXPECT_EQ(0u, after & (OMPBATCH_PATH_STAGED | OMPBATCH_PATH_KERNEL))
        << "registered: straight between its pages and the device, paths " << after;
    updates(host.ptr, host.bytes, 5, slow);
    EXPECT_EQ(1, registrations()) << "once";

    ob_mirror_drop_range(kDevice, reinterpret_cast<uintptr_t>(host.ptr),
                         reinterpret_cast<uintptr_t>(host.ptr) + 1);
    EXPECT_EQ(1, unregistrations());
    EXPECT_EQ(0u, ob_hook_registered_bytes());
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(host.ptr));
    EXPECT_NE(0u, round_trip(host, dev, 5) & OMPBATCH_PATH_STAGED) << "pageable again";
}

// Every batch learns of the hook's registrations, not only the hook's own on this thread: a
// batch of the program's that planned the range as pageable plans it as pinned afterwards, and
// as pageable again once it is unregistered (a stale "pinned" could let the copy kernel reach
// for pages the GPU no longer maps). Its copies are byte-exact throughout.
TEST_F(HookRegister, EveryBatchLearnsOfARegistrationAndItsUndoing)
{
    set_cap("64");
    Buffer host(PAGEABLE, 2 * kMiB), dev(DEVICE, 2 * kMiB);
    mirror(host.ptr, host.bytes, dev.ptr);
    Batch batch(0);
    // The same copy each time, so that the batch would reuse its plan if nothing told it.
    auto paths = [&](uint64_t salt) {
        host.fill(salt);
        std::vector<unsigned char> want(host.ptr, host.ptr + host.bytes);
        std::memset(dev.ptr, 0x5A, dev.bytes);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev.ptr, 0, host.ptr,
                                                  OMPBATCH_HOST_DEVICE, host.bytes, 0));
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
        EXPECT_EQ(0, std::memcmp(dev.ptr, want.data(), want.size()));
        unsigned p = batch.stats().paths;
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        return p;
    };
    EXPECT_NE(0u, paths(1) & OMPBATCH_PATH_STAGED) << "pageable";
    EXPECT_NE(0u, paths(2) & OMPBATCH_PATH_STAGED) << "pageable, the plan reused";
    earn(host.ptr, host.bytes);
    ASSERT_EQ(1, registrations());
    EXPECT_EQ(0u, paths(3) & (OMPBATCH_PATH_STAGED | OMPBATCH_PATH_KERNEL)) << "pinned now";
    ob_mirror_drop_device(kDevice);
    ASSERT_EQ(1, unregistrations());
    EXPECT_NE(0u, paths(4) & OMPBATCH_PATH_STAGED) << "pageable again";
}

TEST_F(HookRegister, EveryWayOutOfTheMirrorUnregisters)
{
    set_cap("64");
    Buffer a(PAGEABLE, 2 * kMiB), b(PAGEABLE, 2 * kMiB), dev(DEVICE, 4 * kMiB);
    // Replaced by an overlapping insert (the runtime mapped the memory again).
    mirror(a.ptr, a.bytes, dev.ptr);
    earn(a.ptr, a.bytes);
    ASSERT_EQ(1, registrations());
    ob_mirror_entry *replaced = mirror(a.ptr + 100, 1000, dev.ptr);
    EXPECT_EQ(1, unregistrations());
    EXPECT_EQ(OB_PIN_NONE, replaced->pinned);
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(a.ptr));
    // With the device's whole table.
    mirror(a.ptr, a.bytes, dev.ptr);
    mirror(b.ptr, b.bytes, dev.ptr + 2 * kMiB);
    earn(a.ptr, a.bytes);
    earn(b.ptr, b.bytes);
    EXPECT_EQ(3, registrations());
    EXPECT_EQ(4 * kMiB, ob_hook_registered_bytes());
    ob_mirror_drop_device(kDevice);
    EXPECT_EQ(3, unregistrations());
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(a.ptr));
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(b.ptr));
}

// Switched off (or pass-through for good), the hook no longer sees mappings die, so every
// registration is undone at once; the entries stay, never to be registered again, and the
// mirror is forgotten when the hook is switched on again.
TEST_F(HookRegister, SwitchingTheHookOffUndoesEveryRegistration)
{
    set_cap("64");
    Buffer a(PAGEABLE, 2 * kMiB), b(PAGEABLE, 2 * kMiB), dev(DEVICE, 4 * kMiB);
    mirror(a.ptr, a.bytes, dev.ptr);
    mirror(b.ptr, b.bytes, dev.ptr + 2 * kMiB);
    earn(a.ptr, a.bytes);
    earn(b.ptr, b.bytes);
    ASSERT_EQ(2, registrations());
    ASSERT_EQ(1, ompbatch_hook_set_enabled(0)) << ompbatch_last_error();
    EXPECT_EQ(2, unregistrations());
    EXPECT_EQ(0u, ob_hook_registered_bytes());
    EXPECT_EQ(OB_PIN_REFUSED, found(a.ptr, a.bytes)->pinned);
    EXPECT_EQ(OB_PIN_REFUSED, found(b.ptr, b.bytes)->pinned);
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(a.ptr));
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(b.ptr));
    earn(a.ptr, a.bytes, 5);
    EXPECT_EQ(2, registrations()) << "not registered again";
    EXPECT_EQ(0, ompbatch_hook_set_enabled(1));
    EXPECT_EQ(0u, ob_mirror_count(kDevice));
    EXPECT_EQ(2, unregistrations());
}

TEST_F(HookRegister, SmallRangesAreNeverRegistered)
{
    set_cap("64");
    Buffer host(PAGEABLE, OB_REGISTER_MIN_BYTES - 1), dev(DEVICE, OB_REGISTER_MIN_BYTES);
    mirror(host.ptr, host.bytes, dev.ptr);
    earn(host.ptr, host.bytes, 20);
    EXPECT_EQ(0, registrations());
}

// Copies as fast as registered ones would be earn nothing, however many; slow ones earn it in
// proportion: twice the excess, half the updates.
TEST_F(HookRegister, OnlyTimeBeyondTheRegisteredPaceCounts)
{
    set_cap("64");
    Buffer a(PAGEABLE, 2 * kMiB), b(PAGEABLE, 2 * kMiB), dev(DEVICE, 4 * kMiB);
    mirror(a.ptr, a.bytes, dev.ptr);
    mirror(b.ptr, b.bytes, dev.ptr + 2 * kMiB);
    updates(a.ptr, a.bytes, 200, ob_hook_registered_copy_ns(a.bytes));
    EXPECT_EQ(0, registrations());
    EXPECT_EQ(0u, found(a.ptr, a.bytes)->excess_ns);
    const uint64_t excess = ob_hook_register_cost_ns(b.bytes) / 8 + 1;
    updates(b.ptr, b.bytes, 8, ob_hook_registered_copy_ns(b.bytes) + excess);
    EXPECT_EQ(0, registrations()) << "7 updates' excess is short of the cost";
    updates(b.ptr, b.bytes, 1, 0);
    EXPECT_EQ(1, registrations()) << "8 of them reach it";
    EXPECT_EQ(OB_PIN_REGISTERED, found(b.ptr, b.bytes)->pinned);
    updates(a.ptr, a.bytes, 4, ob_hook_registered_copy_ns(a.bytes) + 2 * excess);
    EXPECT_EQ(1, registrations()) << "4 updates at twice the excess earn it, bought at the 5th";
    updates(a.ptr, a.bytes, 1, 0);
    EXPECT_EQ(2, registrations());
    // A 64 MiB range whose updates take 1.5 ms (an idle H100 host's staging pipeline) waits
    // for about 20 of them; at 4.3 ms (the driver's pageable copy on a busy host), 2.
    const size_t big = 64 * kMiB;
    EXPECT_GE(ob_hook_register_cost_ns(big) / (1500000 - ob_hook_registered_copy_ns(big)), 15u);
    EXPECT_LE(ob_hook_register_cost_ns(big) / (4300000 - ob_hook_registered_copy_ns(big)), 2u);
}

TEST_F(HookRegister, TheCapIsKept)
{
    set_cap("3");
    Buffer a(PAGEABLE, 2 * kMiB), b(PAGEABLE, 2 * kMiB), dev(DEVICE, 4 * kMiB);
    mirror(a.ptr, a.bytes, dev.ptr);
    mirror(b.ptr, b.bytes, dev.ptr + 2 * kMiB);
    earn(a.ptr, a.bytes);
    earn(b.ptr, b.bytes, 3);
    EXPECT_EQ(1, registrations()) << "2 + 2 MiB would pass the cap of 3";
    EXPECT_EQ(OB_PIN_REGISTERED, found(a.ptr, a.bytes)->pinned);
    EXPECT_EQ(OB_PIN_REFUSED, found(b.ptr, b.bytes)->pinned);
    EXPECT_EQ(2 * kMiB, ob_hook_registered_bytes());
    // A range larger than the whole cap is refused too.
    set_cap("1");
    Buffer c(PAGEABLE, 2 * kMiB), dev_c(DEVICE, 2 * kMiB);
    mirror(c.ptr, c.bytes, dev_c.ptr);
    earn(c.ptr, c.bytes);
    EXPECT_EQ(1, registrations());
    EXPECT_EQ(OB_PIN_REFUSED, found(c.ptr, c.bytes)->pinned);
}

// The driver refuses (here as it refuses a range the program registered itself): the range
// is not tried again, its copies stay staged and exact, and the program's registration is
// left alone.
TEST_F(HookRegister, ARefusedRegistrationIsNotTriedAgain)
{
    set_cap("64");
    Buffer host(PAGEABLE, 2 * kMiB), dev(DEVICE, 2 * kMiB);
    mirror(host.ptr, host.bytes, dev.ptr);
    const ob_driver *d = ob_driver_get();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    ASSERT_EQ(CUDA_SUCCESS, d->fn.cuMemHostRegister(host.ptr + 4096, 4096, 0));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    earn(host.ptr, host.bytes, 4);
    EXPECT_EQ(2, registrations()) << "the program's, then the hook's one try";
    EXPECT_EQ(OB_PIN_REFUSED, found(host.ptr, host.bytes)->pinned);
    EXPECT_EQ(0u, ob_hook_registered_bytes());
    EXPECT_NE(0u, round_trip(host, dev, 7) & OMPBATCH_PATH_STAGED);
    ob_mirror_drop_device(kDevice);
    EXPECT_EQ(0, unregistrations()) << "nothing of the hook's to undo";
    EXPECT_EQ(OB_MEM_PINNED, kind_of(host.ptr + 4096)) << "the program's registration stays";
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    EXPECT_EQ(CUDA_SUCCESS, d->fn.cuMemHostUnregister(host.ptr + 4096));
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());

    // A failure of the call itself, injected: the same.
    fake().reset();
    mirror(host.ptr, host.bytes, dev.ptr);
    ASSERT_EQ(0, fake().inject_failure("cuMemHostRegister", 1, CUDA_ERROR_OUT_OF_MEMORY));
    earn(host.ptr, host.bytes, 4);
    EXPECT_EQ(1, registrations());
    EXPECT_EQ(OB_PIN_REFUSED, found(host.ptr, host.bytes)->pinned);
    EXPECT_NE(0u, round_trip(host, dev, 9) & OMPBATCH_PATH_STAGED);
}

// A failed unregistration is logged; the hook's count of registered bytes lets it go (the
// mapping is gone either way).
TEST_F(HookRegister, AFailedUnregistrationIsLetGo)
{
    set_cap("64");
    Buffer host(PAGEABLE, 2 * kMiB), dev(DEVICE, 2 * kMiB);
    mirror(host.ptr, host.bytes, dev.ptr);
    earn(host.ptr, host.bytes);
    ASSERT_EQ(2 * kMiB, ob_hook_registered_bytes());
    ASSERT_EQ(0, fake().inject_failure("cuMemHostUnregister", 1, CUDA_ERROR_UNKNOWN));
    ob_mirror_drop_device(kDevice);
    EXPECT_EQ(1, unregistrations());
    EXPECT_EQ(0u, ob_hook_registered_bytes());
    EXPECT_EQ(OB_MEM_PINNED, kind_of(host.ptr)) << "the driver kept it";
    const ob_driver *d = ob_driver_get();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    EXPECT_EQ(CUDA_SUCCESS, d->fn.cuMemHostUnregister(host.ptr));
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
}

// LLVM's host-offload devices copy with memcpy: nothing to register.
TEST_F(HookRegister, AHostOffloadDeviceRegistersNothing)
{
    set_cap("64");
    std::vector<unsigned char> host(2 * kMiB), device_side(2 * kMiB);
    mirror(host.data(), host.size(), device_side.data());
    earn(host.data(), host.size(), 2);
    EXPECT_EQ(0, registrations());
    EXPECT_EQ(OB_PIN_REFUSED, found(host.data(), host.size())->pinned);
}

// The hook turns pass-through for good when the program turns out to need what it does not
// follow: it would no longer see the registered ranges' mappings die (their memory could be
// freed while the driver keeps it locked), so every registration is undone at once, the
// entries kept and never registered again.
class HookGoesPassThrough : public HookRegister {
protected:
    void TearDown() override
    {
        HookRegister::TearDown();
        // As the hook was before: the flags are sticky by design.
        ob_hook_state_set(OB_HOOK_UNIFIED_MEMORY, 0);
        ob_hook_state_set(OB_HOOK_RUNTIME_KNOWN, 1);
    }
    // One registered range, with the hook active over the stand-in runtime.
    void register_one(Buffer &host, Buffer &dev)
    {
        __tgt_register_requires(0); // loads the hook over the stand-in; requires nothing
        ASSERT_EQ(1, ob_hook_active()) << "over libomptarget.so.16";
        set_cap("64");
        mirror(host.ptr, host.bytes, dev.ptr);
        earn(host.ptr, host.bytes);
        ASSERT_EQ(1, registrations());
        ASSERT_EQ(OB_PIN_REGISTERED, found(host.ptr, host.bytes)->pinned);
    }
    static int hook_state()
    {
        ompbatch_hook_stats stats = {};
        stats.struct_size = sizeof(stats);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_hook_get_stats(&stats));
        return stats.state;
    }
};

TEST_F(HookGoesPassThrough, WhenTheProgramRequiresUnifiedSharedMemory)
{
    Buffer host(PAGEABLE, 2 * kMiB), dev(DEVICE, 2 * kMiB);
    register_one(host, dev);
    __tgt_register_requires(OB_REQ_UNIFIED_SHARED_MEMORY);
    EXPECT_EQ(OMPBATCH_HOOK_PASS_THROUGH, hook_state());
    EXPECT_EQ(1, unregistrations());
    EXPECT_EQ(0u, ob_hook_registered_bytes());
    EXPECT_EQ(OB_PIN_REFUSED, found(host.ptr, host.bytes)->pinned);
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(host.ptr));
    earn(host.ptr, host.bytes, 5);
    EXPECT_EQ(1, registrations()) << "not registered again";
}

TEST_F(HookGoesPassThrough, WhenARegionPassesKernelArgumentsNewerThanTheRuntimes)
{
    Buffer host(PAGEABLE, 2 * kMiB), dev(DEVICE, 2 * kMiB);
    register_one(host, dev);
    ob_kernel_args args = {};
    args.version = 99; // libomptarget 16 knows versions up to 2
    EXPECT_EQ(0, __tgt_target_kernel(nullptr, 0, 1, 1, nullptr, &args)) << "forwarded";
    EXPECT_EQ(OMPBATCH_HOOK_PASS_THROUGH, hook_state());
    EXPECT_EQ(1, unregistrations());
    EXPECT_EQ(0u, ob_hook_registered_bytes());
    EXPECT_EQ(OB_PIN_REFUSED, found(host.ptr, host.bytes)->pinned);
    EXPECT_EQ(OB_MEM_PAGEABLE, kind_of(host.ptr));
}

} // namespace
