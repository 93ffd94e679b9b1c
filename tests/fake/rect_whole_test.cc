// Rectangles of many small runs added as one copy through the fake driver: each side's walk,
// one kernel launch per rectangle on the staged path in every direction and memory kind, the
// bytes exact against the element-by-element reference with everything outside the rectangle
// untouched, and the fallbacks (direct strategy, overlapping spans, no kernel, a failed
// launch, another GPU) sending the runs one by one.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/support/fake_fixture.h"
#include "tests/support/rect_reference.h"

extern "C" {
#include "plugin/api/cost_models.h"
#include "plugin/core/config.h"
#include "plugin/cuda/staging.h"
#include "plugin/core/workers.h"
#include "plugin/cuda/kernel_module.h"
#include "plugin/plan/cost.h"
#include "plugin/plan/walk.h"
}

namespace {

class RectWhole : public FakeDriver {
protected:
    void SetUp() override
    {
        unsetenv("OMPBATCH_STRATEGY");
        unsetenv("OMPBATCH_BUS_KB");
        setenv("OMPBATCH_HOST_BUSY", "0", 1); // tests run beside each other
        ob_config_reload();
        load();
        ob_kernels_forget_for_testing();
        ob_cost_reset_for_testing();
        ob_staging_free_idle();
    }
    void TearDown() override
    {
        unsetenv("OMPBATCH_BUS_KB");
        ob_config_reload();
        FakeDriver::TearDown();
    }
};

// An n x n x n array of doubles and one of its faces, innermost dimension last.
struct Face {
    const char *name;
    size_t volume[3], offset[3];
};

RectShape face_shape(const Face &f, size_t n)
{
    RectShape r;
    r.element = sizeof(double);
    r.dims = 3;
    for (int d = 0; d < 3; d++) {
        r.volume.push_back(f.volume[d]);
        r.src_off.push_back(f.offset[d]);
        r.src_dim.push_back(n);
        r.dst_off.push_back(0);
        r.dst_dim.push_back(f.volume[d]);
    }
    return r;
}

int add(ompbatch_batch *b, void *dst, int dst_dev, const void *src, int src_dev,
        const RectShape &r, uint64_t map_type = 0)
{
    return ompbatch_batch_add_rect(b, dst, dst_dev, src, src_dev, r.element, r.dims,
                                   r.volume.data(), r.dst_off.data(), r.src_off.data(),
                                   r.dst_dim.data(), r.src_dim.data(), map_type);
}

// dst's bytes once r is copied into it from src.
std::vector<unsigned char> expected(const RectShape &r, const Buffer &dst,
                                    const unsigned char *src)
{
    std::vector<unsigned char> want(dst.ptr, dst.ptr + dst.bytes);
    rect_reference(r, want.data(), src);
    return want;
}

RectShape swapped(const RectShape &r)
{
    RectShape s = r;
    std::swap(s.dst_off, s.src_off);
    std::swap(s.dst_dim, s.src_dim);
    return s;
}

// Submits and waits, failing the test with the library's message.
void run(Batch &batch)
{
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b)) << ompbatch_last_error();
}

} // namespace

TEST(RectWalk, FoldsDimensionsThatContinueEachOther)
{
    // A face [0:4][0:5][2:1] of a 4 x 5 x 6 array of 8-byte elements: 20 runs of one
    // element, 48 bytes apart, the two walked dimensions one of 20 (5 * 48 = 240 = a row).
    uint64_t count[3] = {4, 5, 1}, stride[3] = {240, 48, 8};
    ob_walk w;
    ob_walk_build(8, 3, count, stride, &w);
    EXPECT_EQ(8u, w.run);
    ASSERT_EQ(1u, w.dims);
    EXPECT_EQ(20u, w.count[0]);
    EXPECT_EQ(48u, w.stride[0]);
    // The compact side of the same face is contiguous.
    uint64_t compact[3] = {40, 8, 8};
    ob_walk_build(8, 3, count, compact, &w);
    EXPECT_EQ(0u, w.dims);
    EXPECT_EQ(160u, w.run);
    // A sub-block [0:2][1:3][0:6]: runs of whole rows of 48 bytes, 3 rows apart 48, then 240.
    uint64_t block[3] = {2, 3, 6};
    ob_walk_build(8, 3, block, stride, &w);
    EXPECT_EQ(144u, w.run); // three consecutive rows are one run
    ASSERT_EQ(1u, w.dims);
    EXPECT_EQ(2u, w.count[0]);
    EXPECT_EQ(240u, w.stride[0]);
    EXPECT_EQ(240u + 5 * 8, ob_walk_at(&w, 144 + 5 * 8));
}

