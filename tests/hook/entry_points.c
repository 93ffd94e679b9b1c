/*
 * The OpenMP hook test of the entry points programs do not reach through clang's code for
 * ordinary constructs:
 *   legacy   libomptarget's legacy data entry points (no mapper arguments), called directly.
 *            The runtime implements them by calling the mapper forms through its own PLT, so
 *            those calls arrive at the hook from inside libomptarget, which must handle them
 *            exactly like the program's own constructs.
 *   assoc    omp_target_associate_ptr / omp_target_disassociate_ptr over omp_target_alloc'd
 *            memory: associated ranges have infinite reference counts and are left to the
 *            runtime; after disassociation, the same host range mapped anew is a new entry.
 * Usage: entry_points <seed>
 */
#include "hook_test.h"

void __tgt_target_data_begin(int64_t device_id, int32_t arg_num, void **args_base, void **args,
                             int64_t *arg_sizes, int64_t *arg_types);
void __tgt_target_data_end(int64_t device_id, int32_t arg_num, void **args_base, void **args,
                           int64_t *arg_sizes, int64_t *arg_types);
void __tgt_target_data_update(int64_t device_id, int32_t arg_num, void **args_base, void **args,
                              int64_t *arg_sizes, int64_t *arg_types);
void __tgt_target_data_update_nowait(int64_t device_id, int32_t arg_num, void **args_base,
                                     void **args, int64_t *arg_sizes, int64_t *arg_types,
                                     int32_t dep_num, void *dep_list, int32_t noalias_dep_num,
                                     void *noalias_dep_list);

enum { LEGACY_BUFFERS = 8, MAP_TO = 0x1, MAP_FROM = 0x2 };

/* Argument arrays of one legacy call over every buffer, all with map type `type`. */
typedef struct legacy_args {
    void *bases[LEGACY_BUFFERS];
    void *begins[LEGACY_BUFFERS];
    int64_t sizes[LEGACY_BUFFERS];
    int64_t types[LEGACY_BUFFERS];
} legacy_args;

static legacy_args legacy_for(ht_buf *bufs, int64_t type)
{
    legacy_args a;
    for (int i = 0; i < LEGACY_BUFFERS; i++) {
        a.bases[i] = a.begins[i] = bufs[i].p;
        a.sizes[i] = (int64_t)bufs[i].n;
        a.types[i] = type;
    }
    return a;
}

static void legacy(void)
{
    uint64_t r = ht_state(1);
    int dev = omp_get_default_device();
    ht_buf bufs[LEGACY_BUFFERS];
    for (int i = 0; i < LEGACY_BUFFERS; i++)
        bufs[i] = ht_buf_new(ht_between(&r, 1, 6000), 100 + (uint64_t)i);

    legacy_args to = legacy_for(bufs, MAP_TO);
    __tgt_target_data_begin(dev, LEGACY_BUFFERS, to.bases, to.begins, to.sizes, to.types);
    for (int i = 0; i < LEGACY_BUFFERS; i++)
        ht_buf_expect(&bufs[i], 0, bufs[i].n, "legacy: after begin");

    for (int i = 0; i < LEGACY_BUFFERS; i++) {
        ht_buf_scramble(&bufs[i], 0, bufs[i].n, 200 + (uint64_t)i);
        ht_buf_poison(&bufs[i], 300 + (uint64_t)i);
    }
    legacy_args from = legacy_for(bufs, MAP_FROM);
    __tgt_target_data_update(dev, LEGACY_BUFFERS, from.bases, from.begins, from.sizes, from.types);
    for (int i = 0; i < LEGACY_BUFFERS; i++) {
        ht_buf_copied_from(&bufs[i], 0, bufs[i].n);
        ht_buf_expect(&bufs[i], 0, bufs[i].n, "legacy: after update from");
    }

    for (int i = 0; i < LEGACY_BUFFERS; i++)
        ht_buf_host_new(&bufs[i], 0, bufs[i].n, 400 + (uint64_t)i);
    /* The legacy nowait form runs the blocking mapper form (no task is involved here). */
    __tgt_target_data_update_nowait(dev, LEGACY_BUFFERS, to.bases, to.begins, to.sizes, to.types,
                                    0, NULL, 0, NULL);
    for (int i = 0; i < LEGACY_BUFFERS; i++) {
        ht_buf_copied_to(&bufs[i], 0, bufs[i].n);
        ht_buf_expect(&bufs[i], 0, bufs[i].n, "legacy: after update to (nowait form)");
    }

    for (int i = 0; i < LEGACY_BUFFERS; i++) {
        ht_buf_scramble(&bufs[i], 0, bufs[i].n, 500 + (uint64_t)i);
        ht_buf_poison(&bufs[i], 600 + (uint64_t)i);
    }
    __tgt_target_data_end(dev, LEGACY_BUFFERS, from.bases, from.begins, from.sizes, from.types);
    for (int i = 0; i < LEGACY_BUFFERS; i++) {
        ht_buf_copied_from(&bufs[i], 0, bufs[i].n);
        ht_buf_expect_host(&bufs[i], "legacy: after end");
        ht_report("legacy", bufs[i].p, bufs[i].n);
        ht_buf_free(&bufs[i]);
    }
}

