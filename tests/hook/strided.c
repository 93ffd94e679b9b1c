/*
 * The OpenMP hook test of non-contiguous `target update` items (strided sections): for element
 * sizes 1, 2, 4, 8 and 16 bytes, on a 2-D grid and a 3-D block, on fresh random bytes, with
 * bounds at both ends and inside (constants: see VARIANTS):
 *   column     g[0:NY][j:1], j at both ends and inside
 *   rows part  g[r:n][j:1]
 *   strided    g[0:n:2][j:1] and g[r:n:2][j:1] (an outer user stride)
 *   sub-block  g[r:n][c:m]                 (libomptarget copies one element per row)
 *   inner      g[r:n][c:m:2]               (libomptarget multiplies the offset by the stride)
 *   two items  g[0:NY][0:1], g[0:NY][NX-1:1] in one construct
 *   pencil     b[z:n][y:m][x:1]
 *   face       b[z:n][y:1][0:X]            (one element per row in libomptarget)
 *   plane      b[0:Z][0:Y][x:1]            (libomptarget walks only the outer dimension)
 *   partly     g[0:NY][19:1] when only rows [3, 16) are mapped: the other rows' pieces are
 *              skipped
 *   pointer    a column of a heap grid reached through a global pointer to rows, mapped by
 *              its pointer (PTR_AND_OBJ), both ways
 * Each shape goes `from` (the device holds a fresh pattern, the host is poisoned first) and
 * `to` (the host holds fresh bytes; a kernel hashes the whole device array afterwards). The
 * program prints the host hash and the device hash of every step: compare.sh wants them
 * identical with and without the hook, whatever libomptarget does with the shape.
 *
 * Usage: strided <seed> [spec]. With `spec` (run hooked with OMPBATCH_STRIDED=spec) every step
 * is also checked byte for byte against what the OpenMP specification says the section holds,
 * except the outer-stride shape with a nonzero offset, whose stride the descriptors do not
 * show.
 */
#include <string.h>

#include "hook_test.h"

/* 72 rows and 6 x 12 planes: a column, two items' columns and a plane have 64 pieces or more,
 * which the hook moves as one rectangle; shorter sections go piece by piece. */
#define NY 72
#define NX 40
#define BZ 6
#define BY 12
#define BX 10

#define PRAGMA(...) _Pragma(#__VA_ARGS__)

typedef struct pair16 {
    double a, b;
} pair16;

enum shape {
    COLUMN,
    ROWS_PART,
    STRIDED_FROM_0,
    STRIDED,
    SUB_BLOCK,
    INNER_STRIDE,
    TWO_ITEMS,
    PENCIL,
    FACE,
    PLANE,
    SHAPES
};

static const char *const shape_names[SHAPES] = {
    "column", "rows part", "strided from 0", "strided", "sub-block",
    "inner stride", "two items", "pencil", "face", "plane"};

static int spec_mode;

/* Whether element (i, j) of the grid, or (z, y, x) of the block, lies in the section as the
 * specification reads it; b holds the shape's bounds. */
static int in_section(int shape, const int *b, int z, int y, int x)
{
    switch (shape) {
    case COLUMN:
        return x == b[0];
    case ROWS_PART:
        return y >= b[0] && y < b[0] + b[1] && x == b[2];
    case STRIDED_FROM_0:
    case STRIDED:
        return y >= b[0] && (y - b[0]) % 2 == 0 && (y - b[0]) / 2 < b[1] && x == b[2];
    case SUB_BLOCK:
        return y >= b[0] && y < b[0] + b[1] && x >= b[2] && x < b[2] + b[3];
    case INNER_STRIDE:
        return y >= b[0] && y < b[0] + b[1] && x >= b[2] && (x - b[2]) % 2 == 0 &&
               (x - b[2]) / 2 < b[3];
    case TWO_ITEMS:
        return x == 0 || x == NX - 1;
    case PENCIL:
        return z >= b[0] && z < b[0] + b[1] && y >= b[2] && y < b[2] + b[3] && x == b[4];
    case FACE:
        return z >= b[0] && z < b[0] + b[1] && y == b[2];
    case PLANE:
        return x == b[0];
    }
    return 0;
}

