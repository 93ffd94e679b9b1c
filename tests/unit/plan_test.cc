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
#include "plugin/plan/plan_cache.h"
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

// ---- the plan cache -----------------------------------------------------------------------

namespace {

std::vector<ob_copy_key> keys_of(size_t count, uintptr_t base)
{
    std::vector<ob_copy_key> keys(count);
    std::memset(keys.data(), 0, count * sizeof(ob_copy_key));
    for (size_t i = 0; i < count; i++) {
        keys[i].dst = base + 4096 * i;
        keys[i].src = base + 4096 * i + (1u << 30);
        keys[i].bytes = 100 + i;
    }
    return keys;
}

// Puts a valid plan of these keys into the slot the cache picks, as the batch does.
ob_cached_plan *keep(ob_plan_cache *cache, const std::vector<ob_copy_key> &keys,
                     size_t plan_capacity = 0)
{
    ob_cached_plan *slot = ob_plan_cache_victim(cache, keys.size());
    size_t bytes = keys.size() * sizeof(ob_copy_key);
    slot->keys = static_cast<ob_copy_key *>(std::realloc(slot->keys, bytes));
    std::memcpy(slot->keys, keys.data(), bytes);
    slot->count = slot->capacity = keys.size();
    size_t want = plan_capacity > 0 ? plan_capacity : keys.size();
    if (slot->plan.capacity < want) {
        slot->plan.copies = static_cast<ob_copy *>(std::realloc(slot->plan.copies,
                                                                 want * sizeof(ob_copy)));
        slot->plan.capacity = want;
    }
    slot->hash = ob_plan_keys_hash(keys.data(), keys.size());
    slot->config = 0;
    slot->valid = 1;
    ob_plan_cache_placed(cache, slot);
    return slot;
}

ob_cached_plan *find(ob_plan_cache *cache, const std::vector<ob_copy_key> &keys)
{
    return ob_plan_cache_find(cache, keys.data(), keys.size(),
                              ob_plan_keys_hash(keys.data(), keys.size()), 0);
}

} // namespace

// Hashes tell different sets apart (the sampled ones of large sets too) and are never 0.
TEST(PlanCache, HashesDifferForDifferentKeysAndSampleLargeSets)
{
    auto a = keys_of(16, 1 << 20), b = keys_of(16, 1 << 20);
    b[7].bytes++;
    EXPECT_NE(ob_plan_keys_hash(a.data(), 16), ob_plan_keys_hash(b.data(), 16));
    EXPECT_NE(ob_plan_keys_hash(a.data(), 16), ob_plan_keys_hash(a.data(), 15));
    EXPECT_NE(0u, ob_plan_keys_hash(nullptr, 0));
    // A large set's first and last 64 keys and every 64th between are hashed, not the others:
    // a difference elsewhere is found by comparing the keys.
    auto big = keys_of(5000, 1 << 20), near = big, far = big;
    near[100].bytes++;
    far[128].bytes++; // 128 = 2 x 64: sampled
    EXPECT_EQ(ob_plan_keys_hash(big.data(), big.size()),
              ob_plan_keys_hash(near.data(), near.size()));
    EXPECT_NE(ob_plan_keys_hash(big.data(), big.size()),
              ob_plan_keys_hash(far.data(), far.size()));
    ob_plan_cache *cache = nullptr;
    EXPECT_EQ(nullptr, find(cache, big)) << "no cache yet";
    ASSERT_NE(nullptr, ob_plan_cache_get(&cache));
    keep(cache, big);
    EXPECT_NE(nullptr, find(cache, big));
    EXPECT_EQ(nullptr, find(cache, near)) << "same hash, other keys";
    ob_plan_cache_free(&cache);
    EXPECT_EQ(nullptr, cache);
}

