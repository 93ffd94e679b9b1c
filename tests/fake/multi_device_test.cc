// Several GPUs through the fake driver (8 devices): one host thread per device moving data with
// every strategy at once must keep to its device's resources -- the library stream on that
// device's primary context, the copy kernel from that context's module, staging and kept
// descriptors of its own -- and every byte must arrive. The fake refuses a kernel launched in
// another device's context and stops on a kernel that touches another device's memory.
// OMPBATCH_TEST_SEED=<n> replays a run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fake_fixture.h"

extern "C" {
#include "plugin/core/config.h"
#include "plugin/plan/cost.h"
#include "plugin/api/cost_models.h"
#include "plugin/cuda/device.h"
#include "plugin/cuda/driver_api.h"
#include "plugin/cuda/peers.h"
#include "plugin/cuda/resources.h"
}

namespace {

constexpr int kDevices = 8;

unsigned long long pending()
{
    fake_cuda_stats s;
    fake().get_stats(&s);
    return s.pending_copies;
}

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
    // Allocated once: a batch remembers what its addresses are, and memory freed and allocated
    // again between its submits needs ompbatch_batch_forget_memory (the threads' allocations
    // interleave, so a new buffer need not land where the old one was).
    Buffer pageable(PAGEABLE, span), pinned(PINNED, span), dev(DEVICE, 2 * span, device);
    Buffer back_pageable(PAGEABLE, span), back_pinned(PINNED, span);
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
            std::memset(back_pageable.ptr, 0xA5, span);
            std::memset(back_pinned.ptr, 0xA5, span);
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

namespace {

// One batch of device 0 whose copies span all eight devices: host -> device d, device d ->
// host and device a -> device b between GPUs, in random order with random sizes; every byte
// lands, the poison between pieces stays, and a refill reuses the parts.
TEST_F(MultiDevice, OneBatchSpansEveryDevice)
{
    const size_t per_device = 24, slot = 8192, span = per_device * slot;
    std::vector<Buffer *> dev, peer_dst;
    for (int d = 0; d < kDevices; d++) {
        dev.push_back(new Buffer(DEVICE, 2 * span, d));
        peer_dst.push_back(new Buffer(DEVICE, span, d));
    }
    Buffer up(PAGEABLE, kDevices * span), up_pinned(PINNED, kDevices * span);
    Buffer down(PAGEABLE, kDevices * span);
    ompbatch_batch_options o;
    std::memset(&o, 0, sizeof(o));
    o.struct_size = sizeof(o);
    o.strategy = OMPBATCH_STRATEGY_AUTO;
    Batch batch(0, nullptr, &o);
    for (int round = 0; round < 3; round++) {
        Pieces p(per_device, 77 + round);
        up.fill(100 + round);
        up_pinned.fill(200 + round);
        // Device d's second half gets data the GPU-to-GPU copies then carry to device d+3.
        for (int d = 0; d < kDevices; d++) {
            Buffer seed(PINNED, span);
            seed.fill(300 + 10 * round + d);
            Batch own(d);
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(own.b, dev[d]->ptr + span, d, seed.ptr,
                                                      OMPBATCH_HOST_DEVICE, span, 0));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(own.b));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(own.b));
            std::memset(peer_dst[d]->ptr, 0xA5, span);
        }
        std::memset(down.ptr, 0xA5, down.bytes);
        for (int d = 0; d < kDevices; d++)
            std::memset(dev[d]->ptr, 0xA5, span);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        // Phase 1 in one batch: host -> every device (pageable and pinned sources alternate),
        // device d's second half -> device (d + 3) % 8 between GPUs.
        for (size_t i = 0; i < per_device; i++)
            for (int d = 0; d < kDevices; d++) {
                size_t at = d * span + p.offsets[i];
                const Buffer &src = i % 2 ? up_pinned : up;
                ASSERT_EQ(OMPBATCH_OK,
                          ompbatch_batch_add(batch.b, dev[d]->ptr + p.offsets[i], d,
                                             src.ptr + at, OMPBATCH_HOST_DEVICE, p.sizes[i], 0))
                    << ompbatch_last_error();
                int to = (d + 3) % kDevices;
                ASSERT_EQ(OMPBATCH_OK,
                          ompbatch_batch_add(batch.b, peer_dst[to]->ptr + p.offsets[i], to,
                                             dev[d]->ptr + span + p.offsets[i], d, p.sizes[i],
                                             0))
                    << ompbatch_last_error();
            }
        ompbatch_stats s = batch.stats();
        EXPECT_EQ(2 * per_device * kDevices, s.copies_added);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
        s = batch.stats();
        EXPECT_EQ(2 * per_device * kDevices, s.copies_added);
        EXPECT_EQ(2 * per_device * kDevices, s.copies_planned) << "pieces apart never merge";
        EXPECT_EQ(s.copies_planned, s.copies_done);
        EXPECT_GE(s.driver_calls, per_device * kDevices) << "the peer copies are one call each";
        // Phase 2: every device back to the host, in one batch.
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        for (int d = kDevices - 1; d >= 0; d--)
            for (size_t i = 0; i < per_device; i++)
                ASSERT_EQ(OMPBATCH_OK,
                          ompbatch_batch_add(batch.b, down.ptr + d * span + p.offsets[i],
                                             OMPBATCH_HOST_DEVICE, dev[d]->ptr + p.offsets[i], d,
                                             p.sizes[i], 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
        for (int d = 0; d < kDevices; d++) {
            int to = (d + 3) % kDevices;
            size_t next = 0;
            for (size_t i = 0; i < per_device; i++) {
                size_t at = d * span + p.offsets[i];
                const Buffer &src = i % 2 ? up_pinned : up;
                for (size_t k = next; k < p.offsets[i]; k++) {
                    ASSERT_EQ(0xA5, down.ptr[d * span + k]) << "device " << d << " byte " << k;
                    ASSERT_EQ(0xA5, peer_dst[to]->ptr[k]) << "device " << to << " byte " << k;
                }
                ASSERT_EQ(0, std::memcmp(down.ptr + at, src.ptr + at, p.sizes[i]))
                    << "round " << round << ", device " << d << ", piece " << i;
                ASSERT_EQ(0, std::memcmp(peer_dst[to]->ptr + p.offsets[i],
                                         dev[d]->ptr + span + p.offsets[i], p.sizes[i]))
                    << "round " << round << ", device " << d << " -> " << to << ", piece " << i;
                next = p.offsets[i] + p.sizes[i];
            }
        }
    }
    fake_cuda_stats f;
    fake().get_stats(&f);
    EXPECT_GE(f.peer_enables, (unsigned long long)kDevices) << "peer access was never enabled";
    for (int d = 0; d < kDevices; d++) {
        delete dev[d];
        delete peer_dst[d];
    }
}

// A refill of a planned batch is only compared with the plan's copies as it comes; when it
// then names another GPU, the copies compared so far must move to the multi-device part
// whole, in their order, alongside the new one.
TEST_F(MultiDevice, ARefillThatNamesAnotherGpuKeepsItsEarlierCopies)
{
    const size_t count = 40, slot = 8192, span = count * slot;
    Pieces p(count, 91);
    Buffer host(PAGEABLE, span + slot), d0(DEVICE, span, 0), d1(DEVICE, slot, 1);
    Batch batch(0);
    for (int round = 0; round < 3; round++) {
        host.fill(400 + round);
        std::memset(d0.ptr, 0xA5, span);
        std::memset(d1.ptr, 0xA5, slot);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        for (size_t i = 0; i < count; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d0.ptr + p.offsets[i], 0,
                                                      host.ptr + p.offsets[i],
                                                      OMPBATCH_HOST_DEVICE, p.sizes[i], 0))
                << ompbatch_last_error();
        // Rounds 0 and 1 stay on device 0 (round 1 reuses round 0's plan); round 2 also
        // sends one piece to device 1.
        if (round == 2) {
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr + 5, 1, host.ptr + span,
                                                      OMPBATCH_HOST_DEVICE, 3000, 0))
                << ompbatch_last_error();
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
        ompbatch_stats s = batch.stats();
        EXPECT_EQ(count + (round == 2), s.copies_added) << "round " << round;
        EXPECT_EQ(count + (round == 2), s.copies_done) << "round " << round;
        if (round == 1) {
            EXPECT_EQ(1u, s.plan_reused);
        }
        size_t next = 0;
        for (size_t i = 0; i < count; i++) {
            for (size_t k = next; k < p.offsets[i]; k++)
                ASSERT_EQ(0xA5, d0.ptr[k]) << "round " << round << " byte " << k;
            ASSERT_EQ(0, std::memcmp(d0.ptr + p.offsets[i], host.ptr + p.offsets[i],
                                     p.sizes[i]))
                << "round " << round << ", piece " << i;
            next = p.offsets[i] + p.sizes[i];
        }
        if (round == 2) {
            EXPECT_EQ(0xA5, d1.ptr[4]);
            EXPECT_EQ(0, std::memcmp(d1.ptr + 5, host.ptr + span, 3000));
            EXPECT_EQ(0xA5, d1.ptr[3005]);
        }
    }
}

