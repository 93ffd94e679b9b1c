/*
 * The hook, active over a complete libomptarget.so.16 stand-in (fake_omptarget.c), given data
 * calls whose arrays it must not read: a positive count beside a NULL bases, begins, sizes or
 * types array (one at a time and all at once), and a negative count. Each call must reach the
 * runtime exactly once with the very arrays and count the program passed, through the entry
 * point the program called, and the hook must not count it as a construct of its own. A good
 * call afterwards shows the hook was live all along (it is counted).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../support/check.h" /* relative: built by a genrule's gcc */
#include "ompbatch.h"

typedef void data_fn(void *, int64_t, int32_t, void **, void **, int64_t *, int64_t *, void **,
                     void **);
typedef void nowait_fn(void *, int64_t, int32_t, void **, void **, int64_t *, int64_t *,
                       void **, void **, int32_t, void *, int32_t, void *);
data_fn __tgt_target_data_begin_mapper, __tgt_target_data_end_mapper,
    __tgt_target_data_update_mapper;
nowait_fn __tgt_target_data_begin_nowait_mapper, __tgt_target_data_end_nowait_mapper,
    __tgt_target_data_update_nowait_mapper;
extern int fake_rt_calls, fake_rt_last_kind;
extern int32_t fake_rt_last_count;
extern void *fake_rt_last_arrays[4];


static const struct entry {
    const char *name;
    data_fn *blocking;
    nowait_fn *nowait;
    int kind; /* what fake_omptarget.c records for it */
} entries[] = {
    {"begin", __tgt_target_data_begin_mapper, NULL, 1},
    {"end", __tgt_target_data_end_mapper, NULL, 2},
    {"update", __tgt_target_data_update_mapper, NULL, 3},
    {"begin nowait", NULL, __tgt_target_data_begin_nowait_mapper, 5},
    {"end nowait", NULL, __tgt_target_data_end_nowait_mapper, 6},
    {"update nowait", NULL, __tgt_target_data_update_nowait_mapper, 4},
};

/* The hook's construct count; it must be active (loaded by the first call, runtime known). */
static uint64_t constructs(void)
{
    ompbatch_hook_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    OB_CHECK(ompbatch_hook_get_stats(&s) == OMPBATCH_OK, "get_stats failed");
    OB_CHECK(s.state == OMPBATCH_HOOK_ACTIVE, "hook state %d, want active", s.state);
    OB_CHECK(s.runtime_major == 16, "runtime_major %d, want 16", s.runtime_major);
    return s.constructs;
}

static void call(const struct entry *e, int32_t n, void **arrays[4])
{
    void **bases = arrays[0], **begins = arrays[1];
    int64_t *sizes = (int64_t *)arrays[2], *types = (int64_t *)arrays[3];
    if (e->blocking != NULL)
        e->blocking(NULL, 0, n, bases, begins, sizes, types, NULL, NULL);
    else
        e->nowait(NULL, 0, n, bases, begins, sizes, types, NULL, NULL, 0, NULL, 0, NULL);
}

int main(void)
{
    char a[64], b[32];
    void *bases[2] = {a, b}, *begins[2] = {a, b};
    int64_t sizes[2] = {sizeof a, sizeof b};
    int64_t types[2] = {0x1, 0x1}; /* TO */
    static const char *const array_names[4] = {"bases", "begins", "sizes", "types"};
    int calls = 0, tried = 0;
    for (size_t e = 0; e < sizeof entries / sizeof entries[0]; e++) {
        /* variant 0..3: that array NULL; 4: all NULL; 5: all there, count -1 */
        for (int variant = 0; variant < 6; variant++) {
            void **arrays[4] = {bases, begins, (void **)sizes, (void **)types};
            for (int i = 0; i < 4; i++)
                if (variant == i || variant == 4)
                    arrays[i] = NULL;
            int32_t n = variant == 5 ? -1 : 2;
            call(&entries[e], n, arrays);
            tried++;
            OB_CHECK(fake_rt_calls == ++calls, "%s, variant %d: reached the runtime %d times, want 1",
                  entries[e].name, variant, fake_rt_calls - calls + 1);
            calls = fake_rt_calls;
            OB_CHECK(fake_rt_last_kind == entries[e].kind, "%s, variant %d: arrived as kind %d",
                  entries[e].name, variant, fake_rt_last_kind);
            OB_CHECK(fake_rt_last_count == n, "%s, variant %d: count %d, want %d", entries[e].name,
                  variant, fake_rt_last_count, n);
            for (int i = 0; i < 4; i++)
                OB_CHECK(fake_rt_last_arrays[i] == (void *)arrays[i],
                      "%s, variant %d: the %s array changed on its way", entries[e].name,
                      variant, array_names[i]);
        }
    }
    OB_CHECK(constructs() == 0, "the hook counted calls it must leave to the runtime");
    /* A good update of items the runtime does not hold: the hook takes it (counts it) and,
     * finding nothing mapped, hands it to the runtime. */
    __tgt_target_data_update_mapper(NULL, 0, 2, bases, begins, sizes, types, NULL, NULL);
    OB_CHECK(constructs() == 1, "a good update was not seen by the hook");
    OB_CHECK(fake_rt_calls > calls, "the good update did not reach the runtime");
    printf("null arrays: %d odd calls forwarded unchanged: %s\n", tried,
           ob_check_failures() ? "FAILED" : "passed");
    return ob_check_failures() ? 1 : 0;
}
