// The hook's data entry points over a libomptarget 16 stand-in (fake_runtime/fake_omptarget.c,
// linked in, which records what reaches it) and the fake driver: decisions that need a whole
// construct to be seen.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/support/fake_fixture.h"

extern "C" {
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/omp_abi.h"

void __tgt_target_data_begin_mapper(ob_ident *loc, int64_t device_id, int32_t count,
                                    void **bases, void **begins, int64_t *sizes, int64_t *types,
                                    void **names, void **mappers);
void __tgt_target_data_end_mapper(ob_ident *loc, int64_t device_id, int32_t count, void **bases,
                                  void **begins, int64_t *sizes, int64_t *types, void **names,
                                  void **mappers);
void __tgt_target_data_update_mapper(ob_ident *loc, int64_t device_id, int32_t count,
                                     void **bases, void **begins, int64_t *sizes,
                                     int64_t *types, void **names, void **mappers);
// What the stand-in saw last, and where its begins map their first item.
extern int fake_rt_calls, fake_rt_last_kind;
extern int32_t fake_rt_last_count;
extern int64_t fake_rt_last_types[8];
extern void *fake_rt_last_begins[8];
extern char *fake_rt_map_at;
}

namespace {

class HookEntry : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_NE(nullptr, fake().handle) << fake().error;
        fake().reset_config();
        fake().reset();
        fake().set_device_count(2);
        fake().deinit();
        ob_hook_copy_reset_for_testing();
        ob_driver_reload_for_testing();
        ASSERT_TRUE(ob_driver_get()->loaded) << ob_driver_get()->reason;
        // Switched on, which also links the hook's entry points into this test ahead of the
        // stand-in's (an archive member is linked only when something names it).
        ASSERT_EQ(1, ompbatch_hook_set_enabled(1));
        ob_mirror_drop_device(0);
    }
    void TearDown() override
    {
        fake_rt_map_at = nullptr;
        ob_mirror_drop_device(0);
        ob_hook_copy_reset_for_testing();
    }
};

// OpenMP device 0 whose mapping lies in CUDA device 1's memory is a numbering the hook does not
// know: the update's item goes to the runtime as it was passed, counted as forwarded (the
// device's reason), and the hook copies nothing.
TEST_F(HookEntry, AnUpdateOnADeviceTheHookDoesNotCopyForGoesToTheRuntime)
{
    Buffer host(PAGEABLE, 4096), dev(DEVICE, 4096, 1);
    host.fill(11);
    std::memset(dev.ptr, 0x5A, dev.bytes);
    ob_mirror_entry e{};
    e.begin = reinterpret_cast<uintptr_t>(host.ptr);
    e.end = e.begin + host.bytes;
    e.device = reinterpret_cast<uintptr_t>(dev.ptr);
    e.dyn = 1;
    ASSERT_EQ(0, ob_mirror_insert(0, &e));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_hook_reset_stats());
    void *bases[] = {host.ptr}, *begins[] = {host.ptr};
    int64_t sizes[] = {int64_t(host.bytes)}, types[] = {OB_MAP_TO};
    const int calls = fake_rt_calls;
    __tgt_target_data_update_mapper(nullptr, 0, 1, bases, begins, sizes, types, nullptr, nullptr);
    EXPECT_EQ(calls + 1, fake_rt_calls);
    EXPECT_EQ(3, fake_rt_last_kind) << "an update";
    EXPECT_EQ(1, fake_rt_last_count);
    EXPECT_EQ(host.ptr, fake_rt_last_begins[0]);
    ompbatch_hook_stats stats = {};
    stats.struct_size = sizeof(stats);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_hook_get_stats(&stats));
    EXPECT_EQ(OMPBATCH_HOOK_ACTIVE, stats.state);
    EXPECT_EQ(1u, stats.constructs);
    EXPECT_EQ(0u, stats.update_batched);
    EXPECT_EQ(1u, stats.items_forwarded);
    EXPECT_EQ(0u, stats.batches);
    for (size_t j = 0; j < dev.bytes; j++)
        ASSERT_EQ(0x5A, dev.ptr[j]) << "the hook wrote device byte " << j;
    // The same item on a device whose memory it can place is the hook's.
    ob_mirror_drop_device(0);
    ob_hook_copy_reset_for_testing();
    Buffer dev0(DEVICE, 4096, 0);
    e.device = reinterpret_cast<uintptr_t>(dev0.ptr);
    ASSERT_EQ(0, ob_mirror_insert(0, &e));
    __tgt_target_data_update_mapper(nullptr, 0, 1, bases, begins, sizes, types, nullptr, nullptr);
    EXPECT_EQ(calls + 1, fake_rt_calls) << "not forwarded";
    EXPECT_EQ(0, std::memcmp(dev0.ptr, host.ptr, host.bytes)) << "copied by the hook";
}