// Copies of different devices' parts that touch the same memory, one writing, are refused
// (their order could not be kept), naming both; reads of the same memory are fine.
TEST_F(MultiDevice, OverlapAcrossDevicesIsRefused)
{
    Buffer host(PINNED, 8192), d1(DEVICE, 8192, 1), d2(DEVICE, 8192, 2);
    host.fill(5);
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr, 1, host.ptr, OMPBATCH_HOST_DEVICE,
                                              4096, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d2.ptr, 2, host.ptr + 1024,
                                              OMPBATCH_HOST_DEVICE, 4096, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << "two reads conflict: "
                                                            << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, std::memcmp(d2.ptr, host.ptr + 1024, 4096));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr, 1, host.ptr, OMPBATCH_HOST_DEVICE,
                                              4096, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, host.ptr + 4000, OMPBATCH_HOST_DEVICE,
                                              d2.ptr, 2, 64, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copies 0 and 1 run on different devices' streams"))
        << ompbatch_last_error();
    EXPECT_EQ(0u, pending()) << "a refused batch left copies running";
}

// Zero-byte copies are skipped in batches across GPUs as in any batch, NULL pointers and all:
// the one-shot call between two GPUs and a batch spanning GPUs both move the other copies.
TEST_F(MultiDevice, ZeroByteCopiesBetweenGpusAreSkipped)
{
    Buffer d0(DEVICE, 8192, 0), d1(DEVICE, 8192, 1), seed(PINNED, 8192);
    seed.fill(61);
    {
        Batch own(0);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(own.b, d0.ptr, 0, seed.ptr, H, 8192, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(own.b));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(own.b));
    }
    void *dst[] = {d1.ptr + 100, nullptr, d1.ptr + 1000};
    const void *src[] = {d0.ptr, nullptr, d0.ptr + 4000};
    size_t len[] = {100, 0, 300};
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(dst, src, len, nullptr, nullptr, 3, 1, 0))
        << ompbatch_last_error();
    EXPECT_EQ(0xA5, d1.ptr[99]);
    EXPECT_EQ(0, std::memcmp(d1.ptr + 100, d0.ptr, 100));
    EXPECT_EQ(0xA5, d1.ptr[200]);
    EXPECT_EQ(0, std::memcmp(d1.ptr + 1000, d0.ptr + 4000, 300));
    EXPECT_EQ(0xA5, d1.ptr[1300]);
    // In a batch of device 0 spanning both GPUs: a NULL zero-byte copy between them, and one
    // between the host and device 1.
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr + 2000, 1, d0.ptr + 500, 0, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, nullptr, 1, nullptr, 0, 0, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, nullptr, 1, nullptr, H, 0, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr + 3000, 1, seed.ptr + 100, H, 50,
                                              0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(d1.ptr + 2000, d0.ptr + 500, 64));
    EXPECT_EQ(0, std::memcmp(d1.ptr + 3000, seed.ptr + 100, 50));
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(4u, s.copies_added);
    EXPECT_EQ(2u, s.copies_zero);
    EXPECT_EQ(2u, s.copies_done);
}

