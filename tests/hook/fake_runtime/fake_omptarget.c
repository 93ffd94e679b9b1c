/*
 * A stand-in for libomptarget that only records what reaches it: the hook's version gate is
 * tested against it, built as libomptarget.so.19.1 (a runtime the hook does not batch for) and
 * as libomptarget.so.16 without __tgt_register_requires (an incomplete runtime); and, complete, as
 * libomptarget.so.16 for the hook's handling of odd arrays (null_arrays_test.c). Every entry
 * point the hook looks up is defined at version VERS1.0 (fake_omptarget.map), as in LLVM.
 */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

/* What the last data call received, for the test program to check. */
EXPORT int fake_rt_calls;
EXPORT int fake_rt_last_kind; /* 1 begin, 2 end, 3 update, 4 update nowait, 5 begin nowait,
                                 6 end nowait */
EXPORT int32_t fake_rt_last_count;
EXPORT int64_t fake_rt_last_types[8];
EXPORT void *fake_rt_last_begins[8];
/* The arrays themselves, as passed (NULL ones included). */
EXPORT void *fake_rt_last_arrays[4];
/* Where a begin maps its first item, when a test sets it: from that begin until an end with the
 * same first item, the item's bytes are present and read as mapped there. NULL maps nothing. */
EXPORT char *fake_rt_map_at;

static const char *mapped_begin;
static int64_t mapped_size;

static void follow_mapping(int kind, int32_t n, void **args, int64_t *sizes)
{
    if (fake_rt_map_at == NULL || n < 1 || args == NULL || sizes == NULL)
        return;
    if (kind == 1)
        mapped_begin = args[0], mapped_size = sizes[0];
    else if (kind == 2 && args[0] == mapped_begin)
        mapped_begin = NULL, mapped_size = 0;
}

static char *mapped(const void *p)
{
    const char *c = p;
    if (fake_rt_map_at == NULL || mapped_begin == NULL || c < mapped_begin ||
        c >= mapped_begin + mapped_size)
        return NULL;
    return fake_rt_map_at + (c - mapped_begin);
}

/* Reads the items only when every array is there: programs may pass NULL arrays beside a
 * positive count, and what reaches here must be what they passed. */
static void record(int kind, int32_t n, void **bases, void **args, int64_t *sizes, int64_t *types)
{
    fake_rt_calls++;
    fake_rt_last_kind = kind;
    fake_rt_last_count = n;
    fake_rt_last_arrays[0] = bases;
    fake_rt_last_arrays[1] = args;
    fake_rt_last_arrays[2] = sizes;
    fake_rt_last_arrays[3] = types;
    follow_mapping(kind, n, args, sizes);
    if (args == NULL || types == NULL)
        return;
    for (int32_t i = 0; i < n && i < 8; i++) {
        fake_rt_last_types[i] = types[i];
        fake_rt_last_begins[i] = args[i];
    }
}

#define DATA_PARAMS                                                                             \
    void *loc, int64_t dev, int32_t n, void **bases, void **args, int64_t *sizes,              \
        int64_t *types, void **names, void **mappers
#define UNUSED_DATA (void)loc, (void)dev, (void)names, (void)mappers
#define RECORD(kind) record(kind, n, bases, args, sizes, types)

EXPORT void __tgt_target_data_begin_mapper(DATA_PARAMS) { UNUSED_DATA; RECORD(1); }
EXPORT void __tgt_target_data_end_mapper(DATA_PARAMS) { UNUSED_DATA; RECORD(2); }
EXPORT void __tgt_target_data_update_mapper(DATA_PARAMS) { UNUSED_DATA; RECORD(3); }
EXPORT void __tgt_target_data_begin_nowait_mapper(DATA_PARAMS, int32_t a, void *b, int32_t c, void *d)
{
    UNUSED_DATA, (void)a, (void)b, (void)c, (void)d;
    RECORD(5);
}
EXPORT void __tgt_target_data_end_nowait_mapper(DATA_PARAMS, int32_t a, void *b, int32_t c, void *d)
{
    UNUSED_DATA, (void)a, (void)b, (void)c, (void)d;
    RECORD(6);
}
EXPORT void __tgt_target_data_update_nowait_mapper(DATA_PARAMS, int32_t a, void *b, int32_t c,
                                                   void *d)
{
    UNUSED_DATA, (void)a, (void)b, (void)c, (void)d;
    RECORD(4);
}
EXPORT int __tgt_target_kernel(void *loc, int64_t dev, int32_t teams, int32_t limit, void *host,
                               void *args)
{
    (void)loc, (void)dev, (void)teams, (void)limit, (void)host, (void)args;
    return 0;
}
EXPORT void __tgt_register_lib(void *desc) { (void)desc; }
#ifndef FAKE_OMIT_REGISTER_REQUIRES
EXPORT void __tgt_register_requires(int64_t flags) { (void)flags; }
#endif
EXPORT int omp_target_associate_ptr(const void *h, const void *d, size_t n, size_t off, int dev)
{
    (void)h, (void)d, (void)n, (void)off, (void)dev;
    return 0;
}
EXPORT int omp_target_disassociate_ptr(const void *h, int dev) { (void)h, (void)dev; return 0; }
EXPORT int omp_target_is_present(const void *p, int dev) { (void)dev; return mapped(p) != NULL; }
EXPORT void *omp_get_mapped_ptr(const void *p, int dev) { (void)dev; return mapped(p); }
EXPORT int omp_get_num_devices(void) { return 1; }
EXPORT int omp_get_default_device(void) { return 0; }
EXPORT int omp_get_initial_device(void) { return 1; }
