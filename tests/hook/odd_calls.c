/*
 * The OpenMP hook test of odd but legal calls to the entry points, made directly: the hook must
 * do what the runtime does with them (compare.sh runs the program with and without the hook and
 * wants the same report), and never crash.
 *   empty     begin, update and end with no items, or a negative count, and NULL arrays;
 *   nulls     an update with NULL names and mappers, and a mappers array of NULL entries;
 *   bits      map types with bits no OpenMP runtime uses beside TO/FROM (the runtime ignores
 *             them: the hook must copy, or forward, exactly as it does);
 *   unmapped  updates of a range never mapped and of one only partly mapped (ignored by the
 *             runtime without `present`), mixed in one call with a good item;
 *   zero      zero-length items beside good ones;
 *   repeated  the same item twice in one call, and two items overlapping each other;
 *   both      every item of an update both `to` and `from` (libomptarget 16 copies from,
 *             then to; 19 to, then from);
 *   strided   non-contiguous items made by hand: one whose outer stride is 0 (the same piece
 *             three times), and one whose last piece runs past the end of its mapping (which
 *             libomptarget skips, so the hook must leave the item to it).
 * Usage: odd_calls <seed>
 */
#include "hook_test.h"

void __tgt_target_data_begin_mapper(void *loc, int64_t device_id, int32_t arg_num,
                                    void **args_base, void **args, int64_t *arg_sizes,
                                    int64_t *arg_types, void **arg_names, void **arg_mappers);
void __tgt_target_data_end_mapper(void *loc, int64_t device_id, int32_t arg_num,
                                  void **args_base, void **args, int64_t *arg_sizes,
                                  int64_t *arg_types, void **arg_names, void **arg_mappers);
void __tgt_target_data_update_mapper(void *loc, int64_t device_id, int32_t arg_num,
                                     void **args_base, void **args, int64_t *arg_sizes,
                                     int64_t *arg_types, void **arg_names, void **arg_mappers);

enum { MAP_TO = 0x1, MAP_FROM = 0x2, ODD_BIT = 1 << 20, N = 6 };
#define NON_CONTIG ((int64_t)1 << 44)

