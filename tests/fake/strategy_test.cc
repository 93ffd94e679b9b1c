// The staged strategy and the cost model through the fake driver: every lane byte-exact over
// random sizes and alignments, one cuMemcpyBatchAsync per level with the bulk copies in it,
// the model's decisions, staging reuse and exhaustion, kernel failures, the calibration cache,
// and the pack threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

#include "tests/support/fake_fixture.h"

extern "C" {
#include "plugin/cuda/kernel_module.h"
#include "plugin/exec/backend_staged.h"
#include "plugin/exec/host_moves.h"
#include "plugin/api/batch.h"
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/plan/cost.h"
#include "plugin/api/cost_models.h"
#include "plugin/cuda/staging.h"
#include "plugin/exec/stream_copy.h"
#include "plugin/core/workers.h"
}

namespace {

enum Lane { H2D_PAGEABLE, H2D_PINNED, D2H_PAGEABLE, D2H_PINNED, D2D };

struct LaneSpec {
    const char *name;
    Kind src;
    Kind dst;
};

const LaneSpec kLanes[] = {
    {"H2D pageable", PAGEABLE, DEVICE}, {"H2D pinned", PINNED, DEVICE},
    {"D2H pageable", DEVICE, PAGEABLE}, {"D2H pinned", DEVICE, PINNED},
    {"D2D", DEVICE, DEVICE},
};

int device_of(Kind k)
{
    return k == DEVICE ? 0 : H;
}

struct Piece {
    size_t src_off, dst_off, bytes;
};

// Pieces of the given sizes at random, odd offsets with random gaps, in both buffers.
std::vector<Piece> lay_out(const std::vector<size_t> &sizes, TestRng &rng, size_t *extent)
{
    std::vector<Piece> pieces;
    size_t src = rng() % 61, dst = rng() % 67;
    for (size_t n : sizes) {
        pieces.push_back({src, dst, n});
        src += n + 1 + rng() % 97;
        dst += n + 1 + rng() % 89;
    }
    *extent = (src > dst ? src : dst) + 64;
    return pieces;
}

ompbatch_batch_options with_strategy(int strategy)
{
    ompbatch_batch_options o;
    std::memset(&o, 0, sizeof(o));
    o.struct_size = sizeof(o);
    o.strategy = strategy;
    return o;
}

// Expects dst to hold src's bytes where pieces land and its poison everywhere else.
void expect_landed(const Buffer &src, const Buffer &dst, const std::vector<Piece> &pieces,
                   const std::vector<unsigned char> &dst_before)
{
    std::vector<unsigned char> want = dst_before;
    for (const Piece &p : pieces)
        std::memcpy(&want[p.dst_off], src.ptr + p.src_off, p.bytes);
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < dst.bytes; i++)
        if (dst.ptr[i] != want[i] && wrong++ == 0)
            first = i;
    EXPECT_EQ(0u, wrong) << "first wrong byte at " << first;
}

class Strategy : public FakeDriver {
protected:
    void SetUp() override
    {
        unsetenv("OMPBATCH_STRATEGY");
        unsetenv("OMPBATCH_STAGING_MB");
        unsetenv("OMPBATCH_COST");
        unsetenv("OMPBATCH_BUS_KB");
        // The pipelined path is left when the host is busy: tests run beside each other.
        setenv("OMPBATCH_HOST_BUSY", "0", 1);
        ob_config_reload();
        load();
        ob_kernels_forget_for_testing();
        ob_cost_reset_for_testing();
        ob_staging_free_idle();
        ob_workers_forget_lateness_for_testing();
    }
    void TearDown() override
    {
        ob_staging_free_idle();
        unsetenv("OMPBATCH_STAGING_MB");
        unsetenv("OMPBATCH_COST");
        unsetenv("OMPBATCH_BUS_KB");
        ob_config_reload();
        FakeDriver::TearDown();
    }

    // OMPBATCH_BUS_KB for the rest of the test: "0" sends every staged level's packed and
    // gathered bytes through the bulk copy and device staging.
    static void bus_kb(const char *kib)
    {
        setenv("OMPBATCH_BUS_KB", kib, 1);
        ob_config_reload();
    }

    // Moves the pieces of one lane in one batch of the given strategy; returns its stats.
    ompbatch_stats move(const LaneSpec &lane, const std::vector<size_t> &sizes, int strategy,
                        uint64_t salt)
    {
        TestRng rng(test_seed() + salt);
        size_t extent = 0;
        std::vector<Piece> pieces = lay_out(sizes, rng, &extent);
        Buffer src(lane.src, extent), dst(lane.dst, extent);
        src.fill(salt);
        std::vector<unsigned char> before(dst.ptr, dst.ptr + extent);
        ompbatch_batch_options o = with_strategy(strategy);
        Batch b(0, nullptr, &o);
        for (const Piece &p : pieces)
            EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dst.ptr + p.dst_off, device_of(lane.dst),
                                                      src.ptr + p.src_off, device_of(lane.src),
                                                      p.bytes, 0))
                << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
        expect_landed(src, dst, pieces, before);
        return b.stats();
    }
};

std::vector<size_t> random_sizes(size_t count, size_t most, uint64_t salt)
{
    TestRng rng(test_seed() ^ salt);
    std::vector<size_t> sizes;
    for (size_t i = 0; i < count; i++)
        sizes.push_back(1 + rng() % most);
    return sizes;
}

TEST_F(Strategy, StagedMovesEveryLaneByteExact)
{
    // Edge sizes around the 16-byte units and the kernel's 64 KiB chunks, then random ones:
    // about 240 KiB, then about 600 KiB, under the bus's 1 MiB by default, through the bulk
    // copy with it at 0. Packs of more than OB_BUS_PACK_MAX take the bulk copy either way.
    std::vector<size_t> small = {1, 15, 16, 17, 63, 65535, 65536, 65537};
    for (size_t n : random_sizes(10, 5000, 5))
        small.push_back(n);
    std::vector<size_t> large = small;
    large.push_back(200000);
    for (size_t n : random_sizes(40, 9000, 7))
        large.push_back(n);
    for (const std::vector<size_t> &sizes : {small, large}) {
        size_t total = 0;
        for (size_t n : sizes)
            total += n;
        for (bool bus : {false, true}) {
            bus_kb(bus ? "1024" : "0");
            for (const LaneSpec &lane : kLanes) {
                SCOPED_TRACE(std::string(lane.name) + (bus ? ", over the bus" : ", bulk copy") +
                             ", " + std::to_string(total) + " bytes");
                ob_staging_free_idle();
                fake_cuda_stats before;
                fake().get_stats(&before);
                ompbatch_stats s = move(lane, sizes, OMPBATCH_STRATEGY_STAGED, 11);
                EXPECT_EQ(sizes.size(), s.staged_copies);
                EXPECT_EQ(0u, s.staging_refused);
                EXPECT_TRUE(s.paths & OMPBATCH_PATH_KERNEL);
                bool packs = lane.src == PAGEABLE || lane.dst == PAGEABLE;
                bool over_bus = bus && !(lane.src == PAGEABLE && total > OB_BUS_PACK_MAX);
                EXPECT_EQ(packs, (s.paths & OMPBATCH_PATH_STAGED) != 0);
                // Pack and gather lanes: one kernel plus the bulk copy, alone in the level's
                // copy-engine part, so a cuMemcpyAsync; over the bus, and in-place lanes: the
                // kernel alone, and no device staging.
                EXPECT_EQ(1u, s.kernel_launches);
                EXPECT_EQ(packs && !over_bus ? 1u : 0u, s.driver_calls);
                EXPECT_EQ(0u, s.batch_calls);
                fake_cuda_stats after;
                fake().get_stats(&after);
                EXPECT_EQ(1u, after.kernels_executed - before.kernels_executed);
                ob_staging_totals t;
                ob_staging_get_totals(&t);
                EXPECT_EQ(packs && !over_bus, t.device_bytes > 0) << t.device_bytes;
            }
        }
    }
}

TEST_F(Strategy, OneBatchCallCarriesTheDirectCopiesAndBothBulkCopies)
{
    // Pageable H2D and D2H pieces staged, plus large pinned pieces the model keeps direct:
    // through the bulk copies, then over the bus.
    const size_t small = 512, big = 4 << 20;
    for (bool bus : {false, true}) {
        SCOPED_TRACE(bus ? "over the bus" : "bulk copies");
        bus_kb(bus ? "1024" : "0");
        Buffer host_in(PAGEABLE, 64 * 1024), host_out(PAGEABLE, 64 * 1024),
            dev(DEVICE, 32 << 20);
        Buffer pinned(PINNED, 2 * big);
        host_in.fill(1 + bus);
        dev.fill(2 + bus);
        pinned.fill(3 + bus);
        std::vector<unsigned char> dev_before(dev.ptr, dev.ptr + dev.bytes);
        std::vector<unsigned char> out_before(host_out.ptr, host_out.ptr + host_out.bytes);
        ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
        Batch b(0, nullptr, &o);
        for (size_t i = 0; i < 32; i++) {
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 1024, 0,
                                                      host_in.ptr + i * 1024, H, small, 0));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, host_out.ptr + i * 1024 + 3, H,
                                                      dev.ptr + (1 << 20) + i * 1024, 0, small,
                                                      0));
        }
        for (size_t i = 0; i < 2; i++)
            ASSERT_EQ(OMPBATCH_OK,
                      ompbatch_batch_add(b.b, dev.ptr + (8 << 20) + i * (big + 4096), 0,
                                         pinned.ptr + i * big, H, big, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
        ompbatch_stats s = b.stats();
        EXPECT_EQ(64u, s.staged_copies);
        // The gather before the batch call, the scatter after; over the bus one kernel
        // gathers into pinned staging and scatters from it.
        EXPECT_EQ(bus ? 1u : 2u, s.kernel_launches);
        EXPECT_EQ(1u, s.batch_calls);
        EXPECT_EQ(1u, s.driver_calls);
        fake_cuda_batch_record r = last_batch();
        // 2 direct pinned pieces, and the two bulk copies unless over the bus.
        EXPECT_EQ(bus ? 2u : 4u, r.count);
        // The scatter's descriptor table travels with the packed pieces: the first bulk copy
        // starts at the device staging the kernel reads its table from.
        if (!bus) {
            EXPECT_GE(r.sizes[2], 32 * sizeof(ob_piece) + 32 * small);
        }
        // Bytes: device pieces from host_in, host_out pieces from the device, the big pieces.
        std::vector<unsigned char> want_dev = dev_before, want_out = out_before;
        for (size_t i = 0; i < 32; i++) {
            std::memcpy(&want_dev[i * 1024], host_in.ptr + i * 1024, small);
            std::memcpy(&want_out[i * 1024 + 3], &dev_before[(1 << 20) + i * 1024], small);
        }
        for (size_t i = 0; i < 2; i++)
            std::memcpy(&want_dev[(8 << 20) + i * (big + 4096)], pinned.ptr + i * big, big);
        EXPECT_EQ(0, std::memcmp(want_dev.data(), dev.ptr, dev.bytes));
        EXPECT_EQ(0, std::memcmp(want_out.data(), host_out.ptr, host_out.bytes));
    }
}

