// Seeded random bytes for the GoogleTest suites: the seed is printed once, and
// OMPBATCH_TEST_SEED=<n> replays a failing run.
#ifndef OMPBATCH_TESTS_TEST_RANDOM_H
#define OMPBATCH_TESTS_TEST_RANDOM_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

inline uint64_t test_seed()
{
    static uint64_t seed = [] {
        const char *env = std::getenv("OMPBATCH_TEST_SEED");
        uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
        std::printf("OMPBATCH_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
        return s;
    }();
    return seed;
}

// n bytes that differ for every salt and every seed.
inline std::vector<unsigned char> random_bytes(size_t n, uint64_t salt)
{
    std::mt19937_64 rng(test_seed() ^ (salt * 0x9e3779b97f4a7c15ULL));
    std::vector<unsigned char> v(n);
    for (auto &b : v)
        b = static_cast<unsigned char>(rng());
    return v;
}

#endif