static void update(int64_t dev, int32_t n, void **begins, int64_t *sizes, int64_t *types,
                   void **mappers)
{
    __tgt_target_data_update_mapper(NULL, dev, n, begins, begins, sizes, types, NULL, mappers);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "odd_calls");
    int dev = omp_get_default_device();
    uint64_t r = ht_state(7);
    ht_buf b[N];
    for (int i = 0; i < N; i++)
        b[i] = ht_buf_new(ht_between(&r, 64, 4000), 300 + (uint64_t)i);
    void *begins[N];
    int64_t sizes[N], to[N], from[N];
    for (int i = 0; i < N; i++) {
        begins[i] = b[i].p;
        sizes[i] = (int64_t)b[i].n;
        to[i] = MAP_TO;
        from[i] = MAP_FROM;
    }

    /* empty, and a negative count (the runtime loops over nothing; the hook must not read the
     * NULL arrays either) */
    __tgt_target_data_begin_mapper(NULL, dev, 0, NULL, NULL, NULL, NULL, NULL, NULL);
    __tgt_target_data_update_mapper(NULL, dev, 0, NULL, NULL, NULL, NULL, NULL, NULL);
    __tgt_target_data_end_mapper(NULL, dev, 0, NULL, NULL, NULL, NULL, NULL, NULL);
    __tgt_target_data_begin_mapper(NULL, dev, -1, NULL, NULL, NULL, NULL, NULL, NULL);
    __tgt_target_data_update_mapper(NULL, dev, -3, NULL, NULL, NULL, NULL, NULL, NULL);
    __tgt_target_data_end_mapper(NULL, dev, INT32_MIN, NULL, NULL, NULL, NULL, NULL, NULL);
    OB_CHECK(ht_is_unmapped(b[0].p, b[0].n), "empty: something got mapped");

    /* Map the first N - 1 buffers; the last stays unmapped. */
    __tgt_target_data_begin_mapper(NULL, dev, N - 1, begins, begins, sizes, to, NULL, NULL);
    for (int i = 0; i < N - 1; i++)
        ht_buf_expect(&b[i], 0, b[i].n, "begin");

    /* nulls: NULL names and mappers, then mappers that are all NULL. */
    void *no_mappers[N] = {NULL};
    for (int i = 0; i < N - 1; i++) {
        ht_buf_host_new(&b[i], 0, b[i].n, 400 + (uint64_t)i);
        ht_buf_copied_to(&b[i], 0, b[i].n);
    }
    update(dev, 2, begins, sizes, to, NULL);
    update(dev, N - 3, begins + 2, sizes + 2, to + 2, no_mappers);
    for (int i = 0; i < N - 1; i++)
        ht_buf_expect(&b[i], 0, b[i].n, "nulls: update to");

    /* bits: TO and FROM with a bit no runtime uses. */
    int64_t odd_to[N], odd_from[N];
    for (int i = 0; i < N; i++) {
        odd_to[i] = MAP_TO | ODD_BIT;
        odd_from[i] = MAP_FROM | ODD_BIT;
    }
    for (int i = 0; i < N - 1; i++) {
        ht_buf_host_new(&b[i], 0, b[i].n, 500 + (uint64_t)i);
        ht_buf_copied_to(&b[i], 0, b[i].n);
    }
    update(dev, N - 1, begins, sizes, odd_to, NULL);
    for (int i = 0; i < N - 1; i++)
        ht_buf_expect(&b[i], 0, b[i].n, "bits: update to");
    for (int i = 0; i < N - 1; i++) {
        ht_buf_scramble(&b[i], 0, b[i].n, 600 + (uint64_t)i);
        ht_buf_poison(&b[i], 700 + (uint64_t)i);
        ht_buf_copied_from(&b[i], 0, b[i].n);
    }
    update(dev, N - 1, begins, sizes, odd_from, NULL);
    for (int i = 0; i < N - 1; i++)
        ht_buf_expect(&b[i], 0, b[i].n, "bits: update from");

    /* unmapped: the never-mapped buffer, and a range running past a mapped one, beside a good
     * item; the runtime updates the good item only. */
    {
        void *mixed[3] = {b[N - 1].p, b[0].p, b[1].p};
        int64_t mixed_sizes[3] = {(int64_t)b[N - 1].n, (int64_t)b[0].n, (int64_t)b[1].n + 64};
        int64_t mixed_types[3] = {MAP_TO, MAP_TO, MAP_TO};
        ht_buf_host_new(&b[0], 0, b[0].n, 800);
        ht_buf_copied_to(&b[0], 0, b[0].n);
        update(dev, 3, mixed, mixed_sizes, mixed_types, NULL);
        ht_buf_expect(&b[0], 0, b[0].n, "unmapped: the good item");
        OB_CHECK(ht_is_unmapped(b[N - 1].p, b[N - 1].n), "unmapped: the unmapped buffer got mapped");
        ht_report("unmapped: partly mapped buffer's device copy", b[1].p, b[1].n);
    }

    /* zero: zero-length items beside good ones. */
    {
        void *items[3] = {b[2].p, b[3].p + 5, b[4].p};
        int64_t item_sizes[3] = {(int64_t)b[2].n, 0, (int64_t)b[4].n};
        int64_t item_types[3] = {MAP_TO, MAP_TO, MAP_TO};
        ht_buf_host_new(&b[2], 0, b[2].n, 900);
        ht_buf_copied_to(&b[2], 0, b[2].n);
        ht_buf_host_new(&b[4], 0, b[4].n, 901);
        ht_buf_copied_to(&b[4], 0, b[4].n);
        update(dev, 3, items, item_sizes, item_types, NULL);
        ht_buf_expect(&b[2], 0, b[2].n, "zero: item 0");
        ht_buf_expect(&b[4], 0, b[4].n, "zero: item 2");
    }

    /* repeated: one item twice, and two overlapping halves, in one call. */
    {
        size_t half = b[3].n / 2;
        void *items[4] = {b[2].p, b[2].p, b[3].p, b[3].p + half / 2};
        int64_t item_sizes[4] = {(int64_t)b[2].n, (int64_t)b[2].n, (int64_t)half,
                                 (int64_t)(b[3].n - half / 2)};
        int64_t item_types[4] = {MAP_TO, MAP_TO, MAP_TO, MAP_TO};
        ht_buf_host_new(&b[2], 0, b[2].n, 1000);
        ht_buf_copied_to(&b[2], 0, b[2].n);
        ht_buf_host_new(&b[3], 0, b[3].n, 1001);
        ht_buf_copied_to(&b[3], 0, b[3].n);
        update(dev, 4, items, item_sizes, item_types, NULL);
        ht_buf_expect(&b[2], 0, b[2].n, "repeated: the same item twice");
        ht_buf_expect(&b[3], 0, b[3].n, "repeated: overlapping halves");
    }

    /* both: libomptarget 16 brings the device's bytes back, then sends them out again
     * unchanged; 19 sends the host's bytes out, then brings them back. */
    {
        int64_t both[N];
        for (int i = 0; i < N - 1; i++) {
            both[i] = MAP_TO | MAP_FROM;
            ht_buf_scramble(&b[i], 0, b[i].n, 1100 + (uint64_t)i);
            ht_buf_poison(&b[i], 1200 + (uint64_t)i);
#if __clang_major__ >= 19
            ht_buf_copied_to(&b[i], 0, b[i].n);
#endif
            ht_buf_copied_from(&b[i], 0, b[i].n);
        }
        update(dev, N - 1, begins, sizes, both, NULL);
        for (int i = 0; i < N - 1; i++)
            ht_buf_expect(&b[i], 0, b[i].n, "both: update to and from");
    }

    /* strided: {offset, count, stride} per dimension, outermost first, then {0, 1, element}. */
    {
        typedef struct { uint64_t offset, count, stride; } dim;
        uint64_t n1 = b[1].n;
        dim repeat[3] = {{0, 3, 0}, {1, 1, 8}, {0, 1, 8}};        /* bytes [8, 16), thrice */
        dim past_end[3] = {{0, 2, n1 - 4}, {0, 1, 8}, {0, 1, 8}}; /* [0, 8) and [n-4, n+4) */
        void *descs[2] = {repeat, past_end};
        void *bases[2] = {b[0].p, b[1].p};
        int64_t counts[2] = {3, 3};
        int64_t types[2] = {MAP_TO | NON_CONTIG, MAP_FROM | NON_CONTIG};
        ht_buf_host_new(&b[0], 0, b[0].n, 1300);
        ht_buf_copied_to(&b[0], 8, 8);
        __tgt_target_data_update_mapper(NULL, dev, 1, bases, descs, counts, types, NULL, NULL);
        ht_buf_expect(&b[0], 0, b[0].n, "strided: one piece three times");
        ht_buf_scramble(&b[1], 0, b[1].n, 1301);
        ht_buf_poison(&b[1], 1302);
        ht_buf_copied_from(&b[1], 0, 8); /* the piece past the end is skipped */
        __tgt_target_data_update_mapper(NULL, dev, 1, bases + 1, descs + 1, counts + 1,
                                        types + 1, NULL, NULL);
        ht_buf_expect(&b[1], 0, b[1].n, "strided: a piece past the end of the mapping");
    }

    __tgt_target_data_end_mapper(NULL, dev, N - 1, begins, begins, sizes, from, NULL, NULL);
    for (int i = 0; i < N - 1; i++) {
        ht_buf_copied_from(&b[i], 0, b[i].n);
        ht_buf_expect_host(&b[i], "end");
    }
    for (int i = 0; i < N; i++)
        ht_buf_free(&b[i]);
    return ob_check_finish("odd_calls");
}