// The same batch with each of its library allocations failing in turn (the bulk copies joining
// the batch call grow its scratch): every failure is reported, leaves nothing enqueued,
// pinned or leaked, and writes no destination partly; the batch after it moves every byte.
TEST_F(Strategy, EveryAllocationOfABatchCarryingBulkCopiesFailsInTurn)
{
    const size_t small = 512, big = 4 << 20;
    bus_kb("0");
    setenv("OMPBATCH_WAIT_POLL_US", "0", 1);
    Buffer host_in(PAGEABLE, 64 * 1024), dev(DEVICE, 32 << 20), pinned(PINNED, 2 * big);
    auto run = [&](uint64_t seed, std::string *why) {
        host_in.fill(seed);
        pinned.fill(seed + 1);
        std::memset(dev.ptr, 0xA5, dev.bytes);
        ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
        ompbatch_batch *b = nullptr;
        int status = ompbatch_batch_create(&b, 0, nullptr, &o);
        for (size_t i = 0; i < 32 && status == OMPBATCH_OK; i++)
            status = ompbatch_batch_add(b, dev.ptr + i * 1024, 0, host_in.ptr + i * 1024, H,
                                        small, 0);
        for (size_t i = 0; i < 2 && status == OMPBATCH_OK; i++)
            status = ompbatch_batch_add(b, dev.ptr + (8 << 20) + i * (big + 4096), 0,
                                        pinned.ptr + i * big, H, big, 0);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_submit(b);
        int waited = b != nullptr ? ompbatch_batch_wait(b) : OMPBATCH_OK;
        if (status == OMPBATCH_OK)
            status = waited;
        if (status != OMPBATCH_OK)
            *why = ompbatch_last_error();
        if (b != nullptr)
            ompbatch_batch_destroy(b);
        // Each piece arrived whole or not at all (the poison stays where nothing arrived).
        for (size_t i = 0; i < 32; i++) {
            const unsigned char *got = dev.ptr + i * 1024;
            bool whole = std::memcmp(got, host_in.ptr + i * 1024, small) == 0;
            bool none = std::all_of(got, got + small, [](unsigned char c) { return c == 0xA5; });
            if (!(whole || (status != OMPBATCH_OK && none)))
                return -1000;
        }
        for (size_t i = 0; i < 2; i++) {
            const unsigned char *got = dev.ptr + (8 << 20) + i * (big + 4096);
            if (status == OMPBATCH_OK && std::memcmp(got, pinned.ptr + i * big, big) != 0)
                return -1000;
        }
        return status;
    };
    std::string why;
    ASSERT_EQ(OMPBATCH_OK, run(1, &why)) << why;
    ob_staging_free_idle();
    fake_cuda_stats base;
    fake().get_stats(&base);
    size_t surfaced = 0;
    long allowed = 0;
    for (; allowed < 2000; allowed++) {
        why.clear();
        ob_alloc_fail_after_for_testing(allowed);
        int status = run(2 + static_cast<uint64_t>(allowed), &why);
        long left = ob_alloc_left_for_testing();
        ob_alloc_fail_after_for_testing(-1);
        ob_staging_free_idle();
        fake_cuda_stats after;
        fake().get_stats(&after);
        ASSERT_NE(-1000, status) << "allocation " << allowed << ": a piece arrived in part";
        EXPECT_EQ(0u, after.pending_copies) << "allocation " << allowed;
        EXPECT_EQ(base.live_allocations, after.live_allocations) << "allocation " << allowed;
        if (status != OMPBATCH_OK) {
            surfaced++;
            EXPECT_EQ(OMPBATCH_ERR_NO_MEMORY, status) << "allocation " << allowed << ": " << why;
            EXPECT_FALSE(why.empty()) << "allocation " << allowed;
        } else if (left > 0) {
            break; /* the batch needs fewer allocations than allowed: every one was tried */
        }
    }
    std::printf("allocation sweep: the batch's %ld allocations each failed in turn: %zu "
                "failures reported\n",
                allowed, surfaced);
    EXPECT_LT(allowed, 2000) << "the sweep did not reach the end of the batch";
    EXPECT_GE(surfaced, 5u);
    why.clear();
    EXPECT_EQ(OMPBATCH_OK, run(99, &why)) << why;
    unsetenv("OMPBATCH_WAIT_POLL_US");
}

TEST_F(Strategy, DirectNeverStages)
{
    for (const LaneSpec &lane : kLanes) {
        SCOPED_TRACE(lane.name);
        ompbatch_stats s = move(lane, random_sizes(64, 4096, 3), OMPBATCH_STRATEGY_DIRECT, 5);
        EXPECT_EQ(0u, s.staged_copies);
        EXPECT_EQ(0u, s.kernel_launches);
        EXPECT_EQ(0u, s.paths & (OMPBATCH_PATH_KERNEL | OMPBATCH_PATH_STAGED));
    }
}

TEST_F(Strategy, TheEnvironmentSetsTheDefaultAndTheOptionWins)
{
    setenv("OMPBATCH_STRATEGY", "staged", 1);
    ob_config_reload();
    EXPECT_EQ(64u, move(kLanes[H2D_PAGEABLE], random_sizes(64, 300, 1), 0, 2).staged_copies);
    EXPECT_EQ(0u, move(kLanes[H2D_PAGEABLE], random_sizes(64, 300, 1), OMPBATCH_STRATEGY_DIRECT,
                       2).staged_copies);
    setenv("OMPBATCH_STRATEGY", "direct", 1);
    ob_config_reload();
    EXPECT_EQ(0u, move(kLanes[H2D_PAGEABLE], random_sizes(64, 300, 1), 0, 2).staged_copies);
    unsetenv("OMPBATCH_STRATEGY");
    ob_config_reload();
    ompbatch_batch *b = nullptr;
    ompbatch_batch_options o = with_strategy(7);
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_create(&b, 0, nullptr, &o));
    EXPECT_TRUE(message_has("options->strategy is 7"));
}

TEST_F(Strategy, AutoFollowsTheModel)
{
    // Built-in H200 model: 64 pageable 256-byte pieces cost far less staged.
    ompbatch_stats s = move(kLanes[H2D_PAGEABLE], std::vector<size_t>(64, 256),
                            OMPBATCH_STRATEGY_AUTO, 9);
    EXPECT_EQ(64u, s.staged_copies);
    // Made expensive, staging loses, and the description shows the prediction.
    setenv("OMPBATCH_COST", "h2d_pageable.staged.fixed=100000", 1);
    ob_config_reload();
    ob_cost_reset_for_testing();
    EXPECT_EQ(0u, move(kLanes[H2D_PAGEABLE], std::vector<size_t>(64, 256), OMPBATCH_STRATEGY_AUTO,
                       9).staged_copies);
    Buffer host(PAGEABLE, 8192), dev(DEVICE, 8192);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 512, 0, host.ptr + i * 512, H,
                                                  256, 0));
    char text[4096];
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(b.b, text, sizeof(text), nullptr));
    EXPECT_NE(nullptr, std::strstr(text, "strategy: level 0, H2D pageable, 4 copies: 0 staged"))
        << text;
    EXPECT_NE(nullptr, std::strstr(text, "OMPBATCH_COST")) << text;
}

TEST_F(Strategy, ALoneLargePageableCopyIsStagedAndASmallOneIsNot)
{
    ompbatch_stats s = move(kLanes[H2D_PAGEABLE], {4 << 20}, OMPBATCH_STRATEGY_AUTO, 12);
    EXPECT_EQ(1u, s.staged_copies);
    s = move(kLanes[D2H_PAGEABLE], {3 << 20}, OMPBATCH_STRATEGY_STAGED, 13);
    EXPECT_EQ(1u, s.staged_copies);
    s = move(kLanes[H2D_PAGEABLE], {(1 << 20) + 17}, OMPBATCH_STRATEGY_STAGED, 14);
    EXPECT_EQ(0u, s.staged_copies) << "a lone copy under 2 MiB is never classified";
    EXPECT_EQ(1u, s.driver_calls);
}

// Pageable copies of OB_PIPELINE_MIN_BYTES and more go through pinned staging in chunks
// whose packs (or unpacks) overlap the copy engine: byte for byte, every chunk behind one
// event, nothing of the destination outside the copy written (the fake runs a stream's
// copies only when waited for, so a chunk's slot reused before its copy ran would show). Just
// under the size, with the direct strategy, and with the staged one forced, they do not.
TEST_F(Strategy, LargePageableCopiesArePipelinedThroughStaging)
{
    const size_t mib = 1 << 20;
    struct {
        Lane lane;
        std::vector<size_t> sizes;
        int strategy;
        long long events; /* chunks of 4 MiB through the pipeline */
    } rows[] = {
        {H2D_PAGEABLE, {8 * mib, 13 * mib + 5}, OMPBATCH_STRATEGY_AUTO, 2 + 4},
        {D2H_PAGEABLE, {9 * mib + 3}, OMPBATCH_STRATEGY_AUTO, 3},
        {D2H_PAGEABLE, {20 * mib + 1, 8 * mib}, OMPBATCH_STRATEGY_AUTO, 6 + 2},
        {H2D_PAGEABLE, {8 * mib - 1}, OMPBATCH_STRATEGY_AUTO, 0},
        {H2D_PAGEABLE, {16 * mib}, OMPBATCH_STRATEGY_DIRECT, 0},
        {D2H_PAGEABLE, {16 * mib}, OMPBATCH_STRATEGY_STAGED, 0},
        {H2D_PINNED, {16 * mib}, OMPBATCH_STRATEGY_AUTO, 0},
    };
    for (const auto &row : rows) {
        SCOPED_TRACE(std::string(kLanes[row.lane].name) + " strategy " +
                     std::to_string(row.strategy) + " first size " +
                     std::to_string(row.sizes[0]));
        fake().reset();
        ompbatch_stats s = move(kLanes[row.lane], row.sizes, row.strategy, 40 + row.events);
        EXPECT_EQ(row.events, fake().call_count("cuEventRecord"));
        if (row.events > 0) {
            EXPECT_EQ(row.sizes.size(), s.staged_copies);
            EXPECT_TRUE(s.paths & OMPBATCH_PATH_STAGED);
            EXPECT_EQ(0u, s.kernel_launches) << "a pipelined copy needs no kernel";
            EXPECT_EQ(3, fake().call_count("cuEventCreate") / (long long)row.sizes.size());
            EXPECT_EQ(fake().call_count("cuEventCreate"), fake().call_count("cuEventDestroy"));
        }
        ob_staging_totals t;
        ob_staging_get_totals(&t);
        EXPECT_EQ(0u, t.in_use);
    }
    // While the pack threads are late (contention; Workers.LateHelpers... shows when they
    // are), the driver or the staged path takes the copies, byte for byte.
    ob_workers_mark_late_for_testing();
    fake().reset();
    ompbatch_stats late = move(kLanes[D2H_PAGEABLE], {16 * mib}, OMPBATCH_STRATEGY_AUTO, 99);
    EXPECT_EQ(0, fake().call_count("cuEventRecord")) << "pipelined while they were late";
    EXPECT_EQ(1u, late.copies_done);
    ob_workers_forget_lateness_for_testing();
    // The plan says so.
    Buffer host(PAGEABLE, 9 * mib), dev(DEVICE, 9 * mib);
    Batch b;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr, 0, host.ptr, H, 9 * mib, 0));
    char text[4096];
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(b.b, text, sizeof(text), nullptr));
    EXPECT_NE(nullptr, std::strstr(text, "1 pipelined (8 MiB and up)")) << text;
    EXPECT_NE(nullptr, std::strstr(text, "pipelined through pinned staging")) << text;
}

