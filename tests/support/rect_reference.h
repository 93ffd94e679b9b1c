// Rectangular copies for the tests of ompbatch_batch_add_rect: random geometries, and the
// copy as omp_target_memcpy_rect defines it, element by element.
#ifndef OMPBATCH_TESTS_RECT_REFERENCE_H
#define OMPBATCH_TESTS_RECT_REFERENCE_H

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "tests/support/test_random.h"

struct RectShape {
    size_t element = 1;
    int dims = 1;
    std::vector<size_t> volume, dst_off, src_off, dst_dim, src_dim;

    size_t dst_bytes() const { return bytes_of(dst_dim); }
    size_t src_bytes() const { return bytes_of(src_dim); }
    size_t bytes_of(const std::vector<size_t> &dim) const
    {
        size_t n = element;
        for (size_t d : dim)
            n *= d;
        return n;
    }
};

// A random rectangle: 1-4 dimensions, extents up to max_extent, an element of 1-16 bytes,
// the volume somewhere inside both arrays (sometimes covering inner dimensions whole, so that
// runs widen).
inline RectShape random_rect(TestRng &rng, size_t max_extent = 9)
{
    static const size_t elements[] = {1, 2, 3, 4, 8, 12, 16};
    RectShape r;
    r.element = elements[rng() % 7];
    r.dims = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < r.dims; d++) {
        size_t dd = 1 + rng() % max_extent, sd = 1 + rng() % max_extent;
        size_t most = dd < sd ? dd : sd;
        size_t v = rng() % 4 == 0 ? most : 1 + rng() % most;
        if (rng() % 3 == 0 && d > 0) // the same extent on both sides, copied whole
            dd = sd = v;
        r.volume.push_back(v);
        r.dst_dim.push_back(dd);
        r.src_dim.push_back(sd);
        r.dst_off.push_back(rng() % (dd - v + 1));
        r.src_off.push_back(rng() % (sd - v + 1));
    }
    return r;
}

// dst (r.dst_bytes() bytes) after copying r from src, element by element.
inline void rect_reference(const RectShape &r, unsigned char *dst, const unsigned char *src)
{
    std::vector<size_t> index(r.dims, 0);
    for (;;) {
        size_t de = 0, se = 0;
        for (int d = 0; d < r.dims; d++) {
            de = de * r.dst_dim[d] + r.dst_off[d] + index[d];
            se = se * r.src_dim[d] + r.src_off[d] + index[d];
        }
        std::memcpy(dst + de * r.element, src + se * r.element, r.element);
        int k = r.dims - 1;
        while (k >= 0 && ++index[k] == r.volume[k])
            index[k--] = 0;
        if (k < 0)
            return;
    }
}

#endif