// Host copies along two walks against the reference, on random geometries and random
// compact ranges (the pack threads copy parts of a rectangle).
TEST(RectWalk, CopiesAnyRangeAsTheReference)
{
    TestRng rng(test_seed() ^ 0x3a1c);
    for (int trial = 0; trial < 300; trial++) {
        RectShape r = random_rect(rng, 10);
        std::vector<uint64_t> count(r.dims), ds(r.dims), ss(r.dims);
        uint64_t de = r.element, se = r.element, first_d = 0, first_s = 0, bytes = r.element;
        for (int d = r.dims - 1; d >= 0; d--) {
            count[d] = r.volume[d];
            ds[d] = de;
            ss[d] = se;
            first_d += r.dst_off[d] * de;
            first_s += r.src_off[d] * se;
            de *= r.dst_dim[d];
            se *= r.src_dim[d];
            bytes *= r.volume[d];
        }
        ob_rect rect;
        ob_walk_build(r.element, r.dims, count.data(), ds.data(), &rect.dst);
        ob_walk_build(r.element, r.dims, count.data(), ss.data(), &rect.src);
        ob_rect_finish(&rect, bytes, 1);
        auto src = random_bytes(r.src_bytes(), trial);
        auto want = random_bytes(r.dst_bytes(), 1000 + trial), got = want;
        rect_reference(r, want.data(), src.data());
        // In three parts at random cuts: each part must continue where the last stopped.
        uint64_t a = rng() % (bytes + 1), b = rng() % (bytes + 1);
        if (a > b)
            std::swap(a, b);
        auto plain = [](void *d, const void *s, size_t n) { std::memcpy(d, s, n); };
        for (auto part : {std::make_pair(uint64_t{0}, a), std::make_pair(a, b),
                          std::make_pair(b, bytes)})
            ob_walk_copy(got.data() + first_d, &rect.dst, src.data() + first_s, &rect.src,
                         part.first, part.second, plain);
        ASSERT_EQ(want, got) << "trial " << trial << ", cuts at " << a << " and " << b;
        EXPECT_LE(rect.dst_span, r.dst_bytes() - first_d);
        EXPECT_LE(rect.src_span, r.src_bytes() - first_s);
    }
}