// A failing driver call inside the pipeline fails the submit with a message naming the copy,
// the chunk and the call; nothing is left running on the stream (a chunk still queued would
// read or write staging the next batch has taken), the staging and the events are given back
// and the next batch works; an event that cannot be destroyed fails nothing.
// Without staging to be had (the cap), the copy goes to the driver whole, byte for byte.
TEST_F(Strategy, PipelineFailuresAreNamedAndExhaustedStagingGoesDirect)
{
    const size_t bytes = (14 << 20) + 7;
    struct {
        const char *entry;
        unsigned long nth;
        int to_device;
        const char *where; /* what the message names */
    } rows[] = {
        {"cuEventCreate", 2, 1, "its events"},
        {"cuMemcpyAsync", 3, 1, "the chunk at byte 8388608"},
        {"cuEventRecord", 2, 0, "the chunk at byte 4194304"},
        {"cuEventQuery", 1, 0, "the chunk at byte 0"},
        {"cuEventQuery", 4, 1, "its last chunks"}, /* the waits after the last chunk's copy */
        {"cuEventQuery", 3, 1, "its last chunks"}, /* the first of them: the rest still queued */
    };
    for (const auto &row : rows) {
        SCOPED_TRACE(std::string(row.entry) + " #" + std::to_string(row.nth));
        fake().reset();
        Buffer host(PAGEABLE, bytes), dev(DEVICE, bytes);
        host.fill(3);
        dev.fill(4);
        Batch b;
        if (row.to_device)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr, 0, host.ptr, H, bytes, 0));
        else
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, host.ptr, H, dev.ptr, 0, bytes, 0));
        ASSERT_EQ(0, fake().inject_failure(row.entry, row.nth, CUDA_ERROR_LAUNCH_FAILED));
        int status = ompbatch_batch_submit(b.b);
        fake_cuda_stats fs;
        fake().get_stats(&fs);
        EXPECT_EQ(0u, fs.pending_copies) << "chunks still queued when the submit failed";
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(b.b);
        fake().clear_injections();
        EXPECT_EQ(OMPBATCH_ERR_DRIVER, status);
        EXPECT_TRUE(message_has("copy 0 (pipelined, " + std::string(row.where) + "): "))
            << ompbatch_last_error();
        EXPECT_TRUE(message_has(std::string(row.entry) + " failed")) << ompbatch_last_error();
        ompbatch_batch_wait(b.b);
        ob_staging_totals t;
        ob_staging_get_totals(&t);
        EXPECT_EQ(0u, t.in_use);
        EXPECT_EQ(fake().call_count("cuEventCreate") - (row.nth == 2 && row.entry[7] == 'C'),
                  fake().call_count("cuEventDestroy"));
        EXPECT_EQ(1u, move(kLanes[H2D_PAGEABLE], {bytes}, OMPBATCH_STRATEGY_AUTO, 5)
                          .staged_copies);
    }
    // An event that cannot be destroyed is not the copy's failure: its bytes are in place.
    fake().reset();
    ASSERT_EQ(0, fake().inject_failure("cuEventDestroy", 1, CUDA_ERROR_INVALID_HANDLE));
    EXPECT_EQ(1u, move(kLanes[D2H_PAGEABLE], {bytes}, OMPBATCH_STRATEGY_AUTO, 7).staged_copies);
    fake_cuda_stats fs;
    fake().get_stats(&fs);
    EXPECT_EQ(1u, fs.injected_failures);
    // A chunk's copy fails and so does the wait for the stream behind it: the copy's failure
    // is the one reported (the wait's is logged), and nothing is left queued.
    {
        fake().reset();
        Buffer host(PAGEABLE, bytes), dev(DEVICE, bytes);
        host.fill(8);
        Batch b;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr, 0, host.ptr, H, bytes, 0));
        ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 2, CUDA_ERROR_LAUNCH_FAILED));
        ASSERT_EQ(0, fake().inject_failure("cuStreamSynchronize", 1, CUDA_ERROR_LAUNCH_FAILED));
        int status = ompbatch_batch_submit(b.b);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(b.b);
        fake().get_stats(&fs);
        fake().clear_injections();
        EXPECT_EQ(OMPBATCH_ERR_DRIVER, status);
        EXPECT_TRUE(message_has("cuMemcpyAsync failed")) << ompbatch_last_error();
        EXPECT_EQ(2u, fs.injected_failures) << "the stream's wait was not tried";
        EXPECT_EQ(0u, fs.pending_copies);
        ompbatch_batch_wait(b.b);
    }
    setenv("OMPBATCH_STAGING_MB", "8", 1); /* under the pipeline's 12 MiB */
    ob_config_reload();
    ob_staging_free_idle();
    fake().reset();
    ompbatch_stats s = move(kLanes[D2H_PAGEABLE], {bytes}, OMPBATCH_STRATEGY_AUTO, 6);
    EXPECT_EQ(1u, s.staging_refused);
    EXPECT_TRUE(s.paths & OMPBATCH_PATH_PER_COPY);
    EXPECT_EQ(0, fake().call_count("cuEventRecord"));
    // Sent to the driver for want of staging, the copy's failure is reported as such.
    {
        fake().reset();
        Buffer host(PAGEABLE, bytes), dev(DEVICE, bytes);
        dev.fill(9);
        Batch b;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, host.ptr, H, dev.ptr, 0, bytes, 0));
        ASSERT_EQ(0, fake().inject_failure("cuMemcpyAsync", 1, CUDA_ERROR_LAUNCH_FAILED));
        int status = ompbatch_batch_submit(b.b);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(b.b);
        fake().get_stats(&fs);
        fake().clear_injections();
        EXPECT_EQ(OMPBATCH_ERR_DRIVER, status);
        EXPECT_EQ(1u, fs.injected_failures);
        EXPECT_TRUE(message_has("cuMemcpyAsync failed")) << ompbatch_last_error();
        ompbatch_batch_wait(b.b);
    }
}

// The hook's lone small copy from the device into pageable memory goes through pinned
// staging: one copy-engine copy into staging and the unpack at the wait, no kernel (the driver
// would wait inside a copy into pageable memory, and libomptarget's contexts block on waits).
// Into pinned memory, with the direct strategy, and in batches of the API it goes straight.
// The hook forgets device memory whenever the runtime may have freed some. A hook batch's plan
// holds nothing of device memory but its copies' addresses, so the same copies reuse it after
// a forget (a halo loop keeps its plan across the enter and exit constructs around it); an API
// batch, which classifies device memory, plans again; other addresses never reuse it.
TEST_F(Strategy, AHookBatchKeepsItsPlanAcrossForgottenDeviceMemory)
{
    const size_t pieces = 64, stride = 4096 + 64, piece = 24;
    Buffer dev(DEVICE, pieces * stride), host(PAGEABLE, pieces * stride + 64);
    TestRng rng(test_seed() + 47);
    for (int hook : {1, 0}) {
        SCOPED_TRACE(hook ? "hook batch" : "API batch");
        ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
        Batch b(0, nullptr, &o);
        if (hook)
            ob_batch_set_hook_mode(b.b);
        for (int round = 0; round < 4; round++) {
            SCOPED_TRACE("round " + std::to_string(round));
            size_t shift = round == 3 ? 8 : 0; // the last round's copies land elsewhere
            dev.fill(rng());
            std::memset(host.ptr, 0x5A, pieces * stride + 64);
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
            for (size_t i = 0; i < pieces; i++)
                ASSERT_EQ(OMPBATCH_OK,
                          ompbatch_batch_add(b.b, host.ptr + i * stride + shift, H,
                                             dev.ptr + i * stride, 0, piece, OMPBATCH_MAP_FROM));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
            int reused = hook && (round == 1 || round == 2);
            EXPECT_EQ(reused ? 1u : 0u, b.stats().plan_reused);
            for (size_t j = 0; j < pieces * stride + 64; j++) {
                size_t at = j - shift, i = at / stride, in = at % stride;
                int copied = j >= shift && i < pieces && in < piece;
                ASSERT_EQ(copied ? dev.ptr[i * stride + in] : 0x5A, host.ptr[j]) << "byte " << j;
            }
            ob_batch_forget_device_memory(b.b);
        }
    }
}

TEST_F(Strategy, AHookBatchsLoneCopyIntoPageableMemoryBouncesThroughStaging)
{
    const size_t extent = (2u << 20) + 256;
    Buffer dev(DEVICE, extent), pageable(PAGEABLE, extent), pinned(PINNED, extent);
    TestRng rng(test_seed() + 31);
    struct Case {
        const char *what;
        const Buffer *dst;
        int hook;
        int strategy;
        int bounces;
    } cases[] = {
        {"hook, pageable", &pageable, 1, OMPBATCH_STRATEGY_AUTO, 1},
        {"hook, pageable, staged", &pageable, 1, OMPBATCH_STRATEGY_STAGED, 1},
        {"hook, pinned", &pinned, 1, OMPBATCH_STRATEGY_AUTO, 0},
        {"hook, pageable, direct", &pageable, 1, OMPBATCH_STRATEGY_DIRECT, 0},
        {"API, pageable", &pageable, 0, OMPBATCH_STRATEGY_AUTO, 0},
    };
    for (const Case &c : cases) {
        for (size_t bytes : {size_t{1}, size_t{7}, size_t{4096}, size_t{65536 + 3},
                             (size_t{2} << 20) - 1}) {
            SCOPED_TRACE(std::string(c.what) + ", " + std::to_string(bytes) + " bytes");
            size_t src_off = rng() % 97, dst_off = rng() % 89;
            dev.fill(rng());
            std::memset(c.dst->ptr, 0xA5, extent);
            ompbatch_batch_options o = with_strategy(c.strategy);
            Batch b(0, nullptr, &o);
            if (c.hook)
                ob_batch_set_hook_mode(b.b);
            for (int round = 0; round < 2; round++) {
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, c.dst->ptr + dst_off, H,
                                                          dev.ptr + src_off, 0, bytes,
                                                          OMPBATCH_MAP_FROM));
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
                ompbatch_stats s = b.stats();
                EXPECT_EQ(c.bounces ? 1u : 0u, s.staged_copies);
                EXPECT_EQ(0u, s.kernel_launches) << "one gathered piece needs no kernel";
                EXPECT_EQ(1u, s.driver_calls);
                EXPECT_EQ((uint64_t)round, s.plan_reused);
                for (size_t i = 0; i < extent; i++) {
                    unsigned char want = i >= dst_off && i < dst_off + bytes
                                             ? dev.ptr[src_off + i - dst_off]
                                             : 0xA5;
                    ASSERT_EQ(want, c.dst->ptr[i]) << "byte " << i << ", round " << round;
                }
                std::memset(c.dst->ptr, 0xA5, extent);
            }
            if (c.bounces) {
                char text[2048];
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, c.dst->ptr + dst_off, H,
                                                          dev.ptr + src_off, 0, bytes, 0));
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(b.b, text, sizeof(text), nullptr));
                EXPECT_NE(nullptr, std::strstr(text, c.strategy == OMPBATCH_STRATEGY_STAGED
                                                         ? "(forced)"
                                                         : "through pinned staging"))
                    << text;
            }
        }
    }
    // A lone copy the size of a lone staged one (2 MiB and up) is planned as before.
    Batch big(0);
    ob_batch_set_hook_mode(big.b);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(big.b, pageable.ptr, H, dev.ptr, 0, 2u << 20, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(big.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(big.b));
    EXPECT_EQ(0, std::memcmp(pageable.ptr, dev.ptr, 2u << 20));
    // When the destination cannot be classified, the copy goes to the driver unclassified.
    dev.fill(rng());
    Batch failing(0);
    ob_batch_set_hook_mode(failing.b);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(failing.b, pageable.ptr + 3, H, dev.ptr + 5, 0,
                                              1000, 0));
    ASSERT_EQ(0, fake().inject_failure("cuPointerGetAttributes", 1, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(failing.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(failing.b));
    fake().clear_injections();
    EXPECT_EQ(0u, failing.stats().staged_copies);
    EXPECT_EQ(0, std::memcmp(pageable.ptr + 3, dev.ptr + 5, 1000));
}

// A staged step with one gathered piece lets the copy engine read it into staging instead of
// launching the gather kernel; with two, the kernel gathers them. Over the bus the kernel that
// scatters the packed pieces is launched anyway and gathers the one piece too; two gathered
// pieces alone are one kernel's. (A batch of one copy is not staged at all.)
TEST_F(Strategy, OneGatheredPieceNeedsNoGatherKernel)
{
    Buffer host(PAGEABLE, 1 << 16), back(PAGEABLE, 1 << 16), dev(DEVICE, 1 << 16);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    for (int bus : {0, 1})
    for (int packs : {6, 0})
    for (int gathers : {1, 2}) {
        if (packs == 0 && gathers == 1)
            continue;
        SCOPED_TRACE(std::to_string(gathers) + " gathered piece(s), " + std::to_string(packs) +
                     " packed" + (bus ? ", over the bus" : ""));
        bus_kb(bus ? "1024" : "0");
        host.fill(40 + gathers);
        dev.fill(50 + gathers);
        std::memset(back.ptr, 0xA5, back.bytes);
        std::vector<unsigned char> from_device(dev.ptr + 32768, dev.ptr + 32768 + 3 * 1000);
        std::vector<unsigned char> dev_before(dev.ptr, dev.ptr + 6 * 900 + 1);
        Batch b(0, nullptr, &o);
        for (int i = 0; i < packs; i++)  // host -> device, packed then scattered by the kernel
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 900 + 1, 0,
                                                      host.ptr + i * 900 + 3, H, 777, 0));
        for (int g = 0; g < gathers; g++)  // device -> pageable, from untouched device bytes
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, back.ptr + g * 1000 + 5, H,
                                                      dev.ptr + 32768 + g * 1000, 0, 999, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
        ompbatch_stats s = b.stats();
        EXPECT_EQ((size_t)(packs + gathers), s.staged_copies);
        // Kernels: the scatter of the packs (bus or not), the gather (two pieces; over the
        // bus, joined with the scatter).
        unsigned want = (packs > 0 ? 1u : 0u) + (gathers == 2 ? 1u : 0u);
        if (bus && packs > 0)
            want = 1;
        EXPECT_EQ(want, s.kernel_launches);
        // The copy engine moves the packs unless over the bus, the one gather unless a
        // kernel over the bus takes it.
        unsigned copies = (packs > 0 && !bus ? 1u : 0u) +
                          (gathers == 2 ? (bus ? 0u : 1u) : (bus && packs > 0 ? 0u : 1u));
        // All of them in one driver call: a cuMemcpyAsync for one, a batch call for two.
        EXPECT_EQ(copies > 0 ? 1u : 0u, s.driver_calls);
        EXPECT_EQ(copies > 1 ? 1u : 0u, s.batch_calls);
        for (int i = 0; i < packs; i++)
            EXPECT_EQ(0, std::memcmp(dev.ptr + i * 900 + 1, host.ptr + i * 900 + 3, 777)) << i;
        if (packs == 0) {
            EXPECT_EQ(0, std::memcmp(dev.ptr, dev_before.data(), dev_before.size()));
        }
        for (size_t k = 0; k < back.bytes; k++) {
            size_t g = k >= 5 ? (k - 5) / 1000 : 0, at = k >= 5 ? (k - 5) % 1000 : 1000;
            bool inside = k >= 5 && (int)g < gathers && at < 999;
            ASSERT_EQ(inside ? from_device[g * 1000 + at] : 0xA5, back.ptr[k]) << "byte " << k;
        }
    }
}