// Once a batch spans GPUs its copies count in its parts: a refused mapped transfer is named by
// its index among all the copies added, as any other add's.
TEST_F(MultiDevice, ARefusedMappedTransferOfABatchSpanningGpusNamesItsIndex)
{
    Buffer d0(DEVICE, 4096, 0), d1(DEVICE, 4096, 1), host(PAGEABLE, 4096);
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d0.ptr, 0, host.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr, 1, d0.ptr + 512, 0, 64, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_mapped(batch.b, host.ptr, 8,
                                        OMPBATCH_MAP_TO | OMPBATCH_MAP_FROM));
    EXPECT_TRUE(message_has("copy 2: map_type")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add(batch.b, d1.ptr, 1, host.ptr, H, 8, 1ULL << 20));
    EXPECT_TRUE(message_has("copy 2: map_type")) << ompbatch_last_error();
}

// A host with more CUDA devices than a fixed table would hold: a batch spanning GPUs keeps one
// part per device the driver has, so copies with devices 66 and 69 land where they should.
class ManyDevices : public FakeDriver {
protected:
    void SetUp() override
    {
        setenv("FAKE_CUDA_DEVICE_COUNT", "70", 1);
        load();
    }
    void TearDown() override
    {
        FakeDriver::TearDown();
        setenv("FAKE_CUDA_DEVICE_COUNT", "8", 1);
        load();
    }
};

