// Seeded random bytes and numbers for the GoogleTest suites, from the tests' one generator
// (test_rng.h): the seed is printed once, and OMPBATCH_TEST_SEED=<n> replays a failing run.
#ifndef OMPBATCH_TESTS_TEST_RANDOM_H
#define OMPBATCH_TESTS_TEST_RANDOM_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/test_rng.h"

inline uint64_t test_seed()
{
    static uint64_t seed = [] {
        uint64_t s;
        if (!ob_test_seed_parse(std::getenv("OMPBATCH_TEST_SEED"), &s))
            s = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
        std::printf("OMPBATCH_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
        return s;
    }();
    return seed;
}

// The generator as a C++ UniformRandomBitGenerator: TestRng rng(test_seed() ^ salt); rng().
class TestRng {
public:
    using result_type = uint64_t;
    explicit TestRng(uint64_t seed) : rng_(ob_test_rng_make(seed, 0)) {}
    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
    result_type operator()() { return ob_test_rng_next(&rng_); }

private:
    ob_test_rng rng_;
};

// n bytes that differ for every salt and every seed.
inline std::vector<unsigned char> random_bytes(size_t n, uint64_t salt)
{
    ob_test_rng rng = ob_test_rng_make(test_seed(), salt);
    std::vector<unsigned char> v(n);
    ob_test_rng_fill(&rng, v.data(), n);
    return v;
}

#endif