TEST_F(Strategy, AutoKeepsLargePinnedPiecesDirect)
{
    ompbatch_stats s = move(kLanes[H2D_PINNED], std::vector<size_t>(4, 4 << 20),
                            OMPBATCH_STRATEGY_AUTO, 4);
    EXPECT_EQ(0u, s.staged_copies);
    EXPECT_EQ(1u, s.batch_calls);
}

TEST_F(Strategy, StagingIsReusedAndConcurrentBatchesGetTheirOwn)
{
    move(kLanes[H2D_PAGEABLE], std::vector<size_t>(16, 1000), OMPBATCH_STRATEGY_STAGED, 1);
    ob_staging_totals first;
    ob_staging_get_totals(&first);
    EXPECT_EQ(1u, first.regions);
    EXPECT_EQ(0u, first.in_use);
    move(kLanes[D2H_PAGEABLE], std::vector<size_t>(16, 900), OMPBATCH_STRATEGY_STAGED, 2);
    ob_staging_totals again;
    ob_staging_get_totals(&again);
    EXPECT_EQ(first.allocations, again.allocations) << "the second batch allocated staging";

    // Two batches in flight at once hold two regions.
    Buffer host(PAGEABLE, 1 << 16), dev(DEVICE, 1 << 16);
    host.fill(3);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch a(0, nullptr, &o), c(0, nullptr, &o);
    for (int i = 0; i < 8; i++) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(a.b, dev.ptr + i * 100, 0, host.ptr + i * 100,
                                                  H, 50, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(c.b, dev.ptr + 20000 + i * 100, 0,
                                                  host.ptr + 20000 + i * 100, H, 50, 0));
    }
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(a.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(c.b));
    ob_staging_totals busy;
    ob_staging_get_totals(&busy);
    EXPECT_EQ(2u, busy.in_use);
    EXPECT_EQ(2u, busy.regions);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(a.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(c.b));
    ob_staging_get_totals(&busy);
    EXPECT_EQ(0u, busy.in_use);
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ(0, std::memcmp(dev.ptr + i * 100, host.ptr + i * 100, 50));
        EXPECT_EQ(0, std::memcmp(dev.ptr + 20000 + i * 100, host.ptr + 20000 + i * 100, 50));
    }
}

TEST_F(Strategy, ExhaustedStagingSendsThePiecesDirect)
{
    // The refusal is routed around, not an error: said once, at OMPBATCH_VERBOSE=2 only.
    setenv("OMPBATCH_STAGING_MB", "0", 1);
    setenv("OMPBATCH_VERBOSE", "1", 1);
    ob_config_reload();
    testing::internal::CaptureStderr();
    ompbatch_stats s = move(kLanes[D2H_PAGEABLE], random_sizes(30, 5000, 4),
                            OMPBATCH_STRATEGY_STAGED, 6);
    std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(std::string::npos, said.find("staging")) << said;
    setenv("OMPBATCH_VERBOSE", "2", 1);
    ob_config_reload();
    testing::internal::CaptureStderr();
    s = move(kLanes[D2H_PAGEABLE], random_sizes(30, 5000, 4), OMPBATCH_STRATEGY_STAGED, 6);
    said = testing::internal::GetCapturedStderr();
    unsetenv("OMPBATCH_VERBOSE");
    ob_config_reload();
    EXPECT_NE(std::string::npos,
              said.find("staging refused: 1048576 bytes of pinned staging would pass "
                        "OMPBATCH_STAGING_MB (0 MiB)"))
        << said;
    EXPECT_EQ(std::string::npos, said.find("error:")) << said;
    EXPECT_EQ(30u, s.staging_refused);
    EXPECT_TRUE(s.paths & OMPBATCH_PATH_PER_COPY);
    EXPECT_EQ(0u, s.kernel_launches);
    // Staging bigger than the cap allows is refused too, smaller is granted.
    setenv("OMPBATCH_STAGING_MB", "1", 1);
    ob_config_reload();
    EXPECT_EQ(40u, move(kLanes[H2D_PAGEABLE], std::vector<size_t>(40, 40000),
                        OMPBATCH_STRATEGY_STAGED, 7).staging_refused);
    EXPECT_EQ(0u, move(kLanes[H2D_PAGEABLE], std::vector<size_t>(40, 4000),
                       OMPBATCH_STRATEGY_STAGED, 8).staging_refused);
}

TEST_F(Strategy, AKernelThatDoesNotLoadSendsThePiecesDirect)
{
    ASSERT_EQ(0, fake().inject_failure("cuModuleLoadData", 1, CUDA_ERROR_INVALID_IMAGE));
    ompbatch_stats s = move(kLanes[H2D_PINNED], random_sizes(20, 3000, 5),
                            OMPBATCH_STRATEGY_STAGED, 8);
    EXPECT_EQ(20u, s.staging_refused);
    // The device stays without the kernel: no second attempt, and nothing more said (the
    // thread's message stays what it was).
    ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "a message from before the second batch");
    s = move(kLanes[D2D], random_sizes(20, 3000, 6), OMPBATCH_STRATEGY_STAGED, 9);
    EXPECT_EQ(20u, s.staging_refused);
    EXPECT_EQ(1, fake().call_count("cuModuleLoadData"));
    EXPECT_STREQ("a message from before the second batch", ompbatch_last_error());
}

// A module whose functions cannot be found is unloaded again, and the pieces go direct.
TEST_F(Strategy, AModuleWithoutItsFunctionsIsUnloaded)
{
    fake_cuda_stats before, after;
    fake().get_stats(&before);
    ASSERT_EQ(0, fake().inject_failure("cuModuleGetFunction", 2, CUDA_ERROR_NOT_FOUND));
    ompbatch_stats s = move(kLanes[H2D_PINNED], random_sizes(20, 3000, 10),
                            OMPBATCH_STRATEGY_STAGED, 11);
    EXPECT_EQ(20u, s.staging_refused);
    EXPECT_EQ(1, fake().call_count("cuModuleLoadData"));
    EXPECT_EQ(1, fake().call_count("cuModuleUnload"));
    fake().get_stats(&after);
    EXPECT_EQ(before.live_modules, after.live_modules);
}

TEST_F(Strategy, AFailedLaunchIsReportedAndTheNextBatchWorks)
{
    Buffer host(PAGEABLE, 4096), dev(DEVICE, 4096);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 512, 0, host.ptr + i * 512,
                                                  H, 100, 0));
    ASSERT_EQ(0, fake().inject_failure("cuLaunchKernel", 1, CUDA_ERROR_OUT_OF_MEMORY));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(b.b));
    EXPECT_TRUE(message_has("copy kernel")) << ompbatch_last_error();
    EXPECT_TRUE(message_has("cuLaunchKernel failed: CUDA_ERROR_OUT_OF_MEMORY"))
        << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
    ob_staging_totals t;
    ob_staging_get_totals(&t);
    EXPECT_EQ(0u, t.in_use) << "a failed submit kept its staging";
    EXPECT_EQ(16u, move(kLanes[H2D_PAGEABLE], random_sizes(16, 700, 2), OMPBATCH_STRATEGY_STAGED,
                        3).staged_copies);
}

TEST_F(Strategy, AFailedWaitLeavesPageableDestinationsUntouched)
{
    Buffer host(PAGEABLE, 4096), dev(DEVICE, 4096);
    dev.fill(1);
    std::vector<unsigned char> before(host.ptr, host.ptr + host.bytes);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, host.ptr + i * 512, H, dev.ptr + i * 512,
                                                  0, 100, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b));
    // Gathered bytes reach pageable destinations only at the wait.
    EXPECT_EQ(0, std::memcmp(before.data(), host.ptr, host.bytes));
    fake().fail_next_sync(CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_wait(b.b));
    EXPECT_EQ(0, std::memcmp(before.data(), host.ptr, host.bytes));
}

// 16 pieces of up to 4 KiB between pageable memory and the device, staged, submitted; the
// fake's counters are zeroed before the wait (the submit may query the stream before it packs),
// then the wait runs and every byte is checked.
void wait_on_few_pieces(bool from_device, uint64_t salt)
{
    TestRng rng(test_seed() ^ salt);
    Buffer host(PAGEABLE, 16 * 4096), dev(DEVICE, 16 * 4096);
    Buffer &src = from_device ? dev : host, &dst = from_device ? host : dev;
    src.fill(rng() % 200);
    dst.fill(rng() % 200 + 1);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    std::vector<size_t> sizes;
    for (int i = 0; i < 16; i++) {
        sizes.push_back(1 + rng() % 4096);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dst.ptr + i * 4096, from_device ? H : 0,
                                                  src.ptr + i * 4096, from_device ? 0 : H,
                                                  sizes[i], 0));
    }
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
    fake().reset();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
    EXPECT_EQ(1u, b.stats().kernel_launches);
    for (int i = 0; i < 16; i++)
        ASSERT_EQ(0, std::memcmp(dst.ptr + i * 4096, src.ptr + i * 4096, sizes[i])) << i;
}

// A staged launch of few pieces has its blocks set words in pinned staging when its bytes are in
// place (kernels.h): the wait ends on them, without waiting for a query to say the stream is
// done. The fake's first query runs the launch (setting the words) and answers not ready, so a
// wait that ignored the words would query twice. Both directions: the gathered pieces are
// unpacked after the words. The polling budget is made long, so that a slow (sanitised) run
// does not spend it before the words come.
TEST_F(Strategy, AFewPiecesLaunchEndsOnItsBlocksWords)
{
    setenv("OMPBATCH_WAIT_POLL_US", "1000000", 1);
    ob_config_reload();
    for (int from_device = 0; from_device < 2; from_device++) {
        SCOPED_TRACE(from_device ? "D2H pageable" : "H2D pageable");
        wait_on_few_pieces(from_device, 41);
        fake_cuda_stats fs;
        fake().get_stats(&fs);
        EXPECT_EQ(16u, fs.done_words_set);
        EXPECT_EQ(1, fake().call_count("cuStreamQuery"));
        EXPECT_EQ(0, fake().call_count("cuStreamSynchronize"));
    }
    unsetenv("OMPBATCH_WAIT_POLL_US");
    ob_config_reload();
}

// Gathered pieces whose blocks have set their words are unpacked while the other blocks still
// run: the fake's query runs half of the launch's remaining blocks, in a scrambled order. Once
// with a good stream (every byte lands, the launch seen part done), once with the second query
// failing: the eight pieces whose words came before it are in their destinations whole, the
// others untouched, and the wait reports the failure.
TEST_F(Strategy, GatheredPiecesAreUnpackedAsTheirBlocksWordsCome)
{
    setenv("OMPBATCH_WAIT_POLL_US", "1000000", 1);
    ob_config_reload();
    for (int fail = 0; fail < 2; fail++) {
        SCOPED_TRACE(fail ? "the second query fails" : "a good stream");
        TestRng rng(test_seed() ^ (0x7e1 + fail));
        Buffer host(PAGEABLE, 16 * 4096), dev(DEVICE, 16 * 4096);
        unsigned fill = rng() % 200;
        dev.fill(fill);
        host.fill(fill + 1);
        std::vector<unsigned char> before(host.ptr, host.ptr + host.bytes);
        ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
        Batch b(0, nullptr, &o);
        std::vector<size_t> sizes;
        for (int i = 0; i < 16; i++) {
            sizes.push_back(1 + rng() % 4096);
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, host.ptr + i * 4096, H,
                                                      dev.ptr + i * 4096, 0, sizes[i], 0));
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
        fake().reset();
        fake().set_done_words(2);
        if (fail) {
            ASSERT_EQ(0, fake().inject_failure("cuStreamQuery", 2, CUDA_ERROR_ILLEGAL_ADDRESS));
        }
        EXPECT_EQ(fail ? OMPBATCH_ERR_DRIVER : OMPBATCH_OK, ompbatch_batch_wait(b.b))
            << ompbatch_last_error();
        EXPECT_EQ(1u, b.stats().kernel_launches);
        fake_cuda_stats fs;
        fake().get_stats(&fs);
        EXPECT_EQ(fail ? 8u : 16u, fs.done_words_set);
        EXPECT_LE(1u, fs.done_partial_runs) << "the launch was never seen part done";
        size_t whole = 0;
        for (int i = 0; i < 16; i++) {
            const unsigned char *at = host.ptr + i * 4096;
            bool landed = std::memcmp(at, dev.ptr + i * 4096, sizes[i]) == 0;
            whole += landed;
            if (!fail) {
                ASSERT_TRUE(landed) << i;
            } else if (!landed) {
                ASSERT_EQ(0, std::memcmp(at, before.data() + i * 4096, sizes[i]))
                    << "piece " << i << " is neither untouched nor whole";
            }
            ASSERT_EQ(0, std::memcmp(at + sizes[i], before.data() + i * 4096 + sizes[i],
                                     4096 - sizes[i]))
                << "bytes past piece " << i;
        }
        EXPECT_EQ(fail ? 8u : 16u, whole) << "the pieces whose words came were not all unpacked";
    }
    unsetenv("OMPBATCH_WAIT_POLL_US");
    ob_config_reload();
}

