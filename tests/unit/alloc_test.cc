// The growable array (plugin/core/alloc.c, ob_grow): doubling from OB_GROW_FIRST (8), contents
// kept, and a failure that leaves the array as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

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

} // namespace
