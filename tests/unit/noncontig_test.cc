// The pieces of non-contiguous updates (plugin/hook/noncontig.c) against two references written
// here from the definitions: libomptarget 16's recursive procedure, transcribed as its source
// reads, and the OpenMP specification's elements, enumerated one by one. Random descriptors
// shaped as clang emits them (arrays of random extents, sections with random bounds, lengths,
// strides and element sizes) and fully random ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <utility>
#include <vector>

extern "C" {
#include "plugin/hook/noncontig.h"
}

#include "tests/support/test_random.h"

namespace {

using Piece = std::pair<uint64_t, uint64_t>; // offset, size
using Desc = std::vector<ob_non_contig>;

// libomptarget 16: size from the last descriptor; one dimension dropped for every k > 0 whose
// count * stride equals stride[k - 1]; the remaining leading dimensions walked recursively,
// the last of them at index 0 only.
void runtime_walk(const Desc &d, uint64_t size, int dim, int levels, uint64_t offset,
                  std::vector<Piece> &out)
{
    if (dim == levels) {
        out.push_back({offset, size});
        return;
    }
    for (uint64_t i = 0; i < d[dim].count; i++) {
        if (dim == levels - 1 && i != 0)
            continue;
        runtime_walk(d, size, dim + 1, levels, offset + (d[dim].offset + i) * d[dim].stride,
                     out);
    }
}

std::vector<Piece> runtime_reference(const Desc &d)
{
    int n = static_cast<int>(d.size());
    uint64_t size = d[n - 1].count * d[n - 1].stride;
    int removed = 0;
    for (int k = n - 1; k > 0; k--)
        if (d[k].count * d[k].stride == d[k - 1].stride)
            removed++;
    std::vector<Piece> out;
    runtime_walk(d, size, 0, n - removed, 0, out);
    return out;
}

// The specification's bytes: every element of the section, the innermost dimension's offset
// counted in elements and its stride stepping, the outer ones as the descriptors give them.
std::set<uint64_t> spec_reference_bytes(const Desc &d)
{
    int n = static_cast<int>(d.size());
    uint64_t e = d[n - 1].stride;
    int inner = n - 2;
    std::set<uint64_t> bytes;
    std::vector<uint64_t> index(n - 1, 0);
    for (int k = 0; k <= inner; k++)
        if (d[k].count == 0)
            return bytes;
    for (;;) {
        uint64_t at = d[inner].offset * e + index[inner] * d[inner].stride;
        for (int k = 0; k < inner; k++)
            at += (d[k].offset + index[k]) * d[k].stride;
        for (uint64_t b = 0; b < e; b++)
            bytes.insert(at + b);
        int k = inner;
        while (k >= 0 && ++index[k] == d[k].count)
            index[k--] = 0;
        if (k < 0)
            return bytes;
    }
}

std::set<uint64_t> bytes_of(const ob_strided_pieces &p)
{
    std::set<uint64_t> bytes;
    for (size_t k = 0; k < p.count; k++)
        for (uint64_t b = 0; b < p.at[k].size; b++)
            bytes.insert(p.at[k].offset + b);
    return bytes;
}

std::vector<Piece> pieces_of(const ob_strided_pieces &p)
{
    std::vector<Piece> v;
    for (size_t k = 0; k < p.count; k++)
        v.push_back({p.at[k].offset, p.at[k].size});
    return v;
}

// A section of an array of random extents, as clang describes it.
Desc clang_like(TestRng &rng, int real_dims)
{
    static const uint64_t sizes[] = {1, 2, 4, 8, 16};
    uint64_t e = sizes[rng() % 5];
    std::vector<uint64_t> extent(real_dims), step(real_dims);
    for (auto &x : extent)
        x = 1 + rng() % 6;
    step[real_dims - 1] = e;
    for (int k = real_dims - 2; k >= 0; k--)
        step[k] = step[k + 1] * extent[k + 1];
    Desc d;
    for (int k = 0; k < real_dims; k++) {
        uint64_t lb = rng() % extent[k];
        uint64_t stride = (rng() % 3 == 0) ? 1 + rng() % 3 : 1;
        uint64_t most = (extent[k] - lb - 1) / stride + 1; // inside the array
        uint64_t len = rng() % (most + 1);
        d.push_back({lb, len, stride * step[k]});
    }
    d.push_back({0, 1, e});
    return d;
}

TEST(NonContig, RuntimeListMatchesTheRuntimesProcedure)
{
    TestRng rng(test_seed() ^ 0x51);
    for (int trial = 0; trial < 20000; trial++) {
        Desc d;
        if (trial % 2 == 0) {
            d = clang_like(rng, 1 + static_cast<int>(rng() % 4));
        } else {
            int n = 1 + static_cast<int>(rng() % 5);
            for (int k = 0; k < n; k++)
                d.push_back({rng() % 4, rng() % 4, rng() % 3 == 0 ? 8 : 1 + rng() % 64});
        }
        ob_strided_pieces got;
        ASSERT_EQ(ob_pieces_runtime(d.data(), static_cast<int64_t>(d.size()), 1 << 20, &got),
                  OB_PIECES_OK);
        EXPECT_EQ(pieces_of(got), runtime_reference(d)) << "trial " << trial;
        ob_pieces_free(&got);
    }
}

TEST(NonContig, SpecListHoldsEveryElementOnce)
{
    TestRng rng(test_seed() ^ 0x52);
    for (int trial = 0; trial < 20000; trial++) {
        Desc d = clang_like(rng, 1 + static_cast<int>(rng() % 4));
        ob_strided_pieces got;
        ASSERT_EQ(ob_pieces_spec(d.data(), static_cast<int64_t>(d.size()), 1 << 20, &got),
                  OB_PIECES_OK);
        std::set<uint64_t> want = spec_reference_bytes(d);
        uint64_t total = 0;
        for (size_t k = 0; k < got.count; k++)
            total += got.at[k].size;
        EXPECT_EQ(bytes_of(got), want) << "trial " << trial;
        // Sections inside their arrays hold no element twice.
        EXPECT_EQ(total, want.size()) << "trial " << trial;
        ob_pieces_free(&got);
    }
}

// The shapes of a halo exchange on double u[6][10] and double v[4][5][7], with the
// descriptors clang 16 emits for them (seen with OMPBATCH_VERBOSE=3).
struct Shape {
    const char *what;
    Desc d;
    bool runtime_is_spec;
};

std::vector<Shape> shapes()
{
    return {
        {"column u[0:6][1:1]", {{0, 6, 80}, {1, 1, 8}, {0, 1, 8}}, true},
        {"strided column u[0:3:2][1:1]", {{0, 3, 160}, {1, 1, 8}, {0, 1, 8}}, true},
        {"strided row part u[0:3][0:4:2]", {{0, 3, 80}, {0, 4, 16}, {0, 1, 8}}, true},
        {"pencil v[1:2][2:3][4:1]", {{1, 2, 280}, {2, 3, 56}, {4, 1, 8}, {0, 1, 8}}, true},
        {"sub-block u[1:3][2:4]", {{1, 3, 80}, {2, 4, 8}, {0, 1, 8}}, false},
        {"strided, offset u[1:3][2:4:2]", {{1, 3, 80}, {2, 4, 16}, {0, 1, 8}}, false},
        {"face v[0:4][1:1][0:7]", {{0, 4, 280}, {1, 1, 56}, {0, 7, 8}, {0, 1, 8}}, false},
        {"plane v[0:4][0:5][2:1]", {{0, 4, 280}, {0, 5, 56}, {2, 1, 8}, {0, 1, 8}}, false},
    };
}

TEST(NonContig, HaloShapesAreBatchedExactlyWhereTheRuntimeFollowsTheSpecification)
{
    for (Shape &s : shapes()) {
        ob_strided_pieces runtime, spec;
        ASSERT_EQ(ob_pieces_runtime(s.d.data(), static_cast<int64_t>(s.d.size()), 4096,
                                    &runtime),
                  OB_PIECES_OK);
        ASSERT_EQ(ob_pieces_spec(s.d.data(), static_cast<int64_t>(s.d.size()), 4096, &spec),
                  OB_PIECES_OK);
        EXPECT_EQ(bytes_of(spec), spec_reference_bytes(s.d)) << s.what;
        EXPECT_EQ(ob_pieces_same_bytes(&runtime, &spec) != 0, s.runtime_is_spec) << s.what;
        ob_pieces_free(&runtime);
        ob_pieces_free(&spec);
    }
}

TEST(NonContig, TheRuntimesKnownDefects)
{
    // A sub-block copies one element per row: the size is the last descriptor's.
    Desc block = {{1, 3, 80}, {2, 4, 8}, {0, 1, 8}};
    ob_strided_pieces p;
    ASSERT_EQ(ob_pieces_runtime(block.data(), 3, 64, &p), OB_PIECES_OK);
    EXPECT_EQ(pieces_of(p), (std::vector<Piece>{{96, 8}, {176, 8}, {256, 8}}));
    ob_pieces_free(&p);
    // A plane: the dropped middle dimension is not a trailing one, so the walk stops early.
    Desc plane = {{0, 4, 280}, {0, 5, 56}, {2, 1, 8}, {0, 1, 8}};
    ASSERT_EQ(ob_pieces_runtime(plane.data(), 4, 64, &p), OB_PIECES_OK);
    EXPECT_EQ(pieces_of(p), (std::vector<Piece>{{0, 8}, {280, 8}, {560, 8}, {840, 8}}));
    ob_pieces_free(&p);
}

TEST(NonContig, EmptyAndRefusedDescriptors)
{
    ob_strided_pieces p;
    Desc empty_rows = {{0, 0, 80}, {1, 1, 8}, {0, 1, 8}};
    EXPECT_EQ(ob_pieces_runtime(empty_rows.data(), 3, 64, &p), OB_PIECES_OK);
    EXPECT_EQ(p.count, 0u);
    EXPECT_EQ(ob_pieces_spec(empty_rows.data(), 3, 64, &p), OB_PIECES_OK);
    EXPECT_EQ(p.count, 0u);

    Desc many = {{0, 1000, 80}, {0, 1000, 8}, {1, 1, 8}, {0, 1, 8}};
    EXPECT_EQ(ob_pieces_runtime(many.data(), 4, 999, &p), OB_PIECES_TOO_MANY);
    EXPECT_EQ(ob_pieces_spec(many.data(), 4, 999, &p), OB_PIECES_TOO_MANY);
    EXPECT_EQ(p.at, nullptr);

    Desc huge = {{UINT64_MAX / 2, 4, 80}, {1, 1, 8}, {0, 1, 8}};
    EXPECT_EQ(ob_pieces_runtime(huge.data(), 3, 64, &p), OB_PIECES_OVERFLOW);
    EXPECT_EQ(ob_pieces_spec(huge.data(), 3, 64, &p), OB_PIECES_OVERFLOW);
    Desc wide = {{0, 2, 80}, {1, UINT64_MAX / 4, 8}};
    EXPECT_EQ(ob_pieces_runtime(wide.data(), 2, 64, &p), OB_PIECES_OVERFLOW);

    EXPECT_EQ(ob_pieces_runtime(nullptr, 3, 64, &p), OB_PIECES_FORMAT);
    EXPECT_EQ(ob_pieces_runtime(empty_rows.data(), 0, 64, &p), OB_PIECES_FORMAT);
    EXPECT_EQ(ob_pieces_runtime(empty_rows.data(), OB_PIECES_MAX_DIMS + 1, 64, &p),
              OB_PIECES_FORMAT);
    Desc no_element = {{0, 6, 80}, {1, 1, 8}};
    EXPECT_EQ(ob_pieces_spec(no_element.data(), 2, 64, &p), OB_PIECES_FORMAT);
    Desc odd_stride = {{0, 6, 80}, {1, 3, 12}, {0, 1, 8}};
    EXPECT_EQ(ob_pieces_spec(odd_stride.data(), 3, 64, &p), OB_PIECES_FORMAT);
}

} // namespace