// Blocks that never set their words (a kernel that does not signal): the wait still ends, when
// a query finds the stream done, and every byte is in place.
TEST_F(Strategy, WordsThatNeverComeLeaveTheWaitToTheStream)
{
    fake().set_done_words(0);
    for (int from_device = 0; from_device < 2; from_device++) {
        SCOPED_TRACE(from_device ? "D2H pageable" : "H2D pageable");
        wait_on_few_pieces(from_device, 43);
        fake_cuda_stats fs;
        fake().get_stats(&fs);
        EXPECT_EQ(0u, fs.done_words_set);
        EXPECT_EQ(2, fake().call_count("cuStreamQuery"));
    }
}

// A level that gathers into pinned staging by the copy engine (here the hook's lone copy into
// pageable memory) has the stream write a word after it (cuStreamWriteValue32), and the wait
// ends on that word: the fake's first query runs the stream, word included, and answers not
// ready. Without the driver's stream memory operations, or once one failed, the wait queries
// until the stream is done, and the bytes are the same.
TEST_F(Strategy, AGatherByTheCopyEngineEndsOnAWordTheStreamWrites)
{
    setenv("OMPBATCH_WAIT_POLL_US", "1000000", 1); // no budget spent before the word, however slow
    ob_config_reload();
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
    for (int way = 0; way < 3; way++) {
        SCOPED_TRACE(way == 0 ? "the stream writes the word" : way == 1 ? "the call fails"
                                                                        : "after a failure");
        TestRng rng(test_seed() ^ (0x3a7 + way));
        Buffer host(PAGEABLE, 4096), dev(DEVICE, 4096);
        dev.fill(rng() % 200);
        host.fill(rng() % 200 + 1);
        size_t bytes = 1 + rng() % 4000;
        Batch b(0, nullptr, &o);
        ob_batch_set_hook_mode(b.b);
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(b.b, host.ptr, H, dev.ptr, 0, bytes, OMPBATCH_MAP_FROM));
        fake().reset();
        if (way == 1) {
            ASSERT_EQ(0, fake().inject_failure("cuStreamWriteValue32", 1,
                                               CUDA_ERROR_NOT_SUPPORTED));
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
        ASSERT_EQ(0, std::memcmp(host.ptr, dev.ptr, bytes));
        ompbatch_stats st = b.stats();
        EXPECT_EQ(1u, st.staged_copies);
        EXPECT_EQ(0u, st.kernel_launches);
        EXPECT_EQ(1u, st.driver_calls) << "the word is not a copy";
        fake_cuda_stats fs;
        fake().get_stats(&fs);
        EXPECT_EQ(way == 0 ? 1 : 2, fake().call_count("cuStreamQuery"));
        EXPECT_EQ(way == 0 ? 1u : 0u, fs.values_written);
        EXPECT_EQ(way == 2 ? 0 : 1, fake().call_count("cuStreamWriteValue32"));
    }
    ob_staged_forget_stream_words_for_testing();
    unsetenv("OMPBATCH_WAIT_POLL_US");
    ob_config_reload();
}

// Work enqueued after the launch voids its words: a level whose small staged pieces launch
// first and whose large pinned copy goes to the copy engine after them is waited for whole.
// The fake's query stops the stream right after the launch, words set, the copy still queued:
// a wait that trusted the words would return before the copy ran.
TEST_F(Strategy, WorkAfterTheLaunchIsWaitedForDespiteTheWords)
{
    TestRng rng(test_seed() ^ 0xd0e);
    Buffer small(PAGEABLE, 16 * 4096), big(PINNED, 8 << 20), dev(DEVICE, (8 << 20) + 16 * 4096);
    small.fill(rng() % 200);
    big.fill(rng() % 200);
    std::vector<unsigned char> before(dev.ptr, dev.ptr + dev.bytes);
    fake().reset();
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 16; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 4096, 0, small.ptr + i * 4096,
                                                  H, 4000, 0));
    ASSERT_EQ(OMPBATCH_OK,
              ompbatch_batch_add(b.b, dev.ptr + 16 * 4096, 0, big.ptr, H, big.bytes, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
    ompbatch_stats st = b.stats();
    EXPECT_EQ(16u, st.staged_copies);
    EXPECT_EQ(1u, st.kernel_launches);
    fake_cuda_stats fs;
    fake().get_stats(&fs);
    EXPECT_EQ(16u, fs.done_words_set);
    EXPECT_EQ(1u, fs.done_partial_runs) << "the stream did not stop after the launch";
    EXPECT_EQ(0u, fs.pending_copies);
    for (int i = 0; i < 16; i++)
        ASSERT_EQ(0, std::memcmp(dev.ptr + i * 4096, small.ptr + i * 4096, 4000)) << i;
    ASSERT_EQ(0, std::memcmp(dev.ptr + 16 * 4096, big.ptr, big.bytes));
}

// A stream that fails before the words come is reported by the query, and the batch works
// again afterwards.
TEST_F(Strategy, AStreamFailingBeforeTheWordsIsReported)
{
    Buffer host(PAGEABLE, 16 * 4096), dev(DEVICE, 16 * 4096);
    dev.fill(9);
    std::vector<unsigned char> before(host.ptr, host.ptr + host.bytes);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 16; i++)
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(b.b, host.ptr + i * 4096, H, dev.ptr + i * 4096, 0, 3000, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
    ASSERT_EQ(0, fake().inject_failure("cuStreamQuery", 1, CUDA_ERROR_ILLEGAL_ADDRESS));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_wait(b.b));
    EXPECT_TRUE(message_has("cuStreamQuery")) << ompbatch_last_error();
    EXPECT_TRUE(message_has("CUDA_ERROR_ILLEGAL_ADDRESS")) << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(before.data(), host.ptr, host.bytes))
        << "bytes of a failed wait reached pageable destinations";
    fake().clear_injections();
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
    move(kLanes[D2H_PAGEABLE], random_sizes(16, 4096, 45), OMPBATCH_STRATEGY_STAGED, 46);
}

// OMPBATCH_WAIT_POLL_US=0 asks the wait not to spin: it blocks in cuStreamSynchronize at once,
// and no launch or stream writes words nobody watches.
TEST_F(Strategy, NoPollingMeansNoWords)
{
    setenv("OMPBATCH_WAIT_POLL_US", "0", 1);
    ob_config_reload();
    for (int from_device = 0; from_device < 2; from_device++) {
        wait_on_few_pieces(from_device, 47);
        fake_cuda_stats fs;
        fake().get_stats(&fs);
        EXPECT_EQ(0u, fs.done_words_set);
        EXPECT_EQ(0, fake().call_count("cuStreamQuery"));
        EXPECT_EQ(1, fake().call_count("cuStreamSynchronize"));
    }
    // The hook's lone copy into pageable memory: no word after it either.
    Buffer host(PAGEABLE, 4096), dev(DEVICE, 4096);
    dev.fill(61);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
    Batch b(0, nullptr, &o);
    ob_batch_set_hook_mode(b.b);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, host.ptr, H, dev.ptr, 0, 4000, OMPBATCH_MAP_FROM));
    fake().reset();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
    EXPECT_EQ(1u, b.stats().staged_copies);
    EXPECT_EQ(0, fake().call_count("cuStreamWriteValue32"));
    EXPECT_EQ(0, std::memcmp(host.ptr, dev.ptr, 4000));
    unsetenv("OMPBATCH_WAIT_POLL_US");
    ob_config_reload();
}

TEST_F(Strategy, PackedSourcesAreReadDuringSubmit)
{
    Buffer host(PAGEABLE, 4096), dev(DEVICE, 4096);
    host.fill(4);
    std::vector<unsigned char> sent(host.ptr, host.ptr + host.bytes);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 512, 0, host.ptr + i * 512,
                                                  H, 300, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b));
    std::memset(host.ptr, 0x11, host.bytes); // the caller reuses its buffer
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b));
    for (int i = 0; i < 4; i++)
        EXPECT_EQ(0, std::memcmp(dev.ptr + i * 512, &sent[i * 512], 300));
}

TEST_F(Strategy, DependentLevelsStageInOrder)
{
    // host A -> device X (level 0), device X -> host B (level 1), both staged.
    Buffer a(PAGEABLE, 8192), x(DEVICE, 8192), bb(PAGEABLE, 8192);
    a.fill(5);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 8; i++) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, x.ptr + i * 1000, 0, a.ptr + i * 1000, H,
                                                  777, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, bb.ptr + i * 1000 + 1, H, x.ptr + i * 1000,
                                                  0, 777, 0));
    }
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b));
    for (int i = 0; i < 8; i++)
        EXPECT_EQ(0, std::memcmp(bb.ptr + i * 1000 + 1, a.ptr + i * 1000, 777)) << i;
    EXPECT_EQ(16u, b.stats().staged_copies);
}

// A batch of two dependent levels, the second reading what the first copies into pageable
// memory: the stream failing while it runs fails the submit with the driver's error, writes
// none of the first level's pageable destinations and runs no later level; the same copies
// then go through clean.
TEST_F(Strategy, AFailedWaitBetweenLevelsStopsTheLaterOnes)
{
    Buffer x(DEVICE, 8192), bb(PAGEABLE, 8192), y(DEVICE, 8192);
    x.fill(6);
    bb.fill(7);
    y.fill(8);
    std::vector<unsigned char> bb_before(bb.ptr, bb.ptr + bb.bytes);
    std::vector<unsigned char> y_before(y.ptr, y.ptr + y.bytes);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 8; i++) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, bb.ptr + i * 1000, H, x.ptr + i * 1000, 0,
                                                  777, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, y.ptr + i * 1000, 0, bb.ptr + i * 1000, H,
                                                  777, 0));
    }
    fake().fail_next_sync(CUDA_ERROR_ILLEGAL_ADDRESS);
    int status = ompbatch_batch_submit(b.b);
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, status) << "the failure did not fail the submit";
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(b.b);
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, status);
    EXPECT_TRUE(message_has("ILLEGAL_ADDRESS")) << ompbatch_last_error();
    ompbatch_batch_wait(b.b);
    fake().clear_injections();
    EXPECT_EQ(0, std::memcmp(bb_before.data(), bb.ptr, bb.bytes)) << "an unpack ran after the failure";
    EXPECT_EQ(0, std::memcmp(y_before.data(), y.ptr, y.bytes)) << "the later level ran";
    fake_cuda_stats f;
    fake().get_stats(&f);
    EXPECT_EQ(0u, f.pending_copies);
    // The same copies again, clean: every byte.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
    for (int i = 0; i < 8; i++) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, bb.ptr + i * 1000, H, x.ptr + i * 1000, 0,
                                                  777, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, y.ptr + i * 1000, 0, bb.ptr + i * 1000, H,
                                                  777, 0));
    }
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b));
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ(0, std::memcmp(bb.ptr + i * 1000, x.ptr + i * 1000, 777)) << i;
        EXPECT_EQ(0, std::memcmp(y.ptr + i * 1000, x.ptr + i * 1000, 777)) << i;
    }
}

