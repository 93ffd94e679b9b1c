/* The tests' one random generator, for C and C++ alike: splitmix64, seeded from a run's seed
 * and a salt (or a name), so that each purpose draws its own sequence and a run replays exactly
 * from its seed (OMPBATCH_TEST_SEED, printed by every test program). */
#ifndef OMPBATCH_TESTS_SUPPORT_TEST_RNG_H
#define OMPBATCH_TESTS_SUPPORT_TEST_RNG_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ob_test_rng {
    uint64_t state;
} ob_test_rng;

/* splitmix64's finaliser: a bijection that scatters every input bit over the output. */
static inline uint64_t ob_test_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* A generator for one purpose (salt) of a run (seed). */
static inline ob_test_rng ob_test_rng_make(uint64_t seed, uint64_t salt)
{
    ob_test_rng rng = {ob_test_mix(seed ^ ob_test_mix(salt + 0x632be59bd9b4e019ULL))};
    return rng;
}

/* The salt of a name (FNV-1a), for generators named after a test. */
static inline uint64_t ob_test_salt(const char *name)
{
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (const char *p = name; p != NULL && *p != '\0'; p++) {
        hash ^= (unsigned char)*p;
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

static inline uint64_t ob_test_rng_next(ob_test_rng *rng)
{
    rng->state += 0x9e3779b97f4a7c15ULL;
    return ob_test_mix(rng->state);
}

/* A value in [0, bound), without modulo bias; 0 when bound is 0. */
static inline uint64_t ob_test_rng_below(ob_test_rng *rng, uint64_t bound)
{
    if (bound == 0)
        return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound, x;
    do
        x = ob_test_rng_next(rng);
    while (x >= limit);
    return x % bound;
}

/* n random bytes at dst. */
static inline void ob_test_rng_fill(ob_test_rng *rng, void *dst, size_t n)
{
    unsigned char *out = (unsigned char *)dst;
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t)) {
        uint64_t x = ob_test_rng_next(rng);
        memcpy(out + i, &x, sizeof(x));
    }
    if (i < n) {
        uint64_t x = ob_test_rng_next(rng);
        memcpy(out + i, &x, n - i);
    }
}

/* A seed from text (decimal or 0x hex): 1 and *seed set when it is one whole number. */
static inline int ob_test_seed_parse(const char *text, uint64_t *seed)
{
    if (text == NULL || text[0] == '\0')
        return 0;
    char *end = NULL;
    unsigned long long parsed = strtoull(text, &end, 0);
    if (end == NULL || *end != '\0')
        return 0;
    *seed = (uint64_t)parsed;
    return 1;
}

#endif