// The faces of a 3-D array between the device and a compact host face, both ways, for each
// host memory kind, and device to device: one copy, one launch, exact bytes, gaps untouched.
// A face packed from pageable memory is scattered from pinned staging over the bus, or after a
// bulk copy into device staging with OMPBATCH_BUS_KB=0.
TEST_F(RectWhole, FacesAreOneLaunchInEveryDirectionAndMemoryKind)
{
    const size_t n = 72; // the y face's 72 runs: enough to go whole
    const Face faces[] = {{"x", {n, n, 1}, {0, 0, 5}}, {"y", {n, 1, n}, {0, 7, 0}},
                          {"pencil", {n, 3, 2}, {0, 60, 61}}};
    Buffer block(DEVICE, n * n * n * 8), block2(DEVICE, n * n * n * 8);
    for (int bus : {1, 0})
    for (const Face &f : faces)
        for (Kind kind : {PAGEABLE, PINNED, MANAGED}) {
            SCOPED_TRACE(std::string("face ") + f.name + ", host kind " + std::to_string(kind) +
                         (bus ? ", over the bus" : ", bulk copy"));
            setenv("OMPBATCH_BUS_KB", bus ? "1024" : "0", 1);
            ob_config_reload();
            RectShape down = face_shape(f, n), up = swapped(down);
            Buffer host(kind, down.dst_bytes());
            block.fill(kind * 7 + 1);
            host.fill(kind * 7 + 2);
            // Device to host.
            std::vector<unsigned char> want = expected(down, host, block.ptr);
            {
                Batch batch;
                ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, down,
                                           OMPBATCH_MAP_FROM))
                    << ompbatch_last_error();
                run(batch);
                ompbatch_stats s = batch.stats();
                EXPECT_EQ(1u, s.copies_added);
                EXPECT_EQ(1u, s.copies_planned);
                EXPECT_EQ(1u, s.kernel_launches);
                EXPECT_EQ(1u, s.staged_copies);
                EXPECT_EQ(host.bytes, s.staged_bytes);
                EXPECT_LE(s.driver_calls, 2u);
            }
            ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes)) << "device to host";
            // Host to device, into the poisoned array.
            host.fill(kind * 7 + 3);
            block.fill(kind * 7 + 4);
            std::vector<unsigned char> want_block = expected(up, block, host.ptr);
            {
                Batch batch;
                ASSERT_EQ(OMPBATCH_OK, add(batch.b, block.ptr, 0, host.ptr, H, up,
                                           OMPBATCH_MAP_TO));
                run(batch);
                EXPECT_EQ(1u, batch.stats().kernel_launches);
                EXPECT_EQ(1u, batch.stats().staged_copies);
                // Packed faces: the bulk copy, unless over the bus.
                EXPECT_EQ(kind == PAGEABLE && !bus ? 1u : 0u, batch.stats().driver_calls);
            }
            ASSERT_EQ(0, std::memcmp(block.ptr, want_block.data(), block.bytes))
                << "host to device";
        }
    // Device to device: the face of one array into the same face of another.
    for (const Face &f : faces) {
        RectShape same = face_shape(f, n);
        same.dst_dim = same.src_dim;
        same.dst_off = same.src_off;
        block.fill(11);
        block2.fill(12);
        std::vector<unsigned char> want = expected(same, block2, block.ptr);
        Batch batch;
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, block2.ptr, 0, block.ptr, 0, same));
        run(batch);
        EXPECT_EQ(1u, batch.stats().kernel_launches);
        ASSERT_EQ(0, std::memcmp(block2.ptr, want.data(), block2.bytes)) << f.name;
    }
}

// Random rectangles of 64 runs and more, several per batch among ordinary copies, in random
// directions, some reading what an earlier copy of the batch wrote: each must see the bytes
// as if the batch ran in the order added.
TEST_F(RectWhole, RandomBatchesOfRectanglesAndCopiesAreExact)
{
    TestRng rng(test_seed() ^ 0x77e1);
    int whole = 0;
    for (int trial = 0; trial < 40; trial++) {
        SCOPED_TRACE("trial " + std::to_string(trial));
        Kind kind = static_cast<Kind>(std::vector<int>{PAGEABLE, PINNED, MANAGED}[rng() % 3]);
        RectShape r;
        do
            r = random_rect(rng, 14);
        while (r.volume.size() < 2 || r.volume[0] * r.volume[1] < 64);
        Buffer hsrc(kind, r.src_bytes()), dev(DEVICE, r.dst_bytes()),
            hback(kind, r.src_bytes()), extra_h(PAGEABLE, 4096), extra_d(DEVICE, 4096);
        hsrc.fill(trial * 5 + 1);
        dev.fill(trial * 5 + 2);
        hback.fill(trial * 5 + 3);
        extra_h.fill(trial * 5 + 4);
        std::vector<unsigned char> want_dev = expected(r, dev, hsrc.ptr);
        RectShape back = swapped(r);
        std::vector<unsigned char> want_back(hback.ptr, hback.ptr + hback.bytes);
        rect_reference(back, want_back.data(), want_dev.data());
        Batch batch;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, extra_d.ptr, 0, extra_h.ptr, H,
                                                  4096, 0));
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, dev.ptr, 0, hsrc.ptr, H, r)) << ompbatch_last_error();
        // Reads what the rectangle above writes: a later level.
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, hback.ptr, H, dev.ptr, 0, back))
            << ompbatch_last_error();
        run(batch);
        whole += batch.stats().copies_added == 3; // else one went run by run
        ASSERT_EQ(0, std::memcmp(dev.ptr, want_dev.data(), dev.bytes)) << "kind " << kind;
        ASSERT_EQ(0, std::memcmp(hback.ptr, want_back.data(), hback.bytes)) << "kind " << kind;
        ASSERT_EQ(0, std::memcmp(extra_d.ptr, extra_h.ptr, 4096));
    }
    EXPECT_GE(whole, 5) << "too few trials had both rectangles go whole to test that path";
}

