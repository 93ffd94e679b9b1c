/*
 * A program with no OpenMP offload runtime at all, that uses the API and turns the hook off
 * and on (as a library linking ompbatch for its batch API may): the hook has nothing to hook,
 * which is no reason to warn. run_no_runtime.sh checks that stderr stays empty by default and
 * that OMPBATCH_VERBOSE=1 says that no runtime is present.
 * Usage: no_runtime_test
 */
#include <stdio.h>
#include <string.h>

#include "../../support/check.h" /* relative: built by a genrule's gcc */
#include "ompbatch.h"

int main(void)
{
    OB_CHECK(ompbatch_hook_set_enabled(0) == 1, "set_enabled(0) did not return the previous 1");
    OB_CHECK(ompbatch_hook_set_enabled(1) == 0, "set_enabled(1) did not return the previous 0");
    ompbatch_hook_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    OB_CHECK(ompbatch_hook_get_stats(&s) == OMPBATCH_OK, "get_stats failed");
    OB_CHECK(s.state == OMPBATCH_HOOK_NOT_LOADED, "state %d, want not-loaded (no entry point "
                                               "was called)", s.state);
    /* The API works as usual. */
    char src[64], dst[64];
    memset(src, 0x3C, sizeof src);
    memset(dst, 0xA5, sizeof dst);
    void *d[1] = {dst};
    const void *c[1] = {src};
    size_t n[1] = {sizeof src};
    OB_CHECK(ompbatch_target_memcpy_batch(d, c, n, NULL, NULL, 1, OMPBATCH_HOST_DEVICE,
                                       OMPBATCH_HOST_DEVICE) == OMPBATCH_OK,
          "a host copy failed: %s", ompbatch_last_error());
    OB_CHECK(memcmp(dst, src, sizeof src) == 0, "the host copy's bytes differ");
    printf("no runtime: %s\n", ob_check_failures() ? "FAILED" : "passed");
    return ob_check_failures() ? 1 : 0;
}