ompbatch_hook_stats stats_now()
{
    ompbatch_hook_stats stats = {};
    stats.struct_size = sizeof(stats);
    EXPECT_EQ(OMPBATCH_OK, ompbatch_hook_get_stats(&stats));
    return stats;
}

// `target enter data map(to:)` and `target exit data map(from:)` of an array the runtime maps
// into memory of a CUDA device other than the OpenMP device's: the hook takes the begin's `to`
// away, lets the runtime allocate, finds the mapping's memory is not its device's and gives the
// copy back to the runtime as an update; the end's `from` reaches the runtime untouched. The
// hook reads or writes none of the bytes. On the device's own memory both copies are the hook's.
TEST_F(HookEntry, EnterAndExitOnADeviceTheHookDoesNotCopyForLeaveTheCopiesToTheRuntime)
{
    Buffer host(PAGEABLE, 4096), dev(DEVICE, 4096, 1);
    host.fill(23);
    std::vector<unsigned char> written(host.ptr, host.ptr + host.bytes);
    std::memset(dev.ptr, 0x5A, dev.bytes);
    fake_rt_map_at = reinterpret_cast<char *>(dev.ptr);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_hook_reset_stats());
    void *bases[] = {host.ptr}, *begins[] = {host.ptr};
    int64_t sizes[] = {int64_t(host.bytes)}, to[] = {OB_MAP_TO}, from[] = {OB_MAP_FROM};
    const int calls = fake_rt_calls;
    __tgt_target_data_begin_mapper(nullptr, 0, 1, bases, begins, sizes, to, nullptr, nullptr);
    EXPECT_EQ(calls + 2, fake_rt_calls) << "the begin, then the copy given back";
    EXPECT_EQ(3, fake_rt_last_kind) << "an update";
    EXPECT_EQ(host.ptr, fake_rt_last_begins[0]);
    EXPECT_EQ(OB_MAP_TO, fake_rt_last_types[0] & (OB_MAP_TO | OB_MAP_FROM));
    ompbatch_hook_stats stats = stats_now();
    EXPECT_EQ(0u, stats.enter_batched);
    EXPECT_EQ(1u, stats.items_forwarded);
    EXPECT_EQ(0u, stats.batches);

    __tgt_target_data_end_mapper(nullptr, 0, 1, bases, begins, sizes, from, nullptr, nullptr);
    EXPECT_EQ(calls + 3, fake_rt_calls) << "the end alone";
    EXPECT_EQ(2, fake_rt_last_kind);
    EXPECT_EQ(OB_MAP_FROM, fake_rt_last_types[0] & (OB_MAP_TO | OB_MAP_FROM))
        << "the end's `from` left to the runtime";
    stats = stats_now();
    EXPECT_EQ(0u, stats.exit_batched);
    EXPECT_EQ(2u, stats.items_forwarded);
    EXPECT_EQ(0u, stats.batches);
    for (size_t j = 0; j < dev.bytes; j++)
        ASSERT_EQ(0x5A, dev.ptr[j]) << "the hook wrote device byte " << j;
    EXPECT_EQ(0, std::memcmp(written.data(), host.ptr, host.bytes)) << "the hook wrote host bytes";

    // The same on device 0's memory: the begin's `to` and the end's `from` are the hook's.
    ob_hook_copy_reset_for_testing();
    Buffer dev0(DEVICE, 4096, 0);
    std::memset(dev0.ptr, 0x5A, dev0.bytes);
    fake_rt_map_at = reinterpret_cast<char *>(dev0.ptr);
    __tgt_target_data_begin_mapper(nullptr, 0, 1, bases, begins, sizes, to, nullptr, nullptr);
    EXPECT_EQ(calls + 4, fake_rt_calls) << "the begin alone";
    EXPECT_EQ(1, fake_rt_last_kind);
    EXPECT_EQ(0, fake_rt_last_types[0] & OB_MAP_TO) << "the `to` taken by the hook";
    EXPECT_EQ(0, std::memcmp(dev0.ptr, host.ptr, host.bytes)) << "copied by the hook";
    host.fill(37);
    std::vector<unsigned char> device_bytes(host.ptr, host.ptr + host.bytes);
    std::memcpy(dev0.ptr, device_bytes.data(), dev0.bytes);
    std::memset(host.ptr, 0xC3, host.bytes);
    __tgt_target_data_end_mapper(nullptr, 0, 1, bases, begins, sizes, from, nullptr, nullptr);
    EXPECT_EQ(calls + 5, fake_rt_calls);
    EXPECT_EQ(0, fake_rt_last_types[0] & OB_MAP_FROM) << "the `from` taken by the hook";
    EXPECT_EQ(0, std::memcmp(device_bytes.data(), host.ptr, host.bytes)) << "copied back";
    stats = stats_now();
    EXPECT_EQ(1u, stats.enter_batched);
    EXPECT_EQ(1u, stats.exit_batched);
}

} // namespace