// What cannot go whole goes run by run, with the same bytes.
TEST_F(RectWhole, TheDirectStrategyAndOverlappingSpansSendTheRuns)
{
    const size_t n = 16;
    RectShape x = face_shape({"x", {n, n, 1}, {0, 0, 3}}, n);
    Buffer block(DEVICE, n * n * n * 8), host(PAGEABLE, x.dst_bytes());
    block.fill(1);
    host.fill(2);
    std::vector<unsigned char> want = expected(x, host, block.ptr);
    ompbatch_batch_options direct = {};
    direct.struct_size = sizeof(direct);
    direct.strategy = OMPBATCH_STRATEGY_DIRECT;
    {
        Batch batch(0, nullptr, &direct);
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, x));
        run(batch);
        EXPECT_EQ(1u, batch.stats().copies_added);
        EXPECT_EQ(n * n, batch.stats().copies_planned);
        EXPECT_EQ(0u, batch.stats().kernel_launches);
    }
    ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes));
    // Column 3 into column 4 of the same array: the spans overlap, the runs do not.
    RectShape shift = x;
    shift.dst_dim = shift.src_dim;
    shift.dst_off = {0, 0, 4};
    block.fill(3);
    std::vector<unsigned char> want_block = expected(shift, block, block.ptr);
    {
        Batch batch;
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, block.ptr, 0, block.ptr, 0, shift));
        run(batch);
        EXPECT_EQ(n * n, batch.stats().copies_planned);
    }
    ASSERT_EQ(0, std::memcmp(block.ptr, want_block.data(), block.bytes));
}

TEST_F(RectWhole, WithoutTheRectangleKernelTheRunsGoOneByOne)
{
    const size_t n = 16;
    RectShape x = face_shape({"x", {n, n, 1}, {0, 0, 9}}, n);
    Buffer block(DEVICE, n * n * n * 8), host(PAGEABLE, x.dst_bytes());
    block.fill(4);
    host.fill(5);
    std::vector<unsigned char> want = expected(x, host, block.ptr);
    // The module loads, the first function is found, the rectangle's is not.
    ASSERT_EQ(0, fake().inject_failure("cuModuleGetFunction", 2, CUDA_ERROR_NOT_FOUND));
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, x));
    run(batch);
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(0u, s.kernel_launches);
    EXPECT_EQ(1u, s.staging_refused);
    EXPECT_EQ(n * n, s.driver_calls);
    ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes));
}

TEST_F(RectWhole, AFailedLaunchNamesTheRectangleAndLeavesTheHostUntouched)
{
    const size_t n = 16;
    RectShape x = face_shape({"x", {n, n, 1}, {0, 0, 2}}, n);
    Buffer block(DEVICE, n * n * n * 8), host(PAGEABLE, x.dst_bytes());
    block.fill(6);
    host.fill(7);
    std::vector<unsigned char> before(host.ptr, host.ptr + host.bytes);
    ASSERT_EQ(0, fake().inject_failure("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, x));
    EXPECT_NE(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("rectangle kernel")) << ompbatch_last_error();
    ompbatch_batch_wait(batch.b);
    EXPECT_EQ(0, std::memcmp(host.ptr, before.data(), host.bytes))
        << "bytes of a failed gather reached the destination";
    // The batch recovers: the same rectangle again is exact.
    std::vector<unsigned char> want = expected(x, host, block.ptr);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, x));
    run(batch);
    ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes));
}