TEST_F(ManyDevices, ABatchReachesDevicesPastSixtyFour)
{
    ASSERT_EQ(70, ob_driver_get()->device_count);
    Buffer src(PAGEABLE, 8192), back(PAGEABLE, 8192), d66(DEVICE, 8192, 66), d69(DEVICE, 8192, 69);
    src.fill(71);
    back.fill(72);
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d66.ptr, 66, src.ptr, H, 5000, 0))
        << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d69.ptr + 100, 69, d66.ptr, 66, 5000, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, back.ptr + 7, H, d69.ptr + 100, 69, 5000,
                                              0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(back.ptr + 7, src.ptr, 5000));
    EXPECT_EQ(1u, batch.stats().copies_done) << "the last submit's one copy";
}

// forget_memory is refused while a batch spanning GPUs holds copies not yet submitted (all of
// them naming another GPU, so none counted by the batch's own device), and allowed after a
// submit, also one that failed in a part before later parts were submitted.
TEST_F(MultiDevice, ForgetMemoryFollowsTheStateOfABatchSpanningGpus)
{
    Buffer d0(DEVICE, 8192, 0), d1(DEVICE, 8192, 1), pinned(PINNED, 8192);
    pinned.fill(62);
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr, 1, pinned.ptr, H, 64, 0));
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_forget_memory(batch.b));
    EXPECT_TRUE(message_has("holds 1 copies not yet submitted")) << ompbatch_last_error();
    // Device 0's part fails in its planner (pinned memory named as device 0's); device 1's
    // part, after it, is never submitted.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d0.ptr, 0, pinned.ptr + 100, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, pinned.ptr + 4096, 0, pinned.ptr + 200, H,
                                              64, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 2 (in device 0's part)")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_forget_memory(batch.b)) << ompbatch_last_error();
    EXPECT_EQ(0u, pending());
    // The batch works again, both parts.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr, 1, pinned.ptr, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d0.ptr, 0, pinned.ptr + 100, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_forget_memory(batch.b)) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(d1.ptr, pinned.ptr, 64));
    EXPECT_EQ(0, std::memcmp(d0.ptr, pinned.ptr + 100, 64));
}

// An add resolves each device number it does not know at once (the batch's own device and the
// host) exactly once, whether the copy stays on the batch's device or goes to another GPU's
// part, and a number that is no device fails naming the copy; the bytes still arrive.
TEST_F(MultiDevice, AnAddResolvesEachDeviceNumberOnce)
{
    Buffer host(PINNED, 8192), d0(DEVICE, 8192, 0), d1(DEVICE, 8192, 1), d2(DEVICE, 8192, 2);
    host.fill(71);
    d1.fill(72);
    Batch batch(0);
    size_t before = ob_device_resolutions_for_testing();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d0.ptr, 0, host.ptr, H, 256, 0));
    EXPECT_EQ(before, ob_device_resolutions_for_testing()) << "the usual numbers are known";
    ASSERT_EQ(OMPBATCH_OK,
              ompbatch_batch_add(batch.b, d1.ptr + 512, 1, host.ptr + 512, H, 256, 0));
    EXPECT_EQ(before + 1, ob_device_resolutions_for_testing()) << "device 1 once";
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d2.ptr, 2, d1.ptr, 1, 512, 0));
    EXPECT_EQ(before + 3, ob_device_resolutions_for_testing()) << "devices 2 and 1 once each";
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE,
              ompbatch_batch_add(batch.b, d0.ptr + 1024, 99, host.ptr, H, 16, 0));
    EXPECT_TRUE(message_has("copy 3: dst_device_num 99 is not a device"))
        << ompbatch_last_error();
    EXPECT_EQ(before + 4, ob_device_resolutions_for_testing());
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(d0.ptr, host.ptr, 256));
    EXPECT_EQ(0, std::memcmp(d1.ptr + 512, host.ptr + 512, 256));
    EXPECT_EQ(0, std::memcmp(d2.ptr, d1.ptr, 512));
}