/* The variants of every shape, with constant bounds: clang 16 describes a section as
 * non-contiguous only when its bounds are constants (with variable ones it maps the enclosing
 * contiguous range). X(shape, b0, b1, b2, b3, b4, the section of grid g or block k) */
#define VARIANTS(X)                                                                             \
    X(COLUMN, 0, 0, 0, 0, 0, g[0:NY][0:1])                                                      \
    X(COLUMN, NX - 1, 0, 0, 0, 0, g[0:NY][NX - 1:1])                                            \
    X(COLUMN, 17, 0, 0, 0, 0, g[0:NY][17:1])                                                    \
    X(ROWS_PART, 3, 9, 5, 0, 0, g[3:9][5:1])                                                    \
    X(ROWS_PART, 20, 4, 0, 0, 0, g[20:4][0:1])                                                  \
    X(ROWS_PART, 1, 22, 30, 0, 0, g[1:22][30:1])                                                \
    X(STRIDED_FROM_0, 0, 12, 7, 0, 0, g[0:12:2][7:1])                                           \
    X(STRIDED_FROM_0, 0, 3, NX - 1, 0, 0, g[0:3:2][NX - 1:1])                                   \
    X(STRIDED, 1, 11, 7, 0, 0, g[1:11:2][7:1])                                                  \
    X(STRIDED, 5, 9, 0, 0, 0, g[5:9:2][0:1])                                                    \
    X(SUB_BLOCK, 1, 3, 2, 4, 0, g[1:3][2:4])                                                    \
    X(SUB_BLOCK, 0, NY, 10, 20, 0, g[0:NY][10:20])                                              \
    X(SUB_BLOCK, 22, 2, 38, 2, 0, g[22:2][38:2])                                                \
    X(INNER_STRIDE, 0, 5, 0, 10, 0, g[0:5][0:10:2])                                             \
    X(INNER_STRIDE, 2, 6, 3, 8, 0, g[2:6][3:8:2])                                               \
    X(TWO_ITEMS, 0, 0, 0, 0, 0, g[0:NY][0:1], h[0:NY][NX - 1:1])                                \
    X(PENCIL, 1, 2, 2, 3, 4, k[1:2][2:3][4:1])                                                  \
    X(PENCIL, 0, BZ, 1, 6, BX - 1, k[0:BZ][1:6][BX - 1:1])                                      \
    X(FACE, 0, BZ, 3, 0, 0, k[0:BZ][3:1][0:BX])                                                 \
    X(FACE, 2, 3, 0, 0, 0, k[2:3][0:1][0:BX])                                                   \
    X(PLANE, 0, 0, 0, 0, 0, k[0:BZ][0:BY][0:1])                                                 \
    X(PLANE, BX - 1, 0, 0, 0, 0, k[0:BZ][0:BY][BX - 1:1])

typedef struct variant {
    int shape;
    int b[5];
} variant;

static const variant variants[] = {
#define VARIANT_ROW_(shape, b0, b1, b2, b3, b4, ...) {shape, {b0, b1, b2, b3, b4}},
    VARIANTS(VARIANT_ROW_)
#undef VARIANT_ROW_
};
#define NVARIANTS ((int)(sizeof(variants) / sizeof(variants[0])))

/* The updates of every variant, one direction, on the grid g and the block k of one element
 * type (h: g's second name, for two items of one array in one construct). */
#define UPDATE_CASE_(shape, b0, b1, b2, b3, b4, ...)                                            \
    case __LINE__ * 0 + __COUNTER__ - base_: {                                                  \
        if (to) {                                                                               \
            PRAGMA(omp target update to(__VA_ARGS__))                                           \
        } else {                                                                                \
            PRAGMA(omp target update from(__VA_ARGS__))                                         \
        }                                                                                       \
        break;                                                                                  \
    }
