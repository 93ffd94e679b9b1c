/*
 * The hook's start-up check against fake runtimes (fake_omptarget.c): with a runtime that is
 * not libomptarget 16, or one that lacks an entry point, every call must reach the runtime
 * unchanged, the statistics must say pass-through, and the reason must be printed once
 * (run_version_gate.sh counts the lines).
 * Usage: version_gate_test <expected runtime major>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../support/check.h" /* relative: built by a genrule's gcc */
#include "ompbatch.h"

void __tgt_target_data_begin_mapper(void *, int64_t, int32_t, void **, void **, int64_t *,
                                    int64_t *, void **, void **);
void __tgt_target_data_update_mapper(void *, int64_t, int32_t, void **, void **, int64_t *,
                                     int64_t *, void **, void **);
void __tgt_target_data_update_nowait_mapper(void *, int64_t, int32_t, void **, void **,
                                            int64_t *, int64_t *, void **, void **, int32_t,
                                            void *, int32_t, void *);
void __tgt_target_data_end_mapper(void *, int64_t, int32_t, void **, void **, int64_t *,
                                  int64_t *, void **, void **);
extern int fake_rt_calls, fake_rt_last_kind;
extern int32_t fake_rt_last_count;
extern int64_t fake_rt_last_types[8];
extern void *fake_rt_last_begins[8];


int main(int argc, char **argv)
{
    int want_major = argc > 1 ? atoi(argv[1]) : -1;
    char a[64], b[32];
    void *bases[2] = {a, b}, *begins[2] = {a, b};
    int64_t sizes[2] = {sizeof a, sizeof b};
    int64_t to[2] = {0x1, 0x1}, from[2] = {0x2, 0x2};
    int calls = 0;
    __tgt_target_data_begin_mapper(NULL, 0, 2, bases, begins, sizes, to, NULL, NULL);
    OB_CHECK(fake_rt_calls == ++calls && fake_rt_last_kind == 1, "begin did not reach the runtime");
    OB_CHECK(fake_rt_last_count == 2 && fake_rt_last_types[0] == 0x1 && fake_rt_last_types[1] == 0x1,
          "begin reached the runtime changed: %d items, types %#llx %#llx", fake_rt_last_count,
          (long long)fake_rt_last_types[0], (long long)fake_rt_last_types[1]);
    __tgt_target_data_update_mapper(NULL, 0, 2, bases, begins, sizes, from, NULL, NULL);
    OB_CHECK(fake_rt_calls == ++calls && fake_rt_last_kind == 3 && fake_rt_last_count == 2 &&
              fake_rt_last_begins[1] == b,
          "update did not reach the runtime unchanged");
    __tgt_target_data_update_nowait_mapper(NULL, 0, 2, bases, begins, sizes, to, NULL, NULL, 0,
                                           NULL, 0, NULL);
    OB_CHECK(fake_rt_calls == ++calls && fake_rt_last_kind == 4, "nowait update was not forwarded "
                                                               "to the nowait entry point");
    __tgt_target_data_end_mapper(NULL, 0, 2, bases, begins, sizes, from, NULL, NULL);
    OB_CHECK(fake_rt_calls == ++calls && fake_rt_last_kind == 2 && fake_rt_last_types[0] == 0x2,
          "end did not reach the runtime unchanged");

    ompbatch_hook_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    OB_CHECK(ompbatch_hook_get_stats(&s) == OMPBATCH_OK, "get_stats failed");
    OB_CHECK(s.state == OMPBATCH_HOOK_PASS_THROUGH, "state %d, want pass-through", s.state);
    OB_CHECK(s.runtime_major == want_major, "runtime_major %d, want %d", s.runtime_major, want_major);
    OB_CHECK(s.constructs == 0 && s.update_batched == 0 && s.enter_batched == 0 && s.batches == 0,
          "the hook counted or batched constructs while passing through");
    /* Turning it on does not make an unknown runtime known. */
    OB_CHECK(ompbatch_hook_set_enabled(1) == 1, "set_enabled(1) did not return the previous 1");
    __tgt_target_data_update_mapper(NULL, 0, 2, bases, begins, sizes, to, NULL, NULL);
    OB_CHECK(fake_rt_calls == ++calls && fake_rt_last_count == 2, "update not forwarded whole");
    OB_CHECK(ompbatch_hook_get_stats(&s) == OMPBATCH_OK && s.state == OMPBATCH_HOOK_PASS_THROUGH,
          "state changed after set_enabled(1)");
    OB_CHECK(ompbatch_hook_set_enabled(2) == OMPBATCH_ERR_INVALID_ARGUMENT, "set_enabled(2) accepted");
    printf("version gate (runtime %d): %s\n", want_major, ob_check_failures() ? "FAILED" : "passed");
    return ob_check_failures() ? 1 : 0;
}