// A copy between GPUs must name the devices that hold its memory.
TEST_F(MultiDevice, APeerCopyNamingTheWrongDeviceIsRefused)
{
    Buffer d1(DEVICE, 4096, 1), d2(DEVICE, 4096, 2), d3(DEVICE, 4096, 3);
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d2.ptr, 2, d1.ptr, 1, 512, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d3.ptr, 2, d1.ptr + 1024, 1, 512, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 1: dst")) << ompbatch_last_error();
    EXPECT_TRUE(message_has("not device memory of device 2")) << ompbatch_last_error();
    EXPECT_EQ(0u, pending());
}

// A failure in one device's part names the caller's copy, and the parts already running are
// waited for before the error returns; the batch works again after a reset.
TEST_F(MultiDevice, APartsFailureNamesTheCallersCopy)
{
    Buffer host(PINNED, 65536), d4(DEVICE, 65536, 4), d5(DEVICE, 65536, 5);
    Buffer wrong(DEVICE, 4096, 6);
    host.fill(9);
    Batch batch(0);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d4.ptr + i * 8192, 4,
                                                  host.ptr + i * 8192, OMPBATCH_HOST_DEVICE, 4096,
                                                  0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d5.ptr, 5, host.ptr + 40000,
                                              OMPBATCH_HOST_DEVICE, 64, 0));
    // Copy 5: device 6's memory named as device 5's: device 5's part refuses it (its copy 1).
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, wrong.ptr, 5, host.ptr + 50000,
                                              OMPBATCH_HOST_DEVICE, 64, 0));
    // The part's error is decided once, in device 5's planner, and logged there only; the
    // batch renumbers its copy from the record, not from the words.
    setenv("OMPBATCH_VERBOSE", "1", 1);
    ob_config_reload();
    testing::internal::CaptureStderr();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    std::string log = testing::internal::GetCapturedStderr();
    unsetenv("OMPBATCH_VERBOSE");
    ob_config_reload();
    EXPECT_TRUE(message_has("copy 5 (in device 5's part): dst ")) << ompbatch_last_error();
    EXPECT_EQ(0, std::strncmp(ompbatch_last_error(), "copy 5 (in device 5's part): ", 29))
        << ompbatch_last_error();
    size_t logged = 0;
    for (size_t at = log.find("ompbatch: error: "); at != std::string::npos;
         at = log.find("ompbatch: error: ", at + 1))
        logged++;
    EXPECT_EQ(1u, logged) << log;
    EXPECT_EQ(0u, pending()) << "device 4's part was not waited for";
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d5.ptr + 8192, 5, host.ptr,
                                              OMPBATCH_HOST_DEVICE, 8192, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, std::memcmp(d5.ptr + 8192, host.ptr, 8192));
}

// A peer copy the driver fails is reported with its index and both devices; nothing stays
// pending; the next submit works.
TEST_F(MultiDevice, AFailedPeerCopyIsReported)
{
    Buffer d1(DEVICE, 4096, 1), d2(DEVICE, 4096, 2), seed(PINNED, 4096);
    seed.fill(3);
    {
        Batch own(1);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(own.b, d1.ptr, 1, seed.ptr,
                                                  OMPBATCH_HOST_DEVICE, 4096, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(own.b));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(own.b));
    }
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d2.ptr, 2, d1.ptr, 1, 1024, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d2.ptr + 2048, 2, d1.ptr + 2048, 1, 1024,
                                              0));
    ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 2, CUDA_ERROR_ILLEGAL_ADDRESS));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 1 (device 1 to device 2): cuMemcpyAsync failed"))
        << ompbatch_last_error();
    fake().clear_injections();
    EXPECT_EQ(0u, pending());
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d2.ptr, 2, d1.ptr, 1, 4096, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, std::memcmp(d2.ptr, seed.ptr, 4096));
}

