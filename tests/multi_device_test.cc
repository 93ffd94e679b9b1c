// Several GPUs through the fake driver (8 devices): one host thread per device moving data with
// every strategy at once must keep to its device's resources -- the library stream on that
// device's primary context, the copy kernel from that context's module, staging and kept
// descriptors of its own -- and every byte must arrive. The fake refuses a kernel launched in
// another device's context and stops on a kernel that touches another device's memory.
// OMPBATCH_TEST_SEED=<n> replays a run.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/fake_fixture.h"

extern "C" {
#include "plugin/config.h"
#include "plugin/cost.h"
#include "plugin/resources.h"
}

namespace {

constexpr int kDevices = 8;

class MultiDevice : public FakeDriver {
protected:
    void SetUp() override
    {
        // FAKE_CUDA_DEVICE_COUNT=8 in the test's environment: load() rereads the fake's
        // configuration from it.
        load();
        ASSERT_EQ(kDevices, ob_driver_get()->device_count);
    }
};

// Pieces of random sizes (1 B .. 6 KiB) at random offsets, one per 8 KiB slot.
struct Pieces {
    std::vector<size_t> offsets, sizes;
    Pieces(size_t count, uint64_t salt)
    {
        auto r = random_bytes(count * 4, salt);
        for (size_t i = 0; i < count; i++) {
            size_t size = 1 + ((size_t)r[4 * i] << 8 | r[4 * i + 1]) % 6144;
            size_t slack = 8192 - size;
            offsets.push_back(i * 8192 + ((size_t)r[4 * i + 2] << 8 | r[4 * i + 3]) % slack);
            sizes.push_back(size);
        }
    }
};

// One device's work: pageable and pinned host data to the device and back, through one batch
// per strategy, several rounds (so refills reuse plans and kept descriptors). Returns a
// description of the first difference, or "".
std::string device_round_trips(int device)
{
    const size_t count = 48, span = count * 8192;
    const int strategies[] = {OMPBATCH_STRATEGY_STAGED, OMPBATCH_STRATEGY_DIRECT,
                              OMPBATCH_STRATEGY_AUTO};
    for (int strategy : strategies) {
        ompbatch_batch_options o;
        std::memset(&o, 0, sizeof(o));
        o.struct_size = sizeof(o);
        o.strategy = strategy;
        Batch batch(device, nullptr, &o);
        if (batch.b == nullptr)
            return "create failed: " + std::string(ompbatch_last_error());
        for (int round = 0; round < 3; round++) {
            uint64_t salt = 1000u * (unsigned)device + 10u * (unsigned)strategy + (unsigned)round;
            Pieces p(count, salt);
            Buffer pageable(PAGEABLE, span), pinned(PINNED, span), dev(DEVICE, 2 * span, device);
            Buffer back_pageable(PAGEABLE, span), back_pinned(PINNED, span);
            pageable.fill(salt);
            pinned.fill(salt + 7);
            for (int lane = 0; lane < 2; lane++) {
                ompbatch_batch *b = batch.b;
                int status = ompbatch_batch_reset(b);
                const Buffer &src = lane == 0 ? pageable : pinned;
                for (size_t i = 0; i < count && status == OMPBATCH_OK; i++)
                    status = ompbatch_batch_add(b, dev.ptr + lane * span + p.offsets[i], device,
                                                src.ptr + p.offsets[i], OMPBATCH_HOST_DEVICE,
                                                p.sizes[i], OMPBATCH_MAP_TO);
                if (status == OMPBATCH_OK)
                    status = ompbatch_batch_submit(b);
                if (status == OMPBATCH_OK)
                    status = ompbatch_batch_wait(b);
                if (status != OMPBATCH_OK)
                    return "device " + std::to_string(device) + " H2D: " + ompbatch_last_error();
            }
            for (int lane = 0; lane < 2; lane++) {
                ompbatch_batch *b = batch.b;
                int status = ompbatch_batch_reset(b);
                const Buffer &dst = lane == 0 ? back_pageable : back_pinned;
                for (size_t i = 0; i < count && status == OMPBATCH_OK; i++)
                    status = ompbatch_batch_add(b, dst.ptr + p.offsets[i], OMPBATCH_HOST_DEVICE,
                                                dev.ptr + lane * span + p.offsets[i], device,
                                                p.sizes[i], OMPBATCH_MAP_FROM);
                if (status == OMPBATCH_OK)
                    status = ompbatch_batch_submit(b);
                if (status == OMPBATCH_OK)
                    status = ompbatch_batch_wait(b);
                if (status != OMPBATCH_OK)
                    return "device " + std::to_string(device) + " D2H: " + ompbatch_last_error();
            }
            // Every piece came back; the poison between pieces is untouched.
            for (int lane = 0; lane < 2; lane++) {
                const Buffer &src = lane == 0 ? pageable : pinned;
                const Buffer &dst = lane == 0 ? back_pageable : back_pinned;
                size_t next = 0;
                for (size_t i = 0; i < count; i++) {
                    for (size_t k = next; k < p.offsets[i]; k++)
                        if (dst.ptr[k] != 0xA5)
                            return "device " + std::to_string(device) + ": byte " +
                                   std::to_string(k) + " outside the pieces was written";
                    if (std::memcmp(dst.ptr + p.offsets[i], src.ptr + p.offsets[i],
                                    p.sizes[i]) != 0)
                        return "device " + std::to_string(device) + ", strategy " +
                               std::to_string(strategy) + ", round " + std::to_string(round) +
                               ": piece " + std::to_string(i) + " differs";
                    next = p.offsets[i] + p.sizes[i];
                }
            }
        }
    }
    return "";
}

TEST_F(MultiDevice, OneThreadPerDeviceKeepsToItsDevice)
{
    ob_resource_counts before;
    ob_resources_get(&before);
    std::vector<std::string> results(kDevices);
    std::vector<std::thread> threads;
    for (int d = 0; d < kDevices; d++)
        threads.emplace_back([d, &results] { results[d] = device_round_trips(d); });
    for (auto &t : threads)
        t.join();
    for (int d = 0; d < kDevices; d++)
        EXPECT_EQ("", results[d]) << "device " << d;

    // One library stream and one copy-kernel module per device, each on that device's context.
    ob_resource_counts after;
    ob_resources_get(&after);
    EXPECT_EQ((unsigned long)kDevices, after.streams_created - before.streams_created);
    EXPECT_EQ((unsigned long)kDevices, after.modules_loaded - before.modules_loaded);
    EXPECT_EQ(kDevices, fake().call_count("cuModuleLoadData"));
    const ob_driver *driver = ob_driver_get();
    for (int d = 0; d < kDevices; d++) {
        CUstream stream = nullptr;
        ASSERT_EQ(OMPBATCH_OK, ob_driver_own_stream(d, &stream)) << ompbatch_last_error();
        CUcontext theirs = nullptr, primary = nullptr;
        ASSERT_EQ(OMPBATCH_OK, ob_driver_primary_context(d, &primary));
        ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(d));
        EXPECT_EQ(CUDA_SUCCESS, driver->fn.cuStreamGetCtx(stream, &theirs));
        ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
        EXPECT_EQ(primary, theirs) << "device " << d << "'s library stream";
    }
    fake_cuda_stats s;
    fake().get_stats(&s);
    EXPECT_GT(s.kernels_executed, 0u) << "the staged strategy never ran the kernel";
    EXPECT_GT(s.batch_calls_succeeded, 0u) << "the direct strategy never reached cuMemcpyBatchAsync";
    EXPECT_EQ(0u, s.stream_context_mismatches);
    EXPECT_EQ(0, fake().ctx_stack_depth());
}