namespace {

// The bytes, as (offset, size) runs in order, that a rectangle covers on its source side.
std::vector<std::pair<uint64_t, uint64_t>> rect_runs(const ob_rect &r, uint64_t first)
{
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    ob_rect_cursor cursor;
    ob_rect_seek(&r, 0, &cursor);
    uint64_t dst_at, src_at, bytes;
    while (ob_rect_next(&r, &cursor, r.bytes, &dst_at, &src_at, &bytes)) {
        EXPECT_EQ(dst_at, src_at) << "both sides are laid out alike";
        if (!runs.empty() && runs.back().first + runs.back().second == first + src_at)
            runs.back().second += bytes;
        else
            runs.push_back({first + src_at, bytes});
    }
    return runs;
}

// The pieces as (offset, size) runs in order, adjacent ones joined.
std::vector<std::pair<uint64_t, uint64_t>> piece_runs(const std::vector<ob_strided_piece> &p)
{
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (const ob_strided_piece &q : p) {
        if (!runs.empty() && runs.back().first + runs.back().second == q.offset)
            runs.back().second += q.size;
        else
            runs.push_back({q.offset, q.size});
    }
    return runs;
}

// A regular grid of pieces, innermost index fastest: up to four levels of random counts and
// non-overlapping strides.
std::vector<ob_strided_piece> random_grid(TestRng &rng)
{
    uint64_t size = 1 + rng() % 24, base = rng() % 5000;
    int dims = 1 + static_cast<int>(rng() % 4);
    std::vector<uint64_t> count, stride;
    uint64_t extent = size;
    for (int d = 0; d < dims; d++) {
        count.push_back(1 + rng() % 6);
        stride.push_back(extent + (rng() % 3 == 0 ? 0 : rng() % 40));
        extent = stride.back() * count.back();
    }
    std::vector<ob_strided_piece> pieces;
    std::vector<uint64_t> index(dims, 0);
    for (;;) {
        uint64_t at = base;
        for (int d = 0; d < dims; d++)
            at += index[d] * stride[d];
        pieces.push_back({at, size});
        int d = 0;
        while (d < dims && ++index[d] == count[d])
            index[d++] = 0;
        if (d == dims)
            return pieces;
    }
}

} // namespace