#define UPDATES(T, tag)                                                                         \
    static T grid_##tag[NY][NX], block_##tag[BZ][BY][BX];                                       \
    static void update_##tag(int v, int to)                                                     \
    {                                                                                           \
        T(*g)[NX] = grid_##tag, (*h)[NX] = grid_##tag;                                          \
        T(*k)[BY][BX] = block_##tag;                                                            \
        (void)g, (void)h, (void)k;                                                              \
        enum { base_ = __COUNTER__ + 1 };                                                       \
        switch (v) { VARIANTS(UPDATE_CASE_) }                                                   \
    }                                                                                           \
    /* Only rows [3, 16) of the grid mapped, then a column over every row, from. */             \
    static void partly_##tag(void)                                                              \
    {                                                                                           \
        T(*g)[NX] = grid_##tag;                                                                 \
        PRAGMA(omp target enter data map(to : g[3:13][0:NX]))                                   \
        ht_device_scramble(&g[3][0], 13 * NX * sizeof(T), 77);                                  \
        PRAGMA(omp target update from(g[0:NY][19:1]))                                           \
        PRAGMA(omp target exit data map(release : g[3:13][0:NX]))                               \
    }

UPDATES(unsigned char, u8)
UPDATES(short, i16)
UPDATES(float, f32)
UPDATES(double, f64)
UPDATES(pair16, p16)

typedef struct kind {
    const char *name;
    size_t elem;
    unsigned char *grid, *block;
    void (*update)(int variant, int to);
    void (*partly)(void);
} kind;

static const kind kinds[] = {
    {"1 B", 1, (unsigned char *)grid_u8, (unsigned char *)block_u8, update_u8, partly_u8},
    {"2 B", 2, (unsigned char *)grid_i16, (unsigned char *)block_i16, update_i16, partly_i16},
    {"4 B", 4, (unsigned char *)grid_f32, (unsigned char *)block_f32, update_f32, partly_f32},
    {"8 B", 8, (unsigned char *)grid_f64, (unsigned char *)block_f64, update_f64, partly_f64},
    {"16 B", 16, (unsigned char *)grid_p16, (unsigned char *)block_p16, update_p16, partly_p16},
};

static int is_block_shape(int shape)
{
    return shape == PENCIL || shape == FACE || shape == PLANE;
}

/* The specification's expectation after the step: within the section the source's bytes,
 * elsewhere the destination's own. */
static void expect_spec(const kind *k, int shape, const int *b, unsigned char *want,
                        const unsigned char *source)
{
    int block = is_block_shape(shape);
    int zs = block ? BZ : 1, ys = block ? BY : NY, xs = block ? BX : NX;
    for (int z = 0; z < zs; z++)
        for (int y = 0; y < ys; y++)
            for (int x = 0; x < xs; x++)
                if (in_section(shape, b, z, y, x)) {
                    size_t at = (((size_t)z * (size_t)ys + (size_t)y) * (size_t)xs + (size_t)x) *
                                k->elem;
                    memcpy(want + at, source + at, k->elem);
                }
}

/* The device copy's bytes, read back with a contiguous update (the host keeps its own). */
static void read_device(unsigned char *array, size_t n, unsigned char *out)
{
    unsigned char *keep = ht_dup(array, n);
#pragma omp target update from(array[0:n])
    memcpy(out, array, n);
    memcpy(array, keep, n);
    free(keep);
}

static void one_step(const kind *k, int v, int to, uint64_t salt)
{
    int shape = variants[v].shape;
    const int *b = variants[v].b;
    int block = is_block_shape(shape);
    unsigned char *array = block ? k->block : k->grid;
    size_t n = (block ? (size_t)BZ * BY * BX : (size_t)NY * NX) * k->elem;
    unsigned char *dev = ht_malloc(n), *want = ht_malloc(n);
    /* A known device copy: the host's bytes scrambled by a kernel. */
    ht_fill_random(array, n, salt);
    memcpy(dev, array, n);
#pragma omp target update to(array[0:n])
    ht_device_scramble(array, n, salt + 1);
    ht_host_scramble(dev, n, salt + 1);
    if (to) {
        ht_fill_unlike(array, dev, n, salt + 2);
        memcpy(want, dev, n);
        expect_spec(k, shape, b, want, array);
    } else {
        ht_fill_unlike(array, dev, n, salt + 2);
        memcpy(want, array, n);
        expect_spec(k, shape, b, want, dev);
    }
    k->update(v, to);
    unsigned char *got = array;
    if (to) {
        got = ht_malloc(n);
        read_device(array, n, got);
    }
    printf("%s %s %s [%d %d %d %d %d]: %016" PRIx64 "\n", k->name, shape_names[shape],
           to ? "to" : "from", b[0], b[1], b[2], b[3], b[4], ht_fnv(got, n));
    if (spec_mode && shape != STRIDED)
        ht_expect_host(got, want, n, shape_names[shape]);
    if (to)
        free(got);
    free(dev);
    free(want);
}