// Each device gets a cost model of its own, measured on it.
TEST_F(MultiDevice, CalibrationIsPerDevice)
{
    setenv("OMPBATCH_CALIBRATE", "force", 1);
    setenv("OMPBATCH_COST_CACHE", "off", 1);
    ob_config_reload();
    ob_cost_reset_for_testing();
    for (int d = 0; d < kDevices; d++) {
        ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(d));
        const ob_cost_model *m = ob_cost_model_for(d);
        std::string expected = "calibrated on device " + std::to_string(d) + " ";
        EXPECT_EQ(0u, std::string(m->source).find(expected)) << m->source;
        EXPECT_EQ(m, ob_cost_model_for(d)) << "measured again";
        ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    }
    ob_cost_reset_for_testing();
    setenv("OMPBATCH_CALIBRATE", "0", 1);
    ob_config_reload();
}

// A batch's device copies name its own device's memory: another device's memory named as the
// batch's device is refused at submit, naming the copy, on every device pair tried. (A lone
// copy goes to the driver unclassified, where unified addressing makes it right anyway.)
TEST_F(MultiDevice, AnotherDevicesMemoryIsRefused)
{
    Buffer pinned(PINNED, 4096);
    for (int d = 0; d < kDevices; d += 3) {
        int other = (d + 5) % kDevices;
        Buffer theirs(DEVICE, 4096, other), mine(DEVICE, 4096, d);
        Batch batch(d);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, mine.ptr + 1024, d, pinned.ptr + 1024,
                                                  OMPBATCH_HOST_DEVICE, 8, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, theirs.ptr, d, pinned.ptr,
                                                  OMPBATCH_HOST_DEVICE, 64, 0));
        EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b))
            << "device " << d << " accepted device " << other << "'s memory as its own";
        EXPECT_TRUE(message_has("copy 1")) << ompbatch_last_error();
        EXPECT_TRUE(message_has("of another device")) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        // The same batch still copies its own device's memory.
        pinned.fill(d + 1);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, mine.ptr, d, pinned.ptr,
                                                  OMPBATCH_HOST_DEVICE, 4096, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        EXPECT_EQ(0, std::memcmp(mine.ptr, pinned.ptr, 4096));
    }
}

}  // namespace