// A batch on the caller's stream takes no copy of another GPU; its own copies still work.
TEST_F(MultiDevice, ACallersStreamBatchStaysOnItsDevice)
{
    const ob_driver *d = ob_driver_get();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    CUstream stream = nullptr;
    ASSERT_EQ(CUDA_SUCCESS, d->fn.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    {
        Buffer host(PINNED, 4096), d0(DEVICE, 4096, 0), d1(DEVICE, 4096, 1);
        Batch batch(0, stream);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d0.ptr, 0, host.ptr,
                                                  OMPBATCH_HOST_DEVICE, 64, 0));
        EXPECT_EQ(OMPBATCH_ERR_UNSUPPORTED, ompbatch_batch_add(batch.b, d1.ptr, 1, host.ptr,
                                                              OMPBATCH_HOST_DEVICE, 64, 0));
        EXPECT_TRUE(message_has("copy 1: it names another GPU")) << ompbatch_last_error();
        EXPECT_EQ(1u, batch.stats().copies_added);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    }
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    EXPECT_EQ(CUDA_SUCCESS, d->fn.cuStreamDestroy(stream));
    ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
}

// Without peer access the copies between GPUs still arrive (the driver stages them).
TEST_F(MultiDevice, WithoutPeerAccessCopiesStillArrive)
{
    setenv("FAKE_CUDA_NO_PEER_ACCESS", "1", 1);
    load();
    ob_peers_forget_for_testing();
    Buffer d1(DEVICE, 4096, 1), d7(DEVICE, 4096, 7), seed(PINNED, 4096);
    seed.fill(11);
    Batch batch(1);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d1.ptr, 1, seed.ptr, OMPBATCH_HOST_DEVICE,
                                              4096, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d7.ptr, 7, d1.ptr, 1, 4096, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_EQ(0, std::memcmp(d7.ptr, seed.ptr, 4096));
    fake_cuda_stats f;
    fake().get_stats(&f);
    EXPECT_EQ(0u, f.peer_enables);
    unsetenv("FAKE_CUDA_NO_PEER_ACCESS");
}

}  // namespace