fake_cuda_stats fake_stats()
{
    fake_cuda_stats s;
    fake().get_stats(&s);
    return s;
}

// A rectangle the kernel gathers for a pageable destination is unpacked chunk by chunk as the
// chunks say they landed: the fake runs half of the remaining chunks per query, in a scrambled
// order, so the wait sees the launch part done several times and must unpack exactly the
// chunks that landed, each once, into the right places.
TEST_F(RectWhole, AGatheredRectangleIsUnpackedAsItsChunksLand)
{
    TestRng rng(test_seed() ^ 0x1a4d);
    const size_t n = 96;
    Buffer block(DEVICE, n * n * n * 8);
    int partial = 0;
    for (int trial = 0; trial < 12; trial++) {
        SCOPED_TRACE("trial " + std::to_string(trial));
        Face f = trial % 3 == 0   ? Face{"x", {n, n, 1}, {0, 0, rng() % n}}
                 : trial % 3 == 1 ? Face{"y", {n, 1, n}, {0, rng() % n, 0}}
                                  : Face{"pencils", {n, 2, 5}, {0, rng() % (n - 2), rng() % (n - 5)}};
        RectShape down = face_shape(f, n);
        Buffer host(PAGEABLE, down.dst_bytes());
        block.fill(trial * 3 + 100);
        host.fill(trial * 3 + 101);
        std::vector<unsigned char> want = expected(down, host, block.ptr);
        fake().reset();
        Batch batch;
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, down, OMPBATCH_MAP_FROM))
            << ompbatch_last_error();
        run(batch);
        EXPECT_EQ(1u, batch.stats().kernel_launches);
        fake_cuda_stats fs = fake_stats();
        EXPECT_GT(fs.rect_words_set, 0u) << "the launch's chunks set no words";
        partial += fs.rect_partial_runs > 0;
        ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes)) << f.name;
    }
    EXPECT_EQ(12, partial) << "every wait should have seen its launch half done";
}

// A launch whose chunks never say they landed (a kernel that does not signal) still ends: the
// wait sees the stream done and unpacks everything then.
TEST_F(RectWhole, ChunksThatNeverSayTheyLandedAreUnpackedWhenTheStreamIsDone)
{
    const size_t n = 40;
    RectShape x = face_shape({"x", {n, n, 1}, {0, 0, 7}}, n);
    Buffer block(DEVICE, n * n * n * 8), host(PAGEABLE, x.dst_bytes());
    block.fill(31);
    host.fill(32);
    std::vector<unsigned char> want = expected(x, host, block.ptr);
    fake().set_rect_words(0);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, x));
    run(batch);
    EXPECT_EQ(0u, fake_stats().rect_words_set);
    ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes));
}

// A stream that fails while the wait unpacks as chunks land: the wait reports the query's
// failure, nothing hangs, and the batch works again afterwards.
TEST_F(RectWhole, AStreamFailingWhileChunksLandIsReportedAndTheBatchRecovers)
{
    const size_t n = 64;
    RectShape x = face_shape({"x", {n, n, 1}, {0, 0, 11}}, n);
    Buffer block(DEVICE, n * n * n * 8), host(PAGEABLE, x.dst_bytes());
    block.fill(33);
    host.fill(34);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, x));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    // The first query runs half of the chunks; the second fails.
    ASSERT_EQ(0, fake().inject_failure("cuStreamQuery", 2, CUDA_ERROR_ILLEGAL_ADDRESS));
    EXPECT_EQ(OMPBATCH_ERR_DRIVER, ompbatch_batch_wait(batch.b));
    EXPECT_TRUE(message_has("cuStreamQuery")) << ompbatch_last_error();
    EXPECT_TRUE(message_has("CUDA_ERROR_ILLEGAL_ADDRESS")) << ompbatch_last_error();
    block.fill(35);
    std::vector<unsigned char> want = expected(x, host, block.ptr);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, x));
    run(batch);
    ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes));
}

