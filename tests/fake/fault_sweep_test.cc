// Injected faults at every driver call site: for every entry point the library resolves (and
// cuGetProcAddress and either batch form), the 1st, 2nd and 3rd call fails with each of two
// results (every lookup of cuGetProcAddress, so that each entry point goes missing in turn), in four passes (polling waits, blocking waits with bulk copies, the v12080 batch
// form, and the last two together), during a workload that loads the driver, calibrates
// nothing (built-in model), creates batches of every strategy, moves pinned, pageable and
// device memory both ways, and refills one batch with the same copies until its kernel runs
// on descriptors kept in device memory.
// Each run either completes with every byte right (the library routed around the fault) or
// reports an OMPBATCH_ERR_* status with a message; afterwards nothing is left pending, no
// context stays pushed, the library's memory goes back to where it was, and a fresh batch on
// the same device works byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/support/fake_fixture.h"

extern "C" {
#include "plugin/api/cost_models.h"
#include "plugin/core/alloc.h"
#include "plugin/cuda/kernel_module.h"
#include "plugin/core/config.h"
#include "plugin/plan/cost.h"
#include "plugin/cuda/driver_api.h"
#include "plugin/cuda/peers.h"
#include "plugin/cuda/staging.h"
}

namespace {

const char *const kEntryPoints[] = {
#define OB_SWEEP_NAME_(field, symbol, version, need) #field,
    OMPBATCH_DRIVER_ENTRY_POINTS(OB_SWEEP_NAME_)
#undef OB_SWEEP_NAME_
        "cuGetProcAddress",
    "cuMemcpyBatchAsync",
};

struct Buffers {
    Buffer pinned{PINNED, 1 << 16};
    Buffer pageable{PAGEABLE, 1 << 16};
    Buffer device{DEVICE, 1 << 16};
    Buffer back_pinned{PINNED, 1 << 16};
    Buffer back_pageable{PAGEABLE, 1 << 16};
    Buffer device1{DEVICE, 1 << 16, 1};
};

// A batch run to completion; its status, with the message in *why on failure. The batch is
// destroyed either way (its destroy status is not the caller's).
int Finish(ompbatch_batch *batch, int status, std::string *why)
{
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(batch);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(batch);
    if (status != OMPBATCH_OK && why != nullptr)
        *why = ompbatch_last_error();
    if (batch != nullptr)
        ompbatch_batch_destroy(batch);
    return status;
}

// Past the strategies' bytes: a host batch, whose sides the driver classifies (device memory
// would be refused), and a batch of device 0 spanning both GPUs with a zero-byte copy between
// them (skipped) beside a real one.
int HostAndAcrossGpus(Buffers &b, std::string *why)
{
    const size_t at = 61440, n = 1000;
    std::memset(b.device1.ptr, 0xA5, n);
    ompbatch_batch *host = nullptr;
    int status = ompbatch_batch_create(&host, H, nullptr, nullptr);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_add(host, b.back_pageable.ptr + at, H, b.pinned.ptr + at, H, n, 0);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_add(host, b.back_pinned.ptr + at, H, b.pageable.ptr + at, H, n, 0);
    if ((status = Finish(host, status, why)) != OMPBATCH_OK)
        return status;
    ompbatch_batch *across = nullptr;
    status = ompbatch_batch_create(&across, 0, nullptr, nullptr);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_add(across, b.device1.ptr, 1, b.device.ptr, 0, n, 0);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_add(across, nullptr, 1, nullptr, 0, 0, 0);
    if ((status = Finish(across, status, why)) != OMPBATCH_OK)
        return status;
    if (std::memcmp(b.back_pageable.ptr + at, b.pinned.ptr + at, n) != 0 ||
        std::memcmp(b.back_pinned.ptr + at, b.pageable.ptr + at, n) != 0 ||
        std::memcmp(b.device1.ptr, b.device.ptr, n) != 0) {
        if (why != nullptr)
            *why = "bytes differ: the host batch or the batch across GPUs";
        return -1000;
    }
    return OMPBATCH_OK;
}

// One batch refilled with the same device-to-device copies three times: the plan is reused,
// the second submit keeps the copy kernel's descriptors in device memory and the third
// launches on them; destroying the batch frees them.
int DeviceRefills(Buffers &b, std::string *why)
{
    const size_t from = 50000, to = 54000, count = 32, piece = 40;
    ompbatch_batch_options o;
    std::memset(&o, 0, sizeof(o));
    o.struct_size = sizeof(o);
    o.strategy = OMPBATCH_STRATEGY_STAGED;
    ompbatch_batch *batch = nullptr;
    int status = ompbatch_batch_create(&batch, 0, nullptr, &o);
    for (int round = 0; round < 3 && status == OMPBATCH_OK; round++) {
        for (size_t i = 0; i < count * piece; i++)
            b.device.ptr[from + i] = static_cast<unsigned char>(round * 31 + i * 7 + 1);
        std::memset(b.device.ptr + to, 0xA5, count * 64);
        for (size_t i = 0; i < count && status == OMPBATCH_OK; i++)
            status = ompbatch_batch_add(batch, b.device.ptr + to + i * 64, 0,
                                        b.device.ptr + from + i * piece, 0, piece, 0);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_submit(batch);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(batch);
        if (status != OMPBATCH_OK)
            break;
        for (size_t i = 0; i < count; i++) {
            if (std::memcmp(b.device.ptr + to + i * 64, b.device.ptr + from + i * piece,
                            piece) != 0) {
                if (why != nullptr)
                    *why = "bytes differ: refill " + std::to_string(round) + ", copy " +
                           std::to_string(i);
                ompbatch_batch_destroy(batch);
                return -1000;
            }
        }
        status = ompbatch_batch_reset(batch);
    }
    if (status != OMPBATCH_OK && why != nullptr)
        *why = ompbatch_last_error();
    if (batch != nullptr)
        ompbatch_batch_destroy(batch);
    return status;
}

// One workload: every strategy, host to device from pinned and pageable memory, device to
// device, then back to pinned and pageable memory. Returns the first failing status (with the
// library's message in *why) or OMPBATCH_OK when every byte arrived.
int Workload(Buffers &b, uint64_t seed, std::string *why)
{
    b.pinned.fill(seed);
    b.pageable.fill(seed + 1);
    std::memset(b.back_pinned.ptr, 0xA5, b.back_pinned.bytes);
    std::memset(b.back_pageable.ptr, 0xA5, b.back_pageable.bytes);
    const int strategies[] = {OMPBATCH_STRATEGY_DIRECT, OMPBATCH_STRATEGY_STAGED,
                              OMPBATCH_STRATEGY_AUTO};
    for (int s = 0; s < 3; s++) {
        ompbatch_batch_options o;
        std::memset(&o, 0, sizeof(o));
        o.struct_size = sizeof(o);
        o.strategy = strategies[s];
        ompbatch_batch *batch = nullptr;
        int status = ompbatch_batch_create(&batch, 0, nullptr, &o);
        size_t base = static_cast<size_t>(s) * 16384;
        for (size_t i = 0; i < 12 && status == OMPBATCH_OK; i++) {
            size_t at = base + i * 1024, n = 100 + i * 37;
            unsigned char *src = i % 2 ? b.pinned.ptr : b.pageable.ptr;
            status = ompbatch_batch_add(batch, b.device.ptr + at, 0, src + at, H, n, 0);
            // The device copy moves it on within the device; the last copies bring it back.
            if (status == OMPBATCH_OK)
                status = ompbatch_batch_add(batch, b.device.ptr + at + 512, 0, b.device.ptr + at,
                                            0, n / 2, 0);
            if (status == OMPBATCH_OK)
                status = ompbatch_batch_add(batch, (i % 2 ? b.back_pinned.ptr
                                                          : b.back_pageable.ptr) + at,
                                            H, b.device.ptr + at, 0, n, 0);
        }
        // Finish destroys the batch even after a failure; its own status is not the workload's.
        if ((status = Finish(batch, status, why)) != OMPBATCH_OK)
            return status;
        for (size_t i = 0; i < 12; i++) {
            size_t at = base + i * 1024, n = 100 + i * 37;
            const unsigned char *src = i % 2 ? b.pinned.ptr : b.pageable.ptr;
            const unsigned char *got = (i % 2 ? b.back_pinned.ptr : b.back_pageable.ptr) + at;
            // The device copy wrote the first n / 2 bytes at +512 (inside this copy's source
            // range only when 512 < n): the expected bytes follow the same order.
            std::vector<unsigned char> expect(src + at, src + at + n);
            if (512 < n)
                std::memcpy(expect.data() + 512, src + at, std::min(n / 2, n - 512));
            if (std::memcmp(got, expect.data(), n) != 0) {
                if (why != nullptr)
                    *why = "bytes differ: strategy " + std::to_string(strategies[s]) +
                           ", copy " + std::to_string(i);
                return -1000;
            }
        }
    }
    int status = DeviceRefills(b, why);
    if (status != OMPBATCH_OK)
        return status;
    return HostAndAcrossGpus(b, why);
}

// One injection: the pass (0 polling waits, 1 blocking waits with every staged level through
// device staging and a bulk copy, 2 the v12080 batch form, 3 both), the entry point, its nth
// call, and the result it fails with.
struct Fault {
    int pass;
    const char *site;
    unsigned long nth;
    CUresult result;
};

std::vector<Fault> AllFaults()
{
    std::vector<Fault> faults;
    const CUresult results[] = {CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_LAUNCH_FAILED};
    // The driver's entry points are looked up one by one at load: a failed lookup leaves that
    // one missing, whichever it is.
    const unsigned long lookups = sizeof(kEntryPoints) / sizeof(kEntryPoints[0]) + 4;
    for (int pass = 0; pass < 4; pass++)
        for (const char *site : kEntryPoints)
            for (CUresult result : results)
                for (unsigned long nth = 1;
                     nth <= (std::string(site) == "cuGetProcAddress" ? lookups : 3); nth++)
                    faults.push_back({pass, site, nth, result});
    return faults;
}

const char *const kPassNames[] = {"Polling", "BlockingBulk", "V12080", "V12080BlockingBulk"};

// What the whole sweep saw, printed at the end (docs/testing.md's reliability figures) and
// checked there: most call sites must be reached by the workload.
struct Tally {
    size_t tried = 0, surfaced = 0, routed = 0, never_called = 0;
    std::set<std::string> sites_hit;
};

Tally &SweepTally()
{
    static Tally tally;
    return tally;
}

class SweepSummary : public ::testing::Environment {
public:
    void TearDown() override
    {
        const Tally &t = SweepTally();
        if (t.tried == 0)
            return; /* the sweep was filtered out */
        std::string missed;
        for (const char *site : kEntryPoints)
            if (!t.sites_hit.count(site))
                missed += std::string(" ") + site;
        std::printf("fault sweep: %zu injections (%zu entry points x 3 calls, every lookup of "
                    "cuGetProcAddress, x 2 results x 4 passes: polling waits, blocking waits and "
                    "bulk copies, the v12080 batch form, both); %zu call "
                    "sites reached: %zu faults surfaced as errors, %zu routed around; %zu "
                    "injections not reached by the workload; entry points it never calls:%s\n",
                    t.tried, sizeof(kEntryPoints) / sizeof(kEntryPoints[0]), t.sites_hit.size(),
                    t.surfaced, t.routed, t.never_called, missed.c_str());
        if (t.tried == AllFaults().size()) {
            EXPECT_GE(t.sites_hit.size(), 20u) << "the workload reaches too few call sites";
        }
    }
};

::testing::Environment *const kSweepSummary =
    ::testing::AddGlobalTestEnvironment(new SweepSummary);

class FaultSweep : public FakeDriver, public ::testing::WithParamInterface<Fault> {
protected:
    void SetUp() override
    {
        FakeDriver::SetUp();
        const Fault &f = GetParam();
        unsetenv("OMPBATCH_WAIT_POLL_US");
        unsetenv("OMPBATCH_BUS_KB");
        if (f.pass == 1 || f.pass == 3) {
            setenv("OMPBATCH_WAIT_POLL_US", "0", 1);
            setenv("OMPBATCH_BUS_KB", "0", 1);
        }
        if (f.pass >= 2) {
            load(13000, "12080");
        } else {
            ob_driver_reload_for_testing();
        }
    }
    void TearDown() override
    {
        unsetenv("OMPBATCH_WAIT_POLL_US");
        unsetenv("OMPBATCH_BUS_KB");
        ob_driver_reload_for_testing();
        FakeDriver::TearDown();
    }
};

// Each injection either completes with every byte right (the library routed around the fault)
// or reports an OMPBATCH_ERR_* status with a message; afterwards nothing is pending, no context
// stays pushed, no allocation is left but a failed free's, and the device works again.
TEST_P(FaultSweep, FailsCleanlyOrIsRoutedAround)
{
    const Fault &f = GetParam();
    // Allocations the buffers make are the baseline; staging is a pool and is freed idle.
    Buffers buffers;
    std::string why;
    ASSERT_EQ(OMPBATCH_OK, Workload(buffers, 1, &why)) << why;
    ob_staging_free_idle();
    fake_cuda_stats base;
    fake().get_stats(&base);
    // A fresh driver load, so that load-time calls can fail too. The old load is released
    // before the fault is armed: its release makes driver calls of its own (test code, which
    // would use the fault up).
    fake().reset();
    fake().deinit();
    ob_kernels_forget_for_testing();
    // Peer access is asked once per process: ask again under the injection.
    ob_peers_forget_for_testing();
    ob_driver_reload_for_testing();
    ASSERT_EQ(0, fake().inject_failure(f.site, f.nth, f.result));
    Tally &tally = SweepTally();
    int status = Workload(buffers, 10 + tally.tried, &why);
    // Idle staging is the pool's, not a leak: it is freed before allocations are counted, still
    // under the injection (so failed frees are exercised too).
    ob_staging_free_idle();
    fake_cuda_stats after;
    fake().get_stats(&after);
    fake().clear_injections();
    tally.tried++;
    if (after.injected_failures == 0) {
        tally.never_called++;
        EXPECT_EQ(OMPBATCH_OK, status) << why;
        return;
    }
    tally.sites_hit.insert(f.site);
    EXPECT_NE(-1000, status) << "wrong bytes after a fault: " << why;
    if (status == OMPBATCH_OK) {
        tally.routed++;
    } else {
        tally.surfaced++;
        EXPECT_LT(status, 0);
        EXPECT_STRNE("OMPBATCH_ERR_UNKNOWN", ompbatch_err_name(status));
        EXPECT_FALSE(why.empty()) << "no message for " << ompbatch_err_name(status);
    }
    // Nothing left behind: no copy pending, no context pushed, no allocation. A failed pop
    // leaves its context pushed whatever the caller does: it must be reported, and the test
    // pops it before going on.
    EXPECT_EQ(0u, after.pending_copies);
    if (std::string(f.site) == "cuCtxPopCurrent") {
        EXPECT_NE(OMPBATCH_OK, status) << "a failed context pop went unreported";
        CUcontext popped;
        while (fake().ctx_stack_depth() > 0)
            ASSERT_EQ(CUDA_SUCCESS, ob_driver_get()->fn.cuCtxPopCurrent(&popped));
    }
    EXPECT_EQ(0, fake().ctx_stack_depth());
    // A failed free leaves its allocation behind (it is logged); anything else must be given
    // back.
    bool is_free = std::string(f.site) == "cuMemFree" || std::string(f.site) == "cuMemFreeHost";
    EXPECT_EQ(base.live_allocations + (is_free ? after.injected_failures : 0),
              after.live_allocations);
    // The same device works again, byte for byte, after a clean reload.
    fake().deinit();
    ob_driver_reload_for_testing();
    why.clear();
    EXPECT_EQ(OMPBATCH_OK, Workload(buffers, 500 + tally.tried, &why)) << why;
    ob_staging_free_idle();
}

// Every allocation the library makes during the workload fails in turn (and every one after
// it): each run completes with every byte right (the library routed around it) or reports an
// error with a message; nothing is left pending or pushed, none of the fake driver's memory is
// left behind, and the workload then runs clean. Blocking waits with bulk copies, so that the
// staged levels use device staging too.
class AllocSweep : public FakeDriver {
protected:
    void SetUp() override
    {
        FakeDriver::SetUp();
        setenv("OMPBATCH_WAIT_POLL_US", "0", 1);
        setenv("OMPBATCH_BUS_KB", "0", 1);
        ob_driver_reload_for_testing();
    }
    void TearDown() override
    {
        ob_alloc_fail_after_for_testing(-1);
        ob_staging_free_idle(); /* the fake's memory goes with the next test's reset */
        unsetenv("OMPBATCH_WAIT_POLL_US");
        unsetenv("OMPBATCH_BUS_KB");
        ob_driver_reload_for_testing();
        FakeDriver::TearDown();
    }
};

TEST_F(AllocSweep, EveryAllocationFailsInTurn)
{
    Buffers buffers;
    std::string why;
    ASSERT_EQ(OMPBATCH_OK, Workload(buffers, 1, &why)) << why;
    ob_staging_free_idle();
    fake_cuda_stats base;
    fake().get_stats(&base);
    size_t surfaced = 0, routed = 0;
    long allowed = 0;
    for (; allowed < 20000; allowed++) {
        why.clear();
        ob_alloc_fail_after_for_testing(allowed);
        int status = Workload(buffers, 2 + static_cast<uint64_t>(allowed), &why);
        long left = ob_alloc_left_for_testing();
        ob_alloc_fail_after_for_testing(-1);
        ob_staging_free_idle();
        fake_cuda_stats after;
        fake().get_stats(&after);
        ASSERT_NE(-1000, status) << "allocation " << allowed << ": " << why;
        EXPECT_EQ(0u, after.pending_copies) << "allocation " << allowed;
        EXPECT_EQ(0, fake().ctx_stack_depth()) << "allocation " << allowed;
        EXPECT_EQ(base.live_allocations, after.live_allocations) << "allocation " << allowed;
        if (status != OMPBATCH_OK) {
            surfaced++;
            EXPECT_LT(status, 0);
            EXPECT_STRNE("OMPBATCH_ERR_UNKNOWN", ompbatch_err_name(status));
            EXPECT_FALSE(why.empty()) << "allocation " << allowed;
        } else if (left == 0) {
            routed++;
        } else {
            break; /* the workload needs fewer allocations than allowed: every one was tried */
        }
    }
    std::printf("allocation sweep: the workload's %ld allocations each failed in turn: %zu "
                "failures reported, %zu routed around\n",
                allowed, surfaced, routed);
    EXPECT_LT(allowed, 20000) << "the sweep did not reach the end of the workload";
    EXPECT_GE(surfaced, 10u);
    why.clear();
    EXPECT_EQ(OMPBATCH_OK, Workload(buffers, 99, &why)) << why;
}

// The library's allocations during a calibration failing in turn (the first 24, where the
// calibration sets up, then every 32nd of its ~650 probes' batches and plans): it falls back
// on the built-in model, says why, and leaves no allocation behind; one that completes is
// the measured model.
TEST_F(AllocSweep, AllocationsOfACalibrationFailInTurn)
{
    setenv("OMPBATCH_CALIBRATE", "force", 1);
    setenv("OMPBATCH_COST_CACHE", "off", 1);
    ob_config_reload();
    ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(0));
    ob_cost_reset_for_testing();
    ob_alloc_fail_after_for_testing(1000000);
    ASSERT_NE(nullptr, std::strstr(ob_cost_model_for(0)->source, "calibrated"));
    const long used = 1000000 - ob_alloc_left_for_testing();
    ob_alloc_fail_after_for_testing(-1);
    ob_staging_free_idle();
    fake_cuda_stats base;
    fake().get_stats(&base);
    size_t fell_back = 0, tried = 0;
    bool own_buffer = false;
    for (long allowed = 0; allowed < used; allowed += allowed < 24 ? 1 : 32) {
        tried++;
        ob_cost_reset_for_testing();
        ob_alloc_fail_after_for_testing(allowed);
        std::string source = ob_cost_model_for(0)->source;
        ob_alloc_fail_after_for_testing(-1);
        ob_staging_free_idle();
        fake_cuda_stats after;
        fake().get_stats(&after);
        EXPECT_EQ(base.live_allocations, after.live_allocations) << "allocation " << allowed;
        EXPECT_EQ(0u, after.pending_copies) << "allocation " << allowed;
        EXPECT_EQ("built-in (H200)", source) << "allocation " << allowed;
        std::string why = ompbatch_last_error();
        EXPECT_TRUE(why.find("memory") != std::string::npos ||
                    why.find("cannot") != std::string::npos)
            << "allocation " << allowed << ": " << why;
        fell_back += source.find("calibrated") == std::string::npos;
        own_buffer |= why.find("no memory for calibration") != std::string::npos;
    }
    std::printf("calibration sweep: %zu of its %ld allocations failed in turn, %zu fell back on "
                "the built-in model\n",
                tried, used, fell_back);
    EXPECT_TRUE(own_buffer) << "the calibration's own buffer never failed";
    ob_cost_reset_for_testing();
    EXPECT_NE(nullptr, std::strstr(ob_cost_model_for(0)->source, "calibrated"));
    EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    ob_cost_reset_for_testing();
    setenv("OMPBATCH_CALIBRATE", "0", 1);
    ob_config_reload();
}

// "cuMemAlloc_Call2_OutOfMemory_Polling": each injection a test of its own.
std::string FaultName(const ::testing::TestParamInfo<Fault> &info)
{
    const Fault &f = info.param;
    std::string result = f.result == CUDA_ERROR_OUT_OF_MEMORY ? "OutOfMemory" : "LaunchFailed";
    return std::string(f.site) + "_Call" + std::to_string(f.nth) + "_" + result + "_" +
           kPassNames[f.pass];
}

INSTANTIATE_TEST_SUITE_P(EveryCallSite, FaultSweep, ::testing::ValuesIn(AllFaults()), FaultName);

} // namespace