TEST_F(Strategy, HostCopiesBesideStagedOnesInOneLevel)
{
    // Host-to-host copies run on the calling thread; they must not end the level's staged
    // work early (the gathered bytes are unpacked only after the bulk copy).
    Buffer dev(DEVICE, 8192), out(PAGEABLE, 8192), a(PAGEABLE, 8192), c(PAGEABLE, 8192);
    dev.fill(8);
    a.fill(9);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Batch b(0, nullptr, &o);
    for (int i = 0; i < 6; i++) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, out.ptr + i * 1000, H, dev.ptr + i * 1000,
                                                  0, 600, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, c.ptr + i * 1000, H, a.ptr + i * 1000, H,
                                                  500, 0));
    }
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b));
    for (int i = 0; i < 6; i++) {
        EXPECT_EQ(0, std::memcmp(out.ptr + i * 1000, dev.ptr + i * 1000, 600)) << i;
        EXPECT_EQ(0, std::memcmp(c.ptr + i * 1000, a.ptr + i * 1000, 500)) << i;
    }
    ompbatch_stats s = b.stats();
    EXPECT_EQ(6u, s.staged_copies);
    EXPECT_TRUE(s.paths & OMPBATCH_PATH_HOST);
}

// A loop's in-place step (pinned host to device, here) keeps its descriptors on the device
// from the second run of the same plan: later runs launch on them without writing or copying
// any. Fresh bytes every round prove the kernel still reads the sources; a failed allocation
// or copy of the kept descriptors only means building them again.
TEST_F(Strategy, ALoopKeepsItsInPlaceDescriptorsOnTheDevice)
{
    Buffer host(PINNED, 1 << 16), dev(DEVICE, 1 << 16);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    uint64_t salt = 70;
    auto round = [&](Batch &b, size_t moved = SIZE_MAX) {
        host.fill(salt++);
        std::memset(dev.ptr, 0xA5, dev.bytes);
        fake().reset();
        for (size_t i = 0; i < 30; i++)
            EXPECT_EQ(OMPBATCH_OK,
                      ompbatch_batch_add(b.b, dev.ptr + i * 1500 + (i == moved), 0,
                                         host.ptr + i * 1500 + (i == moved), H, 700, 0));
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b));
        for (size_t i = 0; i < 30; i++)
            EXPECT_EQ(0, std::memcmp(dev.ptr + i * 1500 + (i == moved),
                                     host.ptr + i * 1500 + (i == moved), 700))
                << "copy " << i << ", round " << salt;
        ompbatch_stats s = b.stats();
        EXPECT_EQ(30u, s.staged_copies);
        EXPECT_EQ(30u * 700, s.staged_bytes);
        EXPECT_EQ(1u, s.kernel_launches);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
        // What kept (or not) the descriptors: allocations and copies of this round.
        return std::make_pair(fake().call_count("cuMemAlloc"), fake().call_count("cuMemcpyAsync"));
    };
    {
        Batch b(0, nullptr, &o);
        round(b);
        EXPECT_EQ(std::make_pair(1LL, 1LL), round(b)) << "the second run keeps them";
        EXPECT_EQ(std::make_pair(0LL, 0LL), round(b)) << "later runs launch on them";
        EXPECT_EQ(std::make_pair(0LL, 0LL), round(b));
        EXPECT_EQ(std::make_pair(0LL, 0LL), round(b, 29)) << "a changed copy: a new plan";
        EXPECT_EQ(std::make_pair(0LL, 1LL), round(b, 29)) << "kept again, in the same memory";
        EXPECT_EQ(std::make_pair(0LL, 0LL), round(b, 29));
        fake().reset();
    }
    EXPECT_EQ(1, fake().call_count("cuMemFree")) << "destroy frees the kept descriptors";
    for (const char *failing : {"cuMemAlloc", "cuMemcpyAsync"}) {
        Batch b(0, nullptr, &o);
        round(b);
        host.fill(salt++);
        ASSERT_EQ(0, fake().inject_failure(failing, 1, CUDA_ERROR_OUT_OF_MEMORY));
        for (size_t i = 0; i < 30; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 1500, 0,
                                                      host.ptr + i * 1500, H, 700, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << failing;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << failing;
        for (size_t i = 0; i < 30; i++)
            ASSERT_EQ(0, std::memcmp(dev.ptr + i * 1500, host.ptr + i * 1500, 700)) << failing;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
        std::pair<long long, long long> again = round(b);
        EXPECT_EQ(1, again.second) << "kept on the next run after a failed " << failing;
        EXPECT_EQ(std::make_pair(0LL, 0LL), round(b)) << failing;
    }
}

// A batch refilled with the same copies reuses its plan (or takes back a kept one); any change,
// forgetting memory, a description of an open batch or a failure makes it plan again. Bytes are checked each time
// on fresh data.
TEST_F(Strategy, ARefillWithTheSameCopiesReusesThePlan)
{
    Buffer host(PAGEABLE, 1 << 16), dev(DEVICE, 1 << 16);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_AUTO);
    Batch b(0, nullptr, &o);
    uint64_t salt = 40;
    // moved: the copy whose destination moves up one byte (none when out of range).
    auto round = [&](size_t count, size_t bytes, size_t moved = SIZE_MAX) {
        host.fill(salt++);
        for (size_t i = 0; i < count; i++)
            EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 1000 + (i == moved), 0,
                                                      host.ptr + i * 1000 + (i == moved), H,
                                                      bytes, 0));
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_submit(b.b)) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b));
        for (size_t i = 0; i < count; i++)
            EXPECT_EQ(0, std::memcmp(dev.ptr + i * 1000 + (i == moved),
                                     host.ptr + i * 1000 + (i == moved), bytes))
                << i;
        ompbatch_stats s = b.stats();
        EXPECT_EQ(count, s.copies_planned);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
        return s.plan_reused;
    };
    EXPECT_EQ(0u, round(40, 500));
    EXPECT_EQ(1u, round(40, 500));
    EXPECT_EQ(1u, round(40, 500));
    EXPECT_EQ(0u, round(40, 501)) << "a different size";
    EXPECT_EQ(0u, round(39, 501)) << "one copy fewer";
    EXPECT_EQ(1u, round(39, 501));
    EXPECT_EQ(0u, round(39, 501, 20)) << "one copy in the middle moved";
    EXPECT_EQ(1u, round(39, 501)) << "and back: the plan was kept";
    EXPECT_EQ(1u, round(39, 501));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_forget_memory(b.b));
    EXPECT_EQ(0u, round(39, 501)) << "after forgetting memory";
    // A description of the open batch rebuilds the plan from what was added so far.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr, 0, host.ptr, H, 7, 0));
    char text[256];
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(b.b, text, sizeof(text), nullptr));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
    EXPECT_EQ(0u, round(39, 501)) << "after a description";
    // After a failed submit the next one plans again.
    ASSERT_EQ(0, fake().inject_failure("cuLaunchKernel", 1, CUDA_ERROR_OUT_OF_MEMORY));
    host.fill(salt++);
    for (size_t i = 0; i < 39; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 1000, 0, host.ptr + i * 1000,
                                                  H, 501, 0));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(b.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
    EXPECT_EQ(0u, round(39, 501)) << "after a failure";
    EXPECT_EQ(1u, round(39, 501));
    // A new reading of the environment (OMPBATCH_STRATEGY, say) may change the plan.
    ob_config_reload();
    EXPECT_EQ(0u, round(39, 501)) << "after the environment was read again";
    EXPECT_EQ(1u, round(39, 501));
}

TEST_F(Strategy, CalibrationMeasuresCachesAndRereads)
{
    char dir[] = "/tmp/ompbatch_cost_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(dir));
    std::string cache = std::string(dir) + "/nested";
    setenv("OMPBATCH_COST_CACHE", cache.c_str(), 1);
    setenv("OMPBATCH_CALIBRATE", "force", 1);
    ob_config_reload();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    const ob_cost_model *m = ob_cost_model_for(0);
    EXPECT_NE(nullptr, std::strstr(m->source, "calibrated")) << m->source;
    ob_cost_reset_for_testing();
    setenv("OMPBATCH_CALIBRATE", "1", 1);
    ob_config_reload();
    fake().reset();
    m = ob_cost_model_for(0);
    EXPECT_NE(nullptr, std::strstr(m->source, "cache")) << m->source;
    EXPECT_EQ(0, fake().call_count("cuLaunchKernel")) << "a cached model was measured again";
    // A damaged cache is measured again (and rewritten).
    std::string file = std::string(m->source).substr(6);
    FILE *f = std::fopen(file.c_str(), "w");
    ASSERT_NE(nullptr, f);
    std::fputs("ompbatch-cost-model 1\nh2d_pinned direct 1 2\n", f);
    std::fclose(f);
    ob_cost_reset_for_testing();
    m = ob_cost_model_for(0);
    EXPECT_NE(nullptr, std::strstr(m->source, "calibrated")) << m->source;
    ob_cost_model reread;
    EXPECT_EQ(OMPBATCH_OK, ob_cost_read(&reread, file.c_str())) << ompbatch_last_error();
    // A whole model of the format before staged levels went over the bus is measured again.
    std::string text;
    {
        FILE *in = std::fopen(file.c_str(), "r");
        ASSERT_NE(nullptr, in);
        char line[512];
        while (std::fgets(line, sizeof(line), in) != nullptr)
            text += line;
        std::fclose(in);
    }
    ASSERT_EQ(0u, text.find("ompbatch-cost-model 2\n"));
    text.replace(0, std::strlen("ompbatch-cost-model 2"), "ompbatch-cost-model 1");
    f = std::fopen(file.c_str(), "w");
    ASSERT_NE(nullptr, f);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    ob_cost_reset_for_testing();
    fake().reset();
    m = ob_cost_model_for(0);
    EXPECT_NE(nullptr, std::strstr(m->source, "calibrated")) << m->source;
    EXPECT_GT(fake().call_count("cuLaunchKernel"), 0);
    EXPECT_EQ(OMPBATCH_OK, ob_cost_read(&reread, file.c_str())) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    ob_cost_reset_for_testing();
    setenv("OMPBATCH_CALIBRATE", "0", 1);
    setenv("OMPBATCH_COST_CACHE", "off", 1);
    ob_config_reload();
    std::remove(file.c_str());
    rmdir(cache.c_str());
    rmdir(dir);
}

// Threads with batches of their own share the staging pool, the kernel, the cost model and the
// pack threads: every byte still lands, and the pool ends with nothing in use.
TEST_F(Strategy, ThreadsStagingAtOnceStayByteExact)
{
    setenv("OMPBATCH_PACK_THREADS", "4", 1);
    ob_config_reload();
    const int kThreads = 6, kRounds = 20;
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            Buffer host(PAGEABLE, 1 << 20), back(PAGEABLE, 1 << 20), dev(DEVICE, 1 << 20);
            ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
            ompbatch_batch *b = nullptr;
            if (ompbatch_batch_create(&b, 0, nullptr, &o) != OMPBATCH_OK) {
                failures++;
                return;
            }
            for (int r = 0; r < kRounds; r++) {
                host.fill(1000 * t + r);
                std::memset(back.ptr, 0x3c, back.bytes);
                // 64 pieces of 4 KiB (a 256 KiB pack, so the pack threads join in) there and
                // back in two levels.
                for (int i = 0; i < 64; i++) {
                    ompbatch_batch_add(b, dev.ptr + i * 5000, 0, host.ptr + i * 5000, H, 4096, 0);
                    ompbatch_batch_add(b, back.ptr + i * 5000, H, dev.ptr + i * 5000, 0, 4096, 0);
                }
                if (ompbatch_batch_submit(b) != OMPBATCH_OK || ompbatch_batch_wait(b) != OMPBATCH_OK)
                    failures++;
                for (int i = 0; i < 64; i++)
                    if (std::memcmp(back.ptr + i * 5000, host.ptr + i * 5000, 4096) != 0)
                        failures++;
                ompbatch_batch_reset(b);
            }
            ompbatch_batch_destroy(b);
        });
    }
    for (auto &th : threads)
        th.join();
    EXPECT_EQ(0, failures.load());
    ob_staging_totals totals;
    ob_staging_get_totals(&totals);
    EXPECT_EQ(0u, totals.in_use);
    EXPECT_LE(totals.regions, static_cast<size_t>(kThreads));
    unsetenv("OMPBATCH_PACK_THREADS");
    ob_config_reload();
}