// The hook moves a strided item's pieces as one rectangle only when the rectangle covers
// exactly those bytes in the same order: regular grids always become one, and any change to a
// grid (a piece moved, resized, dropped or swapped) either is refused or still covers exactly
// the pieces.
TEST(NonContig, PiecesBecomeARectangleExactlyWhenTheyAreAGrid)
{
    TestRng rng(test_seed() ^ 0x3c7a);
    int taken = 0, refused = 0;
    for (int trial = 0; trial < 3000; trial++) {
        std::vector<ob_strided_piece> pieces = random_grid(rng);
        int change = trial % 5; // 0: none; else move, resize, drop, swap one piece
        size_t k = rng() % pieces.size();
        if (change == 1)
            pieces[k].offset += 1 + rng() % 7;
        else if (change == 2)
            pieces[k].size += 1;
        else if (change == 3 && pieces.size() > 2)
            pieces.erase(pieces.begin() + static_cast<long>(k));
        else if (change == 4 && k + 1 < pieces.size())
            std::swap(pieces[k], pieces[k + 1]);
        ob_strided_pieces list = {pieces.data(), pieces.size()};
        ob_rect rect;
        uint64_t first = 0;
        if (!ob_pieces_rect(&list, &rect, &first)) {
            refused++;
            EXPECT_TRUE(change != 0 || pieces.size() < 2) << "trial " << trial << ": a grid refused";
            continue;
        }
        taken++;
        ASSERT_EQ(pieces.size() * pieces[0].size, rect.bytes) << "trial " << trial;
        ASSERT_EQ(piece_runs(pieces), rect_runs(rect, first)) << "trial " << trial;
        ASSERT_EQ(0, std::memcmp(&rect.dst, &rect.src, sizeof(rect.src)));
    }
    EXPECT_GT(taken, 600); // the unchanged grids and some changes that are grids still
    EXPECT_GT(refused, 500);
    // A column of a 1024 x 1024 grid of doubles: one level of 1024 pieces 8 KiB apart.
    std::vector<ob_strided_piece> column;
    for (uint64_t y = 0; y < 1024; y++)
        column.push_back({y * 8192 + 8, 8});
    ob_strided_pieces list = {column.data(), column.size()};
    ob_rect rect;
    uint64_t first;
    ASSERT_TRUE(ob_pieces_rect(&list, &rect, &first));
    EXPECT_EQ(8u, first);
    EXPECT_EQ(1024u, rect.runs);
    EXPECT_EQ(8u, rect.src.run);
    EXPECT_EQ(1u, rect.src.dims);
    EXPECT_EQ(8192u, rect.src.stride[0]);
    // Overlapping pieces are never a rectangle, by half a piece or by one byte, in the inner
    // level or between repetitions of it.
    const std::vector<std::vector<ob_strided_piece>> overlapping = {
        {{0, 16}, {8, 16}, {16, 16}},
        {{0, 16}, {15, 16}, {30, 16}},
        {{0, 4}, {4, 4}, {7, 4}, {11, 4}},
    };
    for (const auto &o : overlapping) {
        list = {const_cast<ob_strided_piece *>(o.data()), o.size()};
        EXPECT_FALSE(ob_pieces_rect(&list, &rect, &first)) << o.size() << " pieces";
    }
}