/* Device bytes of an omp_target_alloc'd block, read back with omp_target_memcpy. */
static void expect_device_block(void *d, const unsigned char *want, size_t n, const char *what)
{
    int dev = omp_get_default_device();
    unsigned char *got = ht_malloc(n);
    memset(got, 0x5A, n);
    OB_CHECK(omp_target_memcpy(got, d, n, 0, 0, omp_get_initial_device(), dev) == 0,
          "%s: omp_target_memcpy failed", what);
    ht_expect_host(got, want, n, what);
    free(got);
}

static void associated(void)
{
    uint64_t r = ht_state(2);
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    size_t n = ht_between(&r, 16, 8000);
    ht_buf b = ht_buf_new(n, 700);
    unsigned char *p = b.p;
    void *d = omp_target_alloc(n, dev);
    OB_CHECK(d != NULL, "assoc: omp_target_alloc failed");
    if (d == NULL)
        return;
    unsigned char *devbytes = ht_malloc(n);
    ht_fill_unlike(devbytes, b.p, n, 701);
    OB_CHECK(omp_target_memcpy(d, devbytes, n, 0, 0, dev, host) == 0, "assoc: fill failed");
    OB_CHECK(omp_target_associate_ptr(p, d, n, 0, dev) == 0, "assoc: associate failed");
    memcpy(b.dev, devbytes, n);

    /* An associated range is mapped with an infinite count: updates copy, maps do not. */
    ht_buf_poison(&b, 702);
#pragma omp target update from(p[0:n])
    ht_buf_copied_from(&b, 0, n);
    ht_buf_expect(&b, 0, n, "assoc: update from");
    ht_buf_host_new(&b, 0, n, 703);
#pragma omp target update to(p[0:n])
    ht_buf_copied_to(&b, 0, n);
    ht_buf_expect(&b, 0, n, "assoc: update to");
    ht_buf_host_new(&b, 0, n, 704);
#pragma omp target enter data map(to : p[0:n])
    ht_buf_expect(&b, 0, n, "assoc: enter data of an associated range copies nothing");
    ht_buf_scramble(&b, 0, n, 705);
#pragma omp target exit data map(from : p[0:n])
    ht_buf_expect(&b, 0, n, "assoc: exit data of an associated range copies nothing");
    expect_device_block(d, b.dev, n, "assoc: the block holds the device copy");
    memcpy(devbytes, b.dev, n); /* what the block must keep once the range leaves it */

    OB_CHECK(omp_target_disassociate_ptr(p, dev) == 0, "assoc: disassociate failed");
    OB_CHECK(ht_is_unmapped(p, n), "assoc: still mapped after disassociate");
    /* The host range is free again: mapping it makes a new entry with a copy. */
    ht_buf_host_new(&b, 0, n, 706);
#pragma omp target enter data map(to : p[0:n])
    ht_buf_copied_to(&b, 0, n);
    ht_buf_expect(&b, 0, n, "assoc: enter data after disassociate");
    ht_buf_scramble(&b, 0, n, 707);
    ht_buf_poison(&b, 708);
#pragma omp target exit data map(from : p[0:n])
    ht_buf_copied_from(&b, 0, n);
    ht_buf_expect_host(&b, "assoc: exit data after disassociate");
    expect_device_block(d, devbytes, n, "assoc: the block kept its bytes");
    ht_report("assoc", b.p, n);
    omp_target_free(d, dev);
    free(devbytes);
    ht_buf_free(&b);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "entry_points");
    legacy();
    associated();
    return ob_check_finish("entry_points");
}
