// The growable array (plugin/core/alloc.c, ob_grow): doubling from OB_GROW_FIRST (8), contents
// kept, and a failure that leaves the array as it was. Scratch (ob_scratch_*): small blocks from
// the heap, large ones mapped from the kernel, every way it can be refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "plugin/core/alloc.h"
}

namespace {

TEST(GrowableArray, DoublesFrom8AndKeepsWhatItHolds)
{
    static_assert(OB_GROW_FIRST == 8, "the capacities below double from 8");
    uint32_t *items = nullptr;
    size_t capacity = 0;
    ASSERT_EQ(0, ob_grow(reinterpret_cast<void **>(&items), &capacity, 1, sizeof(*items)));
    EXPECT_EQ(8u, capacity);
    ASSERT_EQ(0, ob_grow(reinterpret_cast<void **>(&items), &capacity, 16, sizeof(*items)));
    EXPECT_EQ(16u, capacity) << "a 16-copy plan's arrays hold 16, not 64";
    for (uint32_t i = 0; i < 16; i++)
        items[i] = 0x9e3779b9u * (i + 1);
    ASSERT_EQ(0, ob_grow(reinterpret_cast<void **>(&items), &capacity, 16, sizeof(*items)));
    EXPECT_EQ(16u, capacity) << "enough room: nothing to do";
    ASSERT_EQ(0, ob_grow(reinterpret_cast<void **>(&items), &capacity, 300, sizeof(*items)));
    EXPECT_EQ(512u, capacity);
    for (uint32_t i = 0; i < 16; i++)
        ASSERT_EQ(0x9e3779b9u * (i + 1), items[i]) << i;
    std::free(items);
}

TEST(GrowableArray, AFailureLeavesTheArrayAsItWas)
{
    uint64_t *items = nullptr;
    size_t capacity = 0;
    ASSERT_EQ(0, ob_grow(reinterpret_cast<void **>(&items), &capacity, 10, sizeof(*items)));
    items[9] = 0x0123456789abcdefull;
    uint64_t *before = items;
    ob_alloc_fail_after_for_testing(0);
    EXPECT_EQ(-1, ob_grow(reinterpret_cast<void **>(&items), &capacity, 65, sizeof(*items)));
    ob_alloc_fail_after_for_testing(-1);
    EXPECT_EQ(before, items);
    EXPECT_EQ(16u, capacity);
    EXPECT_EQ(0x0123456789abcdefull, items[9]);
    // A size that overflows is refused without an allocation.
    EXPECT_EQ(-1, ob_grow(reinterpret_cast<void **>(&items), &capacity, SIZE_MAX / 4, 16));
    EXPECT_EQ(16u, capacity);
    std::free(items);
}

constexpr size_t kMapped = size_t(1) << 20; // scratch this large is mapped

// Both kinds hold every byte written to them; calloc'ed scratch starts zeroed either way.
TEST(Scratch, SmallAndMappedBlocksHoldTheirBytes)
{
    for (size_t size : {size_t(1), kMapped - 1, kMapped, 3 * kMapped + 5}) {
        auto *p = static_cast<unsigned char *>(ob_scratch_alloc(size));
        ASSERT_NE(nullptr, p) << size;
        EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(p) % 16) << size;
        for (size_t j = 0; j < size; j++)
            p[j] = static_cast<unsigned char>(j * 131 + 7);
        for (size_t j = 0; j < size; j++)
            ASSERT_EQ(static_cast<unsigned char>(j * 131 + 7), p[j]) << size << " at " << j;
        ob_scratch_free(p, size);
        auto *z = static_cast<unsigned char *>(ob_scratch_calloc(size, 1));
        ASSERT_NE(nullptr, z) << size;
        for (size_t j = 0; j < size; j++)
            ASSERT_EQ(0, z[j]) << size << " at " << j;
        ob_scratch_free(z, size);
    }
    ob_scratch_free(nullptr, kMapped); // nothing to free
}

TEST(Scratch, EveryRefusalIsNull)
{
    // The kernel refuses a mapping larger than the address space.
    EXPECT_EQ(nullptr, ob_scratch_alloc(size_t(1) << 60));
    EXPECT_EQ(nullptr, ob_scratch_calloc(size_t(1) << 30, size_t(1) << 30));
    // Sizes that wrap are refused before any call.
    EXPECT_EQ(nullptr, ob_scratch_alloc(SIZE_MAX - 8));
    EXPECT_EQ(nullptr, ob_scratch_calloc(SIZE_MAX / 2, 3));
    // An injected failure refuses both kinds.
    ob_alloc_fail_after_for_testing(0);
    EXPECT_EQ(nullptr, ob_scratch_alloc(64));
    EXPECT_EQ(nullptr, ob_scratch_alloc(kMapped));
    EXPECT_EQ(nullptr, ob_scratch_calloc(kMapped, 2));
    ob_alloc_fail_after_for_testing(-1);
}

} // namespace