// A rectangle of more chunks than the launch has blocks: each block lands several chunks in
// turn, every chunk says so once, and the bytes are exact.
TEST_F(RectWhole, ALargeRectangleLandsChunkByChunkToo)
{
    // 2-byte elements in runs of 260: units of 2 bytes, 65 536 x 260 of them.
    RectShape r;
    r.element = 2;
    r.dims = 2;
    r.volume = {65536, 260};
    r.src_dim = {65536, 261};
    r.src_off = {0, 1};
    r.dst_dim = {65536, 260};
    r.dst_off = {0, 0};
    Buffer dev(DEVICE, r.src_bytes()), host(PAGEABLE, r.dst_bytes());
    dev.fill(36);
    host.fill(37);
    std::vector<unsigned char> want = expected(r, host, dev.ptr);
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, dev.ptr, 0, r)) << ompbatch_last_error();
    run(batch);
    EXPECT_EQ(1u, batch.stats().kernel_launches);
    EXPECT_EQ(65536u * 260 / 256, fake_stats().rect_words_set);
    ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes));
}

// A refill with other rectangles at the same addresses plans again: the plan of the first
// never copies the second's geometry.
TEST_F(RectWhole, RefillsWithOtherGeometriesAreExact)
{
    const size_t n = 16;
    Buffer block(DEVICE, n * n * n * 8), host(PINNED, n * n * 8);
    block.fill(8);
    Batch batch;
    for (size_t k = 0; k < 6; k++) {
        Face f = k % 2 ? Face{"x", {n, n, 1}, {0, 0, k}} : Face{"y", {n, 1, n}, {0, k, 0}};
        RectShape r = face_shape(f, n);
        host.fill(20 + k);
        std::vector<unsigned char> want = expected(r, host, block.ptr);
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, r));
        run(batch);
        EXPECT_EQ(0u, batch.stats().plan_reused);
        ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes)) << "refill " << k;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    }
}

// Writes pattern over the stack below the caller's frame, where the library's frames will
// lie: a rectangle the library builds there then sits on different leftovers each time.
__attribute__((noinline)) void scribble_stack(unsigned char pattern)
{
    volatile unsigned char junk[32768];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(pattern + i);
}

// A refill with the same rectangle reuses its plan, whatever the stack held when it was added
// (the rectangles are compared by their fields, not their bytes); one with the same first
// bytes and size but another geometry does not.
TEST_F(RectWhole, TheSameRectangleAgainReusesItsPlanAnotherGeometryDoesNot)
{
    const size_t n = 16;
    Buffer block(DEVICE, n * n * n * 8), host(PINNED, n * n * 8);
    RectShape x = face_shape({"x", {n, n, 1}, {0, 0, 0}}, n);
    // The same first bytes and size, 128 runs of two elements instead of 256 of one.
    RectShape y = face_shape({"pairs", {n / 2, n, 2}, {0, 0, 0}}, n);
    Batch batch;
    const RectShape *shapes[] = {&x, &x, &x, &y, &y, &x};
    const uint64_t reused[] = {0, 1, 1, 0, 1, 0};
    for (size_t k = 0; k < 6; k++) {
        block.fill(40 + k);
        host.fill(50 + k);
        std::vector<unsigned char> want = expected(*shapes[k], host, block.ptr);
        scribble_stack((unsigned char)(0x35 * (k + 1)));
        ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, block.ptr, 0, *shapes[k]));
        run(batch);
        EXPECT_EQ(reused[k], batch.stats().plan_reused) << "fill " << k;
        ASSERT_EQ(0, std::memcmp(host.ptr, want.data(), host.bytes)) << "fill " << k;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    }
}

// Errors name the rectangle: a side running past its allocation is checked on its span.
TEST_F(RectWhole, ASideRunningPastItsAllocationIsRefused)
{
    const size_t n = 16;
    RectShape x = face_shape({"x", {n, n, 1}, {0, 0, 2}}, n);
    Buffer small(DEVICE, n * n * n * 8 - 8 * n), host(PAGEABLE, x.dst_bytes());
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, add(batch.b, host.ptr, H, small.ptr, 0, x));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("runs past the end of its allocation")) << ompbatch_last_error();
    EXPECT_TRUE(message_has("copy 0")) << ompbatch_last_error();
}