// Small and large plans have slots of their own: no number of small plans evicts a large
// one. Each class gives up its least recently used plan first (a plan found counts as used);
// a small slot never keeps a large plan's arrays.
TEST(PlanCache, SmallAndLargePlansKeepToTheirSlots)
{
    ob_plan_cache *heap = nullptr;
    ASSERT_NE(nullptr, ob_plan_cache_get(&heap));
    ob_plan_cache &cache = *heap;
    std::vector<std::vector<ob_copy_key>> large, small;
    for (size_t k = 0; k < OB_PLAN_CACHE_LARGE_SLOTS + 1; k++)
        large.push_back(keys_of(OB_PLAN_CACHE_SMALL_BELOW, (k + 1) << 24));
    for (auto &keys : large)
        keep(&cache, keys);
    EXPECT_EQ(nullptr, find(&cache, large[0])) << "the least recently used large plan";
    for (size_t k = 1; k < large.size(); k++)
        EXPECT_NE(nullptr, find(&cache, large[k])) << "large plan " << k;
    for (size_t k = 0; k < OB_PLAN_CACHE_SMALL_SLOTS + 5; k++)
        small.push_back(keys_of(4 + k % (OB_PLAN_CACHE_SMALL_BELOW - 4), (k + 100) << 24));
    for (auto &keys : small)
        keep(&cache, keys);
    for (size_t k = 1; k < large.size(); k++)
        EXPECT_NE(nullptr, find(&cache, large[k])) << "large plan " << k << " after small ones";
    for (size_t k = 0; k < small.size(); k++) {
        ob_cached_plan *slot = find(&cache, small[k]);
        EXPECT_EQ(k >= 5, slot != nullptr) << "small plan " << k;
        if (slot != nullptr) {
            EXPECT_GE(slot - cache.slots, OB_PLAN_CACHE_LARGE_SLOTS);
        }
    }
    // small[5] is the oldest now; found and marked used, it stays and small[6] goes.
    ob_plan_cache_placed(&cache, find(&cache, small[5]));
    keep(&cache, keys_of(7, 999u << 24));
    EXPECT_NE(nullptr, find(&cache, small[5]));
    EXPECT_EQ(nullptr, find(&cache, small[6]));
    EXPECT_FALSE(ob_plan_cache_fits(3));
    EXPECT_TRUE(ob_plan_cache_fits(4));
    // Small plans not found many times in a row: only every so many is worth a slot, until
    // one is found; large ones always are.
    EXPECT_TRUE(ob_plan_cache_worth_keeping(&cache, 5));
    cache.small_misses = OB_PLAN_CACHE_GIVE_UP + 1;
    EXPECT_FALSE(ob_plan_cache_worth_keeping(&cache, 5));
    EXPECT_TRUE(ob_plan_cache_worth_keeping(&cache, OB_PLAN_CACHE_SMALL_BELOW));
    cache.small_misses = OB_PLAN_CACHE_GIVE_UP + OB_PLAN_CACHE_SPARSE_KEEP;
    EXPECT_TRUE(ob_plan_cache_worth_keeping(&cache, 5));
    EXPECT_EQ(nullptr, find(&cache, keys_of(5, 777u << 24)));
    EXPECT_EQ(OB_PLAN_CACHE_GIVE_UP + OB_PLAN_CACHE_SPARSE_KEEP + 1, cache.small_misses);
    EXPECT_NE(nullptr, find(&cache, small[5]));
    EXPECT_EQ(0u, cache.small_misses);
    // A small plan whose arrays were grown for a large one: placed in a small slot, its
    // arrays are freed and the slot is empty.
    auto lean = keys_of(3, 900u << 24);
    ob_cached_plan *slot = keep(&cache, lean, 4096);
    EXPECT_FALSE(slot->valid);
    EXPECT_EQ(nullptr, slot->plan.copies);
    EXPECT_EQ(nullptr, slot->keys);
    EXPECT_EQ(nullptr, find(&cache, lean));
    // A plan may stay valid only in a slot of its class; one copy is never kept.
    EXPECT_FALSE(ob_plan_cache_slot_takes(&cache, &cache.slots[0], 5));
    const size_t below = OB_PLAN_CACHE_SMALL_BELOW;
    EXPECT_TRUE(ob_plan_cache_slot_takes(&cache, &cache.slots[0], below));
    EXPECT_FALSE(ob_plan_cache_slot_takes(&cache, &cache.slots[0], below - 1));
    EXPECT_TRUE(ob_plan_cache_slot_takes(&cache, &cache.slots[OB_PLAN_CACHE_LARGE_SLOTS], below - 1));
    EXPECT_FALSE(ob_plan_cache_slot_takes(&cache, &cache.slots[OB_PLAN_CACHE_LARGE_SLOTS], below));
    EXPECT_FALSE(ob_plan_cache_slot_takes(&cache, &cache.slots[OB_PLAN_CACHE_LARGE_SLOTS], 3));
    ob_plan_cache_invalidate(&cache);
    for (size_t k = 1; k < large.size(); k++)
        EXPECT_EQ(nullptr, find(&cache, large[k]));
    EXPECT_EQ(nullptr, find(&cache, small[10]));
    ob_plan_cache_free(&heap);
}

// A cycle of plans found in turn: each lookup after the first pass lands on the slot found
// after the previous one last time. A guess that has gone stale (another plan placed in that
// slot, or one of the other class) is only a guess: the lookup still finds the plan wherever it
// is, and a plan that is nowhere is not found.
TEST(PlanCache, LookupsFollowTheOrderTheyCameInBefore)
{
    ob_plan_cache *cache = nullptr;
    ASSERT_NE(nullptr, ob_plan_cache_get(&cache));
    std::vector<std::vector<ob_copy_key>> sets;
    for (size_t k = 0; k < 40; k++)
        sets.push_back(keys_of(4 + k % 20, (k + 1) << 24));
    std::vector<size_t> where;
    for (auto &keys : sets)
        where.push_back((size_t)(keep(cache, keys) - cache->slots));
    for (int round = 0; round < 2; round++)
        for (size_t k = 0; k < sets.size(); k++) {
            ob_cached_plan *slot = find(cache, sets[k]);
            ASSERT_NE(nullptr, slot) << "set " << k;
            EXPECT_EQ(where[k], (size_t)(slot - cache->slots));
            EXPECT_EQ(where[k], cache->last_found);
            if (round == 1 && k > 0) {
                EXPECT_EQ(where[k], cache->found_after[where[k - 1]]) << "set " << k;
            }
        }
    // The slot guessed after the last set's (the first set's) now holds another plan.
    ASSERT_EQ(where[0], cache->found_after[where[sets.size() - 1]]);
    cache->slots[where[0]].valid = 0;
    auto other = keep(cache, keys_of(9, 555u << 24));
    ASSERT_EQ(where[0], (size_t)(other - cache->slots)) << "the emptied slot is reused";
    EXPECT_EQ(nullptr, find(cache, sets[0])) << "not found at the guessed slot, nor elsewhere";
    EXPECT_EQ(other, find(cache, keys_of(9, 555u << 24)));
    EXPECT_EQ(&cache->slots[where[5]], find(cache, sets[5])) << "guess missed, scan found it";
    // A large set whose guess is a small slot.
    auto big = keys_of(OB_PLAN_CACHE_SMALL_BELOW, 777u << 24);
    ob_cached_plan *big_slot = keep(cache, big);
    EXPECT_LT((size_t)(big_slot - cache->slots), (size_t)OB_PLAN_CACHE_LARGE_SLOTS);
    EXPECT_EQ(big_slot, find(cache, big));
    ob_plan_cache_free(&cache);
}
