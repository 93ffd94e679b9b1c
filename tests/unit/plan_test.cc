// Planner internals: validation, dependency levels, merging, grouping and steps, on host
// memory (no driver) so every case is exact and fast.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" {
#include "plugin/plan/levels.h"
#include "plugin/plan/plan.h"
#include "plugin/plan/route.h"
}

namespace {

ob_copy host_copy(void *dst, const void *src, size_t bytes, size_t index)
{
    ob_copy c;
    std::memset(&c, 0, sizeof(c));
    c.dst = reinterpret_cast<uintptr_t>(dst);
    c.src = reinterpret_cast<uintptr_t>(src);
    c.bytes = bytes;
    c.index = index;
    c.merged = 1;
    return c;
}

ob_plan_params host_params(size_t max_copies = 4096, int disabled = 0)
{
    ob_plan_params p;
    std::memset(&p, 0, sizeof(p));
    p.form = OMPBATCH_FORM_NONE;
    p.max_copies = max_copies;
    p.disabled = disabled;
    return p;
}

struct Plan {
    ob_plan plan{};
    ~Plan() { ob_plan_free(&plan); }
};

TEST(PlanLevels, IndependentCopiesShareLevelZero)
{
    std::vector<char> a(64), b(64);
    std::vector<ob_copy> copies = {host_copy(&b[0], &a[0], 16, 0),
                                   host_copy(&b[16], &a[16], 16, 1),
                                   host_copy(&b[32], &a[0], 16, 2)};  // reads overlap: fine
    unsigned levels = 0;
    ASSERT_EQ(OMPBATCH_OK, ob_plan_levels(copies.data(), copies.size(), &levels));
    EXPECT_EQ(1u, levels);
    for (const ob_copy &c : copies)
        EXPECT_EQ(0u, c.level);
}

TEST(PlanLevels, WriteAfterWriteReadAfterWriteAndWriteAfterReadEachAddALevel)
{
    std::vector<char> a(64), b(64), c(64);
    std::vector<ob_copy> copies = {
        host_copy(&b[0], &a[0], 32, 0),   // writes b[0,32)
        host_copy(&c[0], &b[8], 8, 1),    // reads b[8,16): after copy 0 (RAW)
        host_copy(&b[8], &a[40], 8, 2),   // writes b[8,16): after 0 (WAW) and 1 (WAR)
        host_copy(&c[40], &a[0], 8, 3),   // independent
    };
    unsigned levels = 0;
    ASSERT_EQ(OMPBATCH_OK, ob_plan_levels(copies.data(), copies.size(), &levels));
    EXPECT_EQ(3u, levels);
    EXPECT_EQ(0u, copies[0].level);
    EXPECT_EQ(1u, copies[1].level);
    EXPECT_EQ(2u, copies[2].level);
    EXPECT_EQ(0u, copies[3].level);
}

TEST(PlanLevels, AdjacentButNotOverlappingRangesDoNotConflict)
{
    std::vector<char> a(64), b(64);
    std::vector<ob_copy> copies = {host_copy(&b[0], &a[0], 16, 0),
                                   host_copy(&a[16], &b[16], 16, 1)};  // b[16..] vs b[0,16)
    unsigned levels = 0;
    ASSERT_EQ(OMPBATCH_OK, ob_plan_levels(copies.data(), copies.size(), &levels));
    EXPECT_EQ(1u, levels);
}

TEST(PlanLevels, LongChainGetsOneLevelPerLink)
{
    std::vector<char> buf(1024);
    std::vector<ob_copy> copies;
    for (size_t i = 0; i < 10; i++)  // buf[i*8] -> buf[(i+1)*8]: each reads the previous write
        copies.push_back(host_copy(&buf[(i + 1) * 8], &buf[i * 8], 8, i));
    unsigned levels = 0;
    ASSERT_EQ(OMPBATCH_OK, ob_plan_levels(copies.data(), copies.size(), &levels));
    EXPECT_EQ(10u, levels);
    for (size_t i = 0; i < copies.size(); i++)
        EXPECT_EQ(i, copies[i].level);
}

// The definition, pair by pair: copy j is one level after every earlier copy it conflicts
// with (a destination overlapping the other's source or destination).
std::vector<unsigned> reference_levels(const std::vector<ob_copy> &copies, unsigned *levels)
{
    auto overlap = [](uintptr_t a, size_t n, uintptr_t b, size_t m) {
        return a < b + m && b < a + n;
    };
    std::vector<unsigned> level(copies.size(), 0);
    *levels = copies.empty() ? 0 : 1;
    for (size_t j = 0; j < copies.size(); j++) {
        const ob_copy &y = copies[j];
        for (size_t i = 0; i < j; i++) {
            const ob_copy &x = copies[i];
            if (overlap(x.dst, x.bytes, y.dst, y.bytes) || overlap(x.dst, x.bytes, y.src, y.bytes) ||
                overlap(x.src, x.bytes, y.dst, y.bytes))
                level[j] = std::max(level[j], level[i] + 1);
        }
        *levels = std::max(*levels, level[j] + 1);
    }
    return level;
}

// Random batches in a small arena (dense and sparse overlap, ranges sharing ends, copies in
// address order and not): each way of finding the levels gives exactly the pairwise levels.
TEST(PlanLevels, EveryWayMatchesThePairwiseDefinition)
{
    uint64_t state = 0x5EED;
    auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    const uintptr_t base = 0x100000;
    for (int round = 0; round < 3000; round++) {
        size_t n = 1 + next() % (round % 10 == 0 ? 400 : 40);
        size_t arena = 16 + next() % (round % 3 == 0 ? 64 : 4096);
        size_t longest = 1 + next() % std::min<size_t>(64, arena / 4);
        bool ordered = round % 4 == 0;
        std::vector<ob_copy> copies;
        for (size_t i = 0; i < n; i++) {
            size_t bytes = 1 + next() % longest, d, s;
            do {
                d = ordered ? (i * bytes) % arena : next() % arena;
                s = next() % arena;
            } while (d < s + bytes && s < d + bytes);
            ob_copy c = host_copy(nullptr, nullptr, bytes, i);
            c.dst = base + d;
            c.src = base + s;
            copies.push_back(c);
        }
        unsigned want_levels = 0;
        std::vector<unsigned> want = reference_levels(copies, &want_levels);
        for (ob_levels_way way : {OB_LEVELS_AUTO, OB_LEVELS_PAIRS, OB_LEVELS_TREES}) {
            std::vector<ob_copy> got = copies;
            unsigned levels = 0;
            ASSERT_EQ(OMPBATCH_OK, ob_levels_compute_way(got.data(), got.size(), &levels, way));
            ASSERT_EQ(want_levels, levels) << "round " << round << ", way " << way;
            for (size_t i = 0; i < n; i++)
                ASSERT_EQ(want[i], got[i].level)
                    << "round " << round << ", way " << way << ", copy " << i;
        }
    }
}

TEST(PlanBuild, SkipsZeroByteCopiesAndCountsThem)
{
    std::vector<char> a(64), b(64);
    std::vector<ob_copy> copies = {host_copy(&b[0], &a[0], 8, 0), host_copy(nullptr, nullptr, 0, 1),
                                   host_copy(&b[32], &a[32], 8, 2)};
    Plan p;
    ob_plan_params params = host_params();
    ASSERT_EQ(OMPBATCH_OK, ob_plan_build(&p.plan, copies.data(), copies.size(), &params));
    EXPECT_EQ(3u, p.plan.added);
    EXPECT_EQ(1u, p.plan.zero_copies);
    EXPECT_EQ(2u, p.plan.count);
    EXPECT_EQ(16u, p.plan.bytes);
}

TEST(PlanBuild, MergesNeighboursContiguousOnBothSidesInAnyAddOrder)
{
    std::vector<char> a(256), b(256);
    // Three contiguous pieces added out of order, plus one contiguous only on the source side.
    std::vector<ob_copy> copies = {host_copy(&b[64], &a[64], 32, 0),
                                   host_copy(&b[0], &a[0], 32, 1),
                                   host_copy(&b[32], &a[32], 32, 2),
                                   host_copy(&b[200], &a[96], 16, 3)};
    Plan p;
    ob_plan_params params = host_params();
    ASSERT_EQ(OMPBATCH_OK, ob_plan_build(&p.plan, copies.data(), copies.size(), &params));
    ASSERT_EQ(2u, p.plan.count);
    EXPECT_EQ(2u, p.plan.merged_away);
    const ob_copy &merged = p.plan.copies[0];
    EXPECT_EQ(reinterpret_cast<uintptr_t>(&b[0]), merged.dst);
    EXPECT_EQ(96u, merged.bytes);
    EXPECT_EQ(3u, merged.merged);
    EXPECT_EQ(0u, merged.index);  // the smallest index it covers names it in errors
    EXPECT_EQ(16u, p.plan.copies[1].bytes);
}

TEST(PlanBuild, DoesNotMergeAcrossDependencyLevels)
{
    std::vector<char> a(64), b(64), c(64);
    // Copy 2 continues copy 0 on both sides, but reads a[16,32) that copy 1 writes first.
    std::vector<ob_copy> copies = {host_copy(&b[0], &a[0], 16, 0),
                                   host_copy(&a[16], &c[0], 8, 1),
                                   host_copy(&b[16], &a[16], 16, 2)};
    Plan p;
    ob_plan_params params = host_params();
    ASSERT_EQ(OMPBATCH_OK, ob_plan_build(&p.plan, copies.data(), copies.size(), &params));
    EXPECT_EQ(2u, p.plan.levels);
    EXPECT_EQ(3u, p.plan.count);
    EXPECT_EQ(0u, p.plan.merged_away);
    ASSERT_EQ(2u, p.plan.step_count);
    EXPECT_EQ(0u, p.plan.steps[0].level);
    EXPECT_EQ(2u, p.plan.steps[0].end - p.plan.steps[0].begin);
    EXPECT_EQ(1u, p.plan.steps[1].level);
    EXPECT_EQ(2u, p.plan.copies[p.plan.steps[1].begin].index);
}

TEST(PlanBuild, DisabledPlansNeitherMergeNorBatch)
{
    std::vector<char> a(64), b(64);
    std::vector<ob_copy> copies = {host_copy(&b[0], &a[0], 16, 0),
                                   host_copy(&b[16], &a[16], 16, 1)};
    Plan p;
    ob_plan_params params = host_params(4096, 1);
    ASSERT_EQ(OMPBATCH_OK, ob_plan_build(&p.plan, copies.data(), copies.size(), &params));
    EXPECT_EQ(2u, p.plan.count);
    EXPECT_EQ(0u, p.plan.merged_away);
}

TEST(PlanBuild, RejectsACopyWhoseSourceAndDestinationOverlapNamingIt)
{
    std::vector<char> a(64), b(64);
    std::vector<ob_copy> copies = {host_copy(&b[0], &a[0], 8, 0), host_copy(&a[4], &a[0], 8, 1)};
    Plan p;
    ob_plan_params params = host_params();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ob_plan_build(&p.plan, copies.data(), copies.size(), &params));
    EXPECT_NE(nullptr, std::strstr(ompbatch_last_error(), "copy 1:"));
    EXPECT_NE(nullptr, std::strstr(ompbatch_last_error(), "overlap"));
    EXPECT_EQ(0u, p.plan.count);
}

TEST(PlanDescribe, NamesLevelsStepsAndMerges)
{
    std::vector<char> a(64), b(64);
    std::vector<ob_copy> copies = {host_copy(&b[0], &a[0], 16, 0),
                                   host_copy(&b[16], &a[16], 16, 1)};
    Plan p;
    ob_plan_params params = host_params();
    ASSERT_EQ(OMPBATCH_OK, ob_plan_build(&p.plan, copies.data(), copies.size(), &params));
    char text[2048];
    size_t length = ob_plan_describe(&p.plan, text, sizeof(text));
    EXPECT_EQ(std::strlen(text), length);
    EXPECT_NE(nullptr, std::strstr(text, "2 copies added"));
    EXPECT_NE(nullptr, std::strstr(text, "1 merged into neighbours"));
    EXPECT_NE(nullptr, std::strstr(text, "host memcpy"));
    EXPECT_NE(nullptr, std::strstr(text, "2 merged"));
    // Truncation still reports the full length and terminates the buffer.
    char tiny[8];
    EXPECT_EQ(length, ob_plan_describe(&p.plan, tiny, sizeof(tiny)));
    EXPECT_EQ('\0', tiny[sizeof(tiny) - 1]);
}

}  // namespace
