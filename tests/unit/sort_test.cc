// Sorting (plugin/core/sort.c): ob_sort_unless_sorted against std::stable_sort on random arrays
// of every length around the insertion-sort limit, with elements of several sizes (keys with
// many ties, payloads that must travel with their keys), already sorted and reversed ones too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/support/test_random.h"

extern "C" {
#include "plugin/core/sort.h"
}

namespace {

template <size_t Bytes>
struct Element {
    uint32_t key;
    unsigned char payload[Bytes - sizeof(uint32_t)];
};

template <size_t Bytes>
int by_key(const void *x, const void *y)
{
    const Element<Bytes> *a = static_cast<const Element<Bytes> *>(x);
    const Element<Bytes> *b = static_cast<const Element<Bytes> *>(y);
    return (a->key > b->key) - (a->key < b->key);
}

template <size_t Bytes>
void check_sizes(uint64_t salt)
{
    TestRng rng(test_seed() ^ salt);
    for (size_t n = 0; n <= 70; n++) {
        for (int order = 0; order < 3; order++) {
            std::vector<Element<Bytes>> items(n);
            for (size_t i = 0; i < n; i++) {
                items[i].key = static_cast<uint32_t>(rng() % (n / 2 + 1)); // ties
                for (auto &b : items[i].payload)
                    b = static_cast<unsigned char>(rng());
            }
            auto less = [](const Element<Bytes> &a, const Element<Bytes> &b) { return a.key < b.key; };
            if (order == 1)
                std::stable_sort(items.begin(), items.end(), less);
            if (order == 2)
                std::stable_sort(items.begin(), items.end(),
                                 [&](const auto &a, const auto &b) { return less(b, a); });
            std::vector<Element<Bytes>> want = items;
            std::stable_sort(want.begin(), want.end(), less);
            ob_sort_unless_sorted(items.data(), n, sizeof(Element<Bytes>), by_key<Bytes>);
            for (size_t i = 0; i < n; i++)
                ASSERT_EQ(want[i].key, items[i].key) << "n " << n << " order " << order << " at " << i;
            // Ties may come in any order from qsort; the multiset of whole elements must hold.
            auto bytes_less = [](const Element<Bytes> &a, const Element<Bytes> &b) {
                return std::memcmp(&a, &b, sizeof a) < 0;
            };
            std::sort(want.begin(), want.end(), bytes_less);
            std::sort(items.begin(), items.end(), bytes_less);
            for (size_t i = 0; i < n; i++)
                ASSERT_EQ(0, std::memcmp(&want[i], &items[i], sizeof want[i])) << "n " << n << " element " << i;
        }
    }
}

TEST(SortUnlessSorted, MatchesAStableSortForSmallAndLargeElements)
{
    check_sizes<8>(1);
    check_sizes<24>(2);
    check_sizes<64>(3);
    check_sizes<72>(4); // over the insertion limit's element size: qsort
}

} // namespace