namespace {

// A driver that fails the peer-access calls still copies between GPUs (it would stage them):
// the failure is logged, not returned.
TEST_F(MultiDevice, FailingPeerAccessCallsAreRoutedAround)
{
    for (const char *entry : {"cuDeviceCanAccessPeer", "cuCtxEnablePeerAccess"}) {
        load();
        ob_peers_forget_for_testing();
        Buffer d2(DEVICE, 4096, 2), d6(DEVICE, 4096, 6), seed(PINNED, 4096);
        seed.fill(entry[2]);
        Batch batch(2);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d2.ptr, 2, seed.ptr,
                                                  OMPBATCH_HOST_DEVICE, 4096, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        ASSERT_EQ(0, fake().inject_failure(entry, 1, CUDA_ERROR_UNKNOWN));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, d6.ptr, 6, d2.ptr, 2, 4096, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << entry << ": "
                                                                << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        EXPECT_EQ(1, fake().call_count(entry)) << entry;
        EXPECT_EQ(0, std::memcmp(d6.ptr, seed.ptr, 4096)) << entry;
        fake_cuda_stats f;
        fake().get_stats(&f);
        EXPECT_EQ(0u, f.peer_enables) << entry;
        fake().clear_injections();
    }
}

// Every driver entry point failing at its first to fourth call during the submit and wait of a
// batch spanning three GPUs -- host to each, GPU to GPU between them, each back to the host,
// through the parts' batches and the peer copies -- either reports an error with a message
// or completes with every byte right; nothing stays pending or pushed, and the devices work
// again afterwards.
TEST_F(MultiDevice, FaultsInABatchSpanningGpusFailCleanlyOrAreRoutedAround)
{
    const char *const entries[] = {
#define OB_MULTI_SWEEP_NAME_(field, symbol, version, need) #field,
        OMPBATCH_DRIVER_ENTRY_POINTS(OB_MULTI_SWEEP_NAME_)
#undef OB_MULTI_SWEEP_NAME_
            "cuMemcpyBatchAsync",
    };
    const int gpus = 3;
    const size_t piece = 4096;
    std::vector<Buffer *> dev;
    for (int d = 0; d < gpus; d++)
        dev.push_back(new Buffer(DEVICE, 4 * piece, d));
    Buffer up(PINNED, gpus * piece), down(PAGEABLE, gpus * piece);
    size_t hit = 0, surfaced = 0;
    std::set<std::string> sites;
    for (const char *entry : entries) {
        for (unsigned long nth = 1; nth <= 4; nth++) {
            SCOPED_TRACE(std::string(entry) + " call " + std::to_string(nth));
            // Each device: [piece, 2 piece) to send to the next, [3 piece, 4 piece) to bring back.
            up.fill(nth * 7 + std::strlen(entry));
            std::memset(down.ptr, 0xA5, down.bytes);
            for (int d = 0; d < gpus; d++) {
                auto sent = random_bytes(piece, 40 + d + nth), kept = random_bytes(piece, 50 + d + nth);
                std::memcpy(dev[d]->ptr + piece, sent.data(), piece);
                std::memcpy(dev[d]->ptr + 3 * piece, kept.data(), piece);
                std::memset(dev[d]->ptr, 0xA5, piece);
                std::memset(dev[d]->ptr + 2 * piece, 0xA5, piece);
            }
            int status;
            std::string why;
            {
                Batch batch(0);
                for (int d = 0; d < gpus; d++) {
                    int next = (d + 1) % gpus;
                    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev[d]->ptr, d,
                                                              up.ptr + d * piece,
                                                              OMPBATCH_HOST_DEVICE, piece, 0));
                    ASSERT_EQ(OMPBATCH_OK,
                              ompbatch_batch_add(batch.b, dev[next]->ptr + 2 * piece, next,
                                                 dev[d]->ptr + piece, d, piece, 0));
                    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, down.ptr + d * piece,
                                                              OMPBATCH_HOST_DEVICE,
                                                              dev[d]->ptr + 3 * piece, d,
                                                              piece, 0));
                }
                fake_cuda_stats before;
                fake().get_stats(&before);
                ASSERT_EQ(0, fake().inject_failure(entry, nth, CUDA_ERROR_LAUNCH_FAILED));
                status = ompbatch_batch_submit(batch.b);
                if (status == OMPBATCH_OK)
                    status = ompbatch_batch_wait(batch.b);
                if (status != OMPBATCH_OK)
                    why = ompbatch_last_error();
                fake_cuda_stats f;
                fake().get_stats(&f);
                fake().clear_injections();
                if (f.injected_failures > before.injected_failures) {
                    hit++;
                    sites.insert(entry);
                }
            }
            EXPECT_EQ(0u, pending());
            // A failed pop leaves its context pushed whatever the caller does: it must be
            // reported; the test pops it.
            if (std::string(entry) == "cuCtxPopCurrent" && fake().ctx_stack_depth() > 0) {
                EXPECT_NE(OMPBATCH_OK, status) << "a failed context pop went unreported";
                CUcontext popped;
                while (fake().ctx_stack_depth() > 0)
                    ASSERT_EQ(CUDA_SUCCESS, ob_driver_get()->fn.cuCtxPopCurrent(&popped));
            }
            EXPECT_EQ(0, fake().ctx_stack_depth());
            if (status != OMPBATCH_OK) {
                surfaced++;
                EXPECT_LT(status, 0);
                EXPECT_STRNE("OMPBATCH_ERR_UNKNOWN", ompbatch_err_name(status));
                EXPECT_FALSE(why.empty()) << ompbatch_err_name(status);
                continue;
            }
            for (int d = 0; d < gpus; d++) {
                int next = (d + 1) % gpus;
                EXPECT_EQ(0, std::memcmp(dev[d]->ptr, up.ptr + d * piece, piece)) << d;
                EXPECT_EQ(0, std::memcmp(dev[next]->ptr + 2 * piece, dev[d]->ptr + piece, piece))
                    << d;
                EXPECT_EQ(0, std::memcmp(down.ptr + d * piece, dev[d]->ptr + 3 * piece, piece))
                    << d;
            }
        }
    }
    // The devices work again.
    Batch batch(0);
    for (int d = 0; d < gpus; d++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, dev[d]->ptr, d, up.ptr + d * piece,
                                                  OMPBATCH_HOST_DEVICE, piece, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    for (int d = 0; d < gpus; d++)
        EXPECT_EQ(0, std::memcmp(dev[d]->ptr, up.ptr + d * piece, piece)) << d;
    std::string names;
    for (const std::string &site : sites)
        names += " " + site;
    std::printf("faults in a batch spanning GPUs: %zu injections reached %zu entry points (%s), "
                "%zu surfaced as errors\n", hit, sites.size(), names.c_str(), surfaced);
    EXPECT_GE(sites.size(), 6u) << "the batch reaches too few call sites";
    for (Buffer *b : dev)
        delete b;
}

}  // namespace