/* A heap grid reached through a global pointer to rows: mapped PTR_AND_OBJ, its column moved
 * by strided updates whose base is the pointee. */
static double (*rows_of)[NX];

static void test_pointer_column(uint64_t *r)
{
    size_t n = sizeof(double) * NY * NX;
    rows_of = ht_malloc(n);
    ht_fill_random(rows_of, n, ht_below(r, 1u << 30));
#pragma omp target enter data map(to : rows_of[0:NY][0:NX])
    unsigned char *dev = ht_dup(rows_of, n), *want = ht_malloc(n);
    ht_device_scramble(rows_of, n, 401);
    ht_host_scramble(dev, n, 401);
    ht_fill_unlike(rows_of, dev, n, 402);
    memcpy(want, rows_of, n);
    for (int y = 0; y < NY; y++)
        memcpy(want + ((size_t)y * NX + 7) * sizeof(double),
               dev + ((size_t)y * NX + 7) * sizeof(double), sizeof(double));
#pragma omp target update from(rows_of[0:NY][7:1])
    ht_expect_host(rows_of, want, n, "pointer: column from");
    printf("pointer column from: %016" PRIx64 "\n", ht_fnv(rows_of, n));
    ht_fill_unlike(rows_of, dev, n, 403);
    memcpy(want, dev, n);
    for (int y = 0; y < NY; y++)
        memcpy(want + ((size_t)y * NX + 7) * sizeof(double),
               (unsigned char *)rows_of + ((size_t)y * NX + 7) * sizeof(double),
               sizeof(double));
#pragma omp target update to(rows_of[0:NY][7:1])
    ht_expect_device(rows_of, want, n, "pointer: column to");
#pragma omp target exit data map(release : rows_of[0:NY][0:NX])
    OB_CHECK(ht_is_unmapped(rows_of, n), "pointer: grid still mapped");
    free(rows_of);
    free(dev);
    free(want);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "strided");
    spec_mode = argc > 2 && strcmp(argv[2], "spec") == 0;
    uint64_t r = ht_state(3);
    for (size_t t = 0; t < sizeof(kinds) / sizeof(kinds[0]); t++) {
        const kind *k = &kinds[t];
        unsigned char *grid = k->grid, *blk = k->block;
        size_t gn = (size_t)NY * NX * k->elem, bn = (size_t)BZ * BY * BX * k->elem;
        ht_fill_random(grid, gn, 10 + t);
        ht_fill_random(blk, bn, 20 + t);
#pragma omp target enter data map(to : grid[0:gn], blk[0:bn])
        for (int v = 0; v < NVARIANTS; v++)
            for (int to = 0; to < 2; to++)
                one_step(k, v, to, ht_below(&r, 1u << 30));
#pragma omp target exit data map(release : grid[0:gn], blk[0:bn])
        OB_CHECK(ht_is_unmapped(grid, gn), "%s: grid still mapped", k->name);

        /* Partly mapped: rows outside the mapping keep the host's bytes. */
        int rows = 13, first = 3, j = 19;
        ht_fill_random(grid, gn, 30 + t);
        unsigned char *before = ht_dup(grid, gn);
        k->partly();
        size_t differ_outside = 0;
        for (int y = 0; y < NY; y++)
            if (y < first || y >= first + rows)
                differ_outside += memcmp(grid + ((size_t)y * NX) * k->elem,
                                         before + ((size_t)y * NX) * k->elem,
                                         NX * k->elem) != 0;
        OB_CHECK(differ_outside == 0, "%s partly: %zu unmapped rows changed", k->name,
              differ_outside);
        printf("%s partly [%d %d %d]: %016" PRIx64 "\n", k->name, first, rows, j,
               ht_fnv(grid, gn));
        free(before);
    }
    test_pointer_column(&r);
    return ob_check_finish("strided");
}