// Every driver call of the staged path can fail: the submit reports it (or goes direct where
// the failure only denies staging), and the next batch works.
TEST_F(Strategy, DriverFailuresOnTheStagedPathAreReportedOrRoutedAround)
{
    Buffer host(PAGEABLE, 1 << 16), back(PAGEABLE, 1 << 16), dev(DEVICE, 1 << 16);
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    struct {
        const char *entry;
        int bus;            /* OMPBATCH_BUS_KB at its default, else 0 */
        int to_device;
        int fails;          /* 1: the submit fails; 0: the pieces go direct */
        const char *message;
    } rows[] = {
        {"cuMemAlloc", 0, 1, 0, nullptr},            /* device staging denied */
        {"cuModuleGetFunction", 0, 1, 0, nullptr},   /* no kernel */
        {"cuMemcpyAsync", 0, 1, 1, "the staged bulk copy"},
        {"cuLaunchKernel", 0, 0, 1, "the copy kernel"},
        {"cuStreamQuery", 0, 1, 1, "cuStreamQuery failed"}, /* the wait before packing */
        {"cuMemAllocHost", 1, 1, 0, nullptr},        /* pinned staging denied */
        {"cuModuleGetFunction", 1, 1, 0, nullptr},
        {"cuLaunchKernel", 1, 1, 1, "the copy kernel"},
        {"cuLaunchKernel", 1, 0, 1, "the copy kernel"},
        {"cuStreamQuery", 1, 1, 1, "cuStreamQuery failed"},
    };
    for (const auto &row : rows) {
        SCOPED_TRACE(std::string(row.entry) + (row.bus ? ", over the bus" : ", bulk copies"));
        bus_kb(row.bus ? "1024" : "0");
        ob_staging_free_idle();
        ob_kernels_forget_for_testing();
        host.fill(7);
        dev.fill(8);
        Batch b(0, nullptr, &o);
        for (int i = 0; i < 8; i++) {
            if (row.to_device)
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 700, 0,
                                                          host.ptr + i * 700, H, 500, 0));
            else
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, back.ptr + i * 700, H,
                                                          dev.ptr + i * 700, 0, 500, 0));
        }
        ASSERT_EQ(0, fake().inject_failure(row.entry, 1, CUDA_ERROR_OUT_OF_MEMORY));
        int status = ompbatch_batch_submit(b.b);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(b.b);
        fake().clear_injections();
        if (row.fails) {
            EXPECT_EQ(OMPBATCH_ERR_DRIVER, status);
            EXPECT_TRUE(message_has(row.message)) << ompbatch_last_error();
            ompbatch_batch_wait(b.b);
        } else {
            EXPECT_EQ(OMPBATCH_OK, status) << ompbatch_last_error();
            EXPECT_EQ(8u, b.stats().staging_refused);
            for (int i = 0; i < 8; i++)
                EXPECT_EQ(0, std::memcmp(dev.ptr + i * 700, host.ptr + i * 700, 500)) << i;
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(b.b));
        ob_staging_totals t;
        ob_staging_get_totals(&t);
        EXPECT_EQ(0u, t.in_use);
        // The next batch works.
        ob_kernels_forget_for_testing();
        EXPECT_EQ(16u, move(kLanes[H2D_PAGEABLE], random_sizes(16, 900, 4),
                            OMPBATCH_STRATEGY_STAGED, 77).staged_copies);
    }
}

// A level whose bulk copy fails was packed and gathered already: the pinned staging it would
// have unpacked from still holds the bytes an earlier batch moved through it. The program's
// pageable destinations keep their own bytes and copies_done counts none of the level.
TEST_F(Strategy, AFailedBulkCopyLeavesPageableDestinationsAsTheyWere)
{
    bus_kb("0");
    ompbatch_batch_options o = with_strategy(OMPBATCH_STRATEGY_STAGED);
    Buffer dev(DEVICE, 1 << 16), back(PAGEABLE, 1 << 16), src(PAGEABLE, 1 << 16);
    struct {
        const char *entry; /* the call that sends the level's bulk copies */
        int also_to_device; /* a packed H2D half in the same level: two bulk copies */
    } rows[] = {{"cuMemcpyAsync", 0}, {"cuMemcpyBatchAsync", 1}};
    uint64_t salt = 100;
    for (const auto &row : rows) {
        SCOPED_TRACE(row.entry);
        // An earlier batch moves other bytes through the same staging.
        dev.fill(salt++);
        {
            Batch a(0, nullptr, &o);
            for (int i = 0; i < 4; i++)
                ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(a.b, back.ptr + i * 8192, H,
                                                          dev.ptr + i * 8192, 0, 4096, 0));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(a.b)) << ompbatch_last_error();
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(a.b)) << ompbatch_last_error();
            ASSERT_EQ(0, std::memcmp(back.ptr, dev.ptr, 4096));
        }
        dev.fill(salt++);
        src.fill(salt++);
        back.fill(salt++);
        std::vector<unsigned char> before(back.ptr, back.ptr + back.bytes);
        Batch b(0, nullptr, &o);
        for (int i = 0; i < 4; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, back.ptr + i * 8192, H,
                                                      dev.ptr + i * 8192, 0, 4096, 0));
        for (int i = 0; row.also_to_device && i < 4; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(b.b, dev.ptr + i * 8192 + 4096, 0,
                                                      src.ptr + i * 8192, H, 4096, 0));
        fake_cuda_stats before_fault, after_fault;
        fake().get_stats(&before_fault);
        ASSERT_EQ(0, fake().inject_failure(row.entry, 1, CUDA_ERROR_INVALID_VALUE));
        EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_submit(b.b));
        EXPECT_TRUE(message_has("the staged bulk copy")) << ompbatch_last_error();
        fake().get_stats(&after_fault);
        fake().clear_injections();
        EXPECT_EQ(1u, after_fault.injected_failures - before_fault.injected_failures);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(b.b)) << ompbatch_last_error();
        EXPECT_EQ(0, std::memcmp(back.ptr, before.data(), back.bytes))
            << "a destination took bytes its copy never brought";
        EXPECT_EQ(0u, b.stats().copies_done);
        ob_staging_totals t;
        ob_staging_get_totals(&t);
        EXPECT_EQ(0u, t.in_use);
    }
}

// Freeing an outgrown area can fail: the new area is used, the failure is only logged.
TEST_F(Strategy, AFailedFreeOfOutgrownStagingIsNotAFailure)
{
    bus_kb("0"); // both areas from the start
    EXPECT_EQ(16u, move(kLanes[H2D_PAGEABLE], std::vector<size_t>(16, 1000),
                        OMPBATCH_STRATEGY_STAGED, 3).staged_copies);
    ASSERT_EQ(0, fake().inject_failure("cuMemFreeHost", 1, CUDA_ERROR_INVALID_VALUE));
    ASSERT_EQ(0, fake().inject_failure("cuMemFree", 1, CUDA_ERROR_INVALID_VALUE));
    // 2 MiB of pieces: both areas of the region grow past 1 MiB.
    ompbatch_stats s = move(kLanes[H2D_PAGEABLE], std::vector<size_t>(32, 64 << 10),
                            OMPBATCH_STRATEGY_STAGED, 4);
    EXPECT_EQ(32u, s.staged_copies);
    EXPECT_EQ(0u, s.staging_refused);
    EXPECT_EQ(1, fake().call_count("cuMemFreeHost"));
    fake().clear_injections();
}

// A calibration that cannot allocate falls back to the built-in model; a cache that cannot be
// written is reported and the measured model is used anyway.
TEST_F(Strategy, CalibrationFailuresFallBackAndAnUnwritableCacheIsNotFatal)
{
    setenv("OMPBATCH_CALIBRATE", "force", 1);
    setenv("OMPBATCH_COST_CACHE", "/proc/ompbatch-cannot-exist", 1);
    ob_config_reload();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    // A failure while allocating, warming up or measuring falls back on the built-in model,
    // and the message is that failure's, whatever the frees after it did; a failed free alone
    // keeps the calibration.
    struct {
        const char *entry;
        unsigned long nth;
        const char *also; /* a second fault, at its first call */
        const char *said; /* in the message; NULL: calibrated */
    } rows[] = {
        {"cuMemAllocHost", 1, nullptr, "cuMemAllocHost failed"},
        {"cuMemAlloc", 2, "cuMemFree", "cuMemAlloc failed"}, /* the first one's free fails too */
        {"cuMemcpyAsync", 1, "cuMemFreeHost", "cuMemcpyAsync failed"}, /* the warm-up */
        {"cuStreamSynchronize", 1, nullptr, "cuStreamSynchronize failed"},
        {"cuLaunchKernel", 1, nullptr, "cuLaunchKernel failed"}, /* a staged probe */
        {"cuMemFree", 1, nullptr, nullptr},
    };
    for (const auto &row : rows) {
        SCOPED_TRACE(std::string(row.entry) + " #" + std::to_string(row.nth));
        ob_cost_reset_for_testing();
        fake().reset();
        ASSERT_EQ(0, fake().inject_failure(row.entry, row.nth, CUDA_ERROR_OUT_OF_MEMORY));
        if (row.also != nullptr) {
            ASSERT_EQ(0, fake().inject_failure(row.also, 1, CUDA_ERROR_INVALID_VALUE));
        }
        const char *source = ob_cost_model_for(0)->source;
        fake_cuda_stats fs;
        fake().get_stats(&fs);
        fake().clear_injections();
        EXPECT_EQ(row.also != nullptr ? 2u : 1u, fs.injected_failures);
        if (row.said == nullptr) {
            EXPECT_NE(nullptr, std::strstr(source, "calibrated")) << source;
        } else {
            EXPECT_STREQ("built-in (H200)", source);
            EXPECT_TRUE(message_has(row.said)) << ompbatch_last_error();
        }
    }
    ob_cost_reset_for_testing();
    const ob_cost_model *m = ob_cost_model_for(0);
    EXPECT_NE(nullptr, std::strstr(m->source, "calibrated")) << m->source;
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    ob_cost_reset_for_testing();
    setenv("OMPBATCH_CALIBRATE", "0", 1);
    setenv("OMPBATCH_COST_CACHE", "off", 1);
    ob_config_reload();
}

// Without the device's name there is no cache file to trust: a failed cuDeviceGetName measures
// the model again and writes nothing into the cache directory.
TEST_F(Strategy, ACacheWithoutTheDeviceNameIsNotUsed)
{
    for (const char *failing : {"cuDeviceGetName", "cuDevicePrimaryCtxGetState"}) {
        SCOPED_TRACE(failing);
        char dir[] = "/tmp/ompbatch_cost_XXXXXX";
        ASSERT_NE(nullptr, mkdtemp(dir));
        setenv("OMPBATCH_COST_CACHE", dir, 1);
        setenv("OMPBATCH_CALIBRATE", "1", 1);
        ob_config_reload();
        ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
        ob_cost_reset_for_testing();
        fake().reset();
        ASSERT_EQ(0, fake().inject_failure(failing, 1, CUDA_ERROR_INVALID_DEVICE));
        const ob_cost_model *m = ob_cost_model_for(0);
        EXPECT_EQ(m->source, std::strstr(m->source, "calibrated on device 0")) << m->source;
        EXPECT_EQ(1, fake().call_count(failing));
        fake().clear_injections();
        EXPECT_EQ(0, rmdir(dir)) << "the cache directory is not empty";
        EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
        ob_cost_reset_for_testing();
        setenv("OMPBATCH_CALIBRATE", "0", 1);
        setenv("OMPBATCH_COST_CACHE", "off", 1);
        ob_config_reload();
    }
}

// A model measured where waits spin is not used where they block (libomptarget's contexts),
// nor the other way round: the cache file is named by the primary context's scheduling mode.
TEST_F(Strategy, TheCalibrationCacheIsKeptPerSchedulingMode)
{
    char dir[] = "/tmp/ompbatch_cost_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(dir));
    setenv("OMPBATCH_COST_CACHE", dir, 1);
    setenv("OMPBATCH_CALIBRATE", "1", 1);
    struct Mode {
        const char *flags; /* FAKE_CUDA_PRIMARY_CTX_FLAGS */
        const char *file;
        const char *source; /* what the model says it came from */
    } modes[] = {
        {"0", "/Fake_CUDA_Device_0-13000.cost", "calibrated"},
        {"4", "/Fake_CUDA_Device_0-13000-blocking.cost", "calibrated"},
        {"0", "/Fake_CUDA_Device_0-13000.cost", "cache"},
        {"2", "/Fake_CUDA_Device_0-13000-yield.cost", "calibrated"},
        {"4", "/Fake_CUDA_Device_0-13000-blocking.cost", "cache"},
        {"1", "/Fake_CUDA_Device_0-13000.cost", "cache"}, /* spinning, as CUDA's automatic */
    };
    // Logged: a mode's first calibration (no file yet) is not an error.
    setenv("OMPBATCH_VERBOSE", "1", 1);
    for (const Mode &mode : modes) {
        SCOPED_TRACE(std::string("flags ") + mode.flags);
        setenv("FAKE_CUDA_PRIMARY_CTX_FLAGS", mode.flags, 1);
        load();
        ob_config_reload();
        ob_cost_reset_for_testing();
        ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
        testing::internal::CaptureStderr();
        const ob_cost_model *m = ob_cost_model_for(0);
        std::string log = testing::internal::GetCapturedStderr();
        EXPECT_EQ(m->source, std::strstr(m->source, mode.source)) << m->source;
        EXPECT_EQ(std::string::npos, log.find("error")) << log;
        EXPECT_NE(std::string::npos,
                  log.find(std::string(mode.source) == "cache" ? "cost model from" : "calibrated"))
            << log;
        EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
        std::string file = std::string(dir) + mode.file;
        EXPECT_EQ(0, access(file.c_str(), R_OK)) << file << " is missing";
        if (std::string(mode.source) == "cache") {
            EXPECT_NE(nullptr, std::strstr(m->source, mode.file)) << m->source;
        }
    }
    unsetenv("FAKE_CUDA_PRIMARY_CTX_FLAGS");
    unsetenv("OMPBATCH_VERBOSE");
    for (const char *name : {"/Fake_CUDA_Device_0-13000.cost",
                             "/Fake_CUDA_Device_0-13000-blocking.cost",
                             "/Fake_CUDA_Device_0-13000-yield.cost"})
        EXPECT_EQ(0, std::remove((std::string(dir) + name).c_str())) << name;
    EXPECT_EQ(0, rmdir(dir)) << "other files in the cache directory";
    ob_cost_reset_for_testing();
    setenv("OMPBATCH_CALIBRATE", "0", 1);
    setenv("OMPBATCH_COST_CACHE", "off", 1);
    ob_config_reload();
    load();
}

size_t count_of(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        n++;
    return n;
}

TEST_F(Strategy, ABadCostOverrideIsNamedOnceAndIgnored)
{
    setenv("OMPBATCH_COST", "h2d_pinned.staged.fixed=fast", 1);
    ob_config_reload();
    ob_cost_reset_for_testing();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    testing::internal::CaptureStderr();
    const ob_cost_model *m = ob_cost_model_for(0);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    EXPECT_EQ("ompbatch: ignoring OMPBATCH_COST: OMPBATCH_COST entry "
              "\"h2d_pinned.staged.fixed=fast\": the value is not a number of microseconds\n",
              err);
    ob_cost_model builtin;
    ob_cost_builtin(&builtin);
    EXPECT_EQ(0, std::memcmp(builtin.curve, m->curve, sizeof(builtin.curve)));
    EXPECT_STREQ("built-in (H200)", m->source);
    // Said once per read of the environment: the next device's model and the host batches'
    // model keep quiet, at any OMPBATCH_VERBOSE.
    setenv("OMPBATCH_VERBOSE", "1", 1);
    ob_config_reload();
    testing::internal::CaptureStderr();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(1));
    (void)ob_cost_model_for(1);
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    (void)ob_cost_model_for(-1);
    err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(1u, count_of(err, "OMPBATCH_COST entry")) << err;
    testing::internal::CaptureStderr();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    ob_cost_reset_for_testing();
    (void)ob_cost_model_for(0);
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(0u, count_of(err, "OMPBATCH_COST")) << err;
    unsetenv("OMPBATCH_VERBOSE");
    unsetenv("OMPBATCH_COST");
    ob_config_reload();
    ob_cost_reset_for_testing();
}

TEST(CostModel, OverridesAreCheckedWhole)
{
    ob_cost_model m;
    ob_cost_builtin(&m);
    char why[256] = "";
    EXPECT_EQ(2, ob_cost_apply_overrides(&m, "d2d.staged.fixed=3.5,h2d_pinned.direct.4096=9", why,
                                         sizeof(why)));
    EXPECT_DOUBLE_EQ(3.5, m.curve[OB_LANE_D2D][OB_WAY_STAGED].fixed_us);
    EXPECT_DOUBLE_EQ(9.0, m.curve[OB_LANE_H2D_PINNED][OB_WAY_DIRECT].piece_us[2]);
    // Each bad entry is named alone, even followed by more entries, and nothing is applied.
    struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"d2d.staged.fixed,d2d.direct.fixed=1",
         "entry \"d2d.staged.fixed\" is not lane.way.key=microseconds"},
        {"x.staged.fixed=1", "entry \"x.staged.fixed=1\": unknown lane"},
        {"d2d.sideways.fixed=1", "entry \"d2d.sideways.fixed=1\": unknown way"},
        {"d2d.staged.1000=1,d2d.direct.fixed=2",
         "entry \"d2d.staged.1000=1\": key \"1000\" is neither fixed nor"},
        {"d2d.staged.fixed=-1,d2d.direct.fixed=2",
         "entry \"d2d.staged.fixed=-1\": the value is not a number of microseconds"},
        {"d2d.direct.fixed=2,d2d.staged.fixed=abc",
         "entry \"d2d.staged.fixed=abc\": the value is not"},
    };
    for (const auto &row : bad) {
        ob_cost_model before = m;
        EXPECT_EQ(-1, ob_cost_apply_overrides(&m, row.text, why, sizeof(why))) << row.text;
        EXPECT_EQ(0, std::memcmp(&before, &m, sizeof(m))) << row.text;
        EXPECT_NE(nullptr, std::strstr(why, row.why)) << row.text << ": " << why;
    }
    // Between measured sizes the cost is interpolated; past the largest it scales with size.
    const ob_cost_curve &c = m.curve[OB_LANE_D2H_PINNED][OB_WAY_DIRECT];
    double mid = ob_cost_piece(&c, (4096 + 65536) / 2);
    EXPECT_DOUBLE_EQ((c.piece_us[2] + c.piece_us[3]) / 2, mid);
    EXPECT_DOUBLE_EQ(4 * c.piece_us[4], ob_cost_piece(&c, 4 << 20));
}

// Streaming copies: every destination phase, sizes around the streaming threshold and the
// 64-byte body, and nothing written outside the destination.
TEST(StreamCopy, AnyAlignmentAndSizeExactAndBounded)
{
    std::vector<unsigned char> src = random_bytes(8192, 17);
    const size_t sizes[] = {0, 1, 15, 63, 64, 255, 256, 257, 319, 320, 1000, 4096, 4099, 8000};
    for (size_t size : sizes)
        for (size_t dphase = 0; dphase < 32; dphase += 3)
            for (size_t sphase = 0; sphase < 16; sphase += 5) {
                std::vector<unsigned char> dst(8192 + 96, 0xA5);
                ob_copy_streaming(&dst[32 + dphase], &src[sphase], size);
                ASSERT_EQ(0, memcmp(&dst[32 + dphase], &src[sphase], size))
                    << "size " << size << " dst phase " << dphase << " src phase " << sphase;
                for (size_t i = 0; i < 32 + dphase; i++)
                    ASSERT_EQ(0xA5, dst[i]) << "before, size " << size;
                for (size_t i = 32 + dphase + size; i < dst.size(); i++)
                    ASSERT_EQ(0xA5, dst[i]) << "after, size " << size;
            }
}

TEST(Workers, EveryPartRunsOnce)
{
    // Helpers even on a machine of two processors, so the threaded path runs.
    setenv("OMPBATCH_PACK_THREADS", "4", 1);
    setenv("OMPBATCH_HOST_BUSY", "0", 1);
    ob_config_reload();
    ob_workers_forget_lateness_for_testing();
    static std::atomic<int> hits[37];
    for (auto &h : hits)
        h = 0;
    ob_workers_run([](void *, size_t part, size_t) { hits[part]++; }, nullptr, 37);
    for (auto &h : hits)
        EXPECT_EQ(1, h.load());
    // Large moves split across threads land byte-exact.
    std::vector<unsigned char> src = random_bytes(3 << 20, 5), dst(3 << 20, 0xEE);
    std::vector<ob_host_move> moves;
    for (size_t at = 0; at < src.size();) {
        size_t n = 1 + (at * 7919) % 300000;
        n = at + n > src.size() ? src.size() - at : n;
        moves.push_back({&dst[at], &src[at], n, nullptr});
        at += n;
    }
    ob_host_moves_run(moves.data(), moves.size(), OB_MOVE_UNPACK);
    EXPECT_EQ(src, dst);
    // The same into "staging": streaming stores, and ordinary ones, same bytes.
    for (ob_move_kind kind : {OB_MOVE_PACK_STREAMING, OB_MOVE_PACK_CACHED}) {
        std::vector<unsigned char> streamed(src.size(), 0xDD);
        for (auto &m : moves)
            m.dst = &streamed[static_cast<const unsigned char *>(m.src) - src.data()];
        ob_host_moves_run(moves.data(), moves.size(), kind);
        EXPECT_EQ(src, streamed) << "kind " << kind;
    }
    // Back to back, as packs come: helpers still spinning take the next job.
    for (int round = 0; round < 20; round++) {
        std::vector<unsigned char> again(src.size(), static_cast<unsigned char>(round));
        for (auto &m : moves)
            m.dst = &again[static_cast<const unsigned char *>(m.src) - src.data()];
        ob_host_moves_run(moves.data(), moves.size(),
                          static_cast<ob_move_kind>(round % 3));
        ASSERT_EQ(src, again) << "round " << round;
    }
    unsetenv("OMPBATCH_PACK_THREADS");
    ob_config_reload();
}

// Jobs back to back, shared and not, of 2 to 40 parts: every part of every job runs exactly
// once, and the caller returns only once all of them have (parts claimed by a compare-and-swap
// of the job's ticket: a helper still holding an older job's ticket must claim nothing of a
// newer one). Parts take a few microseconds, so helpers watching for work take some of them.
TEST(Workers, BackToBackJobsRunEachPartOnceBeforeTheCallerReturns)
{
    setenv("OMPBATCH_PACK_THREADS", "4", 1);
    setenv("OMPBATCH_HOST_BUSY", "0", 1);
    ob_config_reload();
    ob_workers_forget_lateness_for_testing();
    struct job {
        std::atomic<int> runs[40];
        std::atomic<int> done{0};
        std::atomic<int> elsewhere{0};
        pthread_t caller;
    };
    auto part = [](void *arg, size_t k, size_t) {
        job *j = static_cast<job *>(arg);
        auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2);
        while (std::chrono::steady_clock::now() < until)
            ;
        j->runs[k]++;
        if (!pthread_equal(pthread_self(), j->caller))
            j->elsewhere++;
        j->done++;
    };
    int elsewhere = 0;
    for (int round = 0; round < 3000; round++) {
        job j;
        for (auto &r : j.runs)
            r = 0;
        j.caller = pthread_self();
        size_t parts = 2 + (size_t)(round * 7919) % 39;
        ob_workers_forget_lateness_for_testing(); /* helpers descheduled here must not end it */
        if (round % 3 == 0)
            ob_workers_run(part, &j, parts);
        else
            ob_workers_share(part, &j, parts);
        ASSERT_EQ((int)parts, j.done.load()) << "round " << round << ": returned early";
        for (size_t k = 0; k < 40; k++)
            ASSERT_EQ(k < parts ? 1 : 0, j.runs[k].load()) << "round " << round << " part " << k;
        elsewhere += j.elsewhere.load();
    }
    EXPECT_GT(elsewhere, 0) << "no helper took a part of 3000 jobs";
    unsetenv("OMPBATCH_PACK_THREADS");
    ob_config_reload();
}

// With a runnable thread on every processor (here: one spinning thread per processor beside
// this one), the helpers would be descheduled: jobs run on the caller, the pipeline is left.
// The host's load is read at most every 20 ms.
TEST(Workers, ABusyHostMakesTheCallerWorkAlone)
{
    setenv("OMPBATCH_PACK_THREADS", "4", 1);
    setenv("OMPBATCH_HOST_BUSY", "auto", 1);
    ob_config_reload();
    ob_workers_forget_lateness_for_testing();
    std::atomic<bool> stop{false};
    std::vector<std::thread> spinners;
    for (long i = 0; i < sysconf(_SC_NPROCESSORS_ONLN); i++)
        spinners.emplace_back([&stop] {
            while (!stop.load(std::memory_order_relaxed))
                ;
        });
    bool saw_busy = false;
    for (int tries = 0; tries < 200 && !saw_busy; tries++) {
        usleep(25000); /* past the 20 ms between reads of the load */
        saw_busy = ob_workers_late();
    }
    stop = true;
    for (auto &t : spinners)
        t.join();
    EXPECT_TRUE(saw_busy) << "every processor had a spinning thread, yet the host looked idle";
    setenv("OMPBATCH_HOST_BUSY", "0", 1);
    ob_config_reload();
    ob_workers_forget_lateness_for_testing();
    EXPECT_FALSE(ob_workers_late());
    unsetenv("OMPBATCH_PACK_THREADS");
    ob_config_reload();
}

} // namespace
