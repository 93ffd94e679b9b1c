/*
 * The OpenMP hook test of `requires unified_shared_memory`: maps then yield host pointers, so
 * the hook must forward every call (statistics state=pass-through) and the program must
 * behave exactly as without it. On the host-offload target the runtime accepts the requirement
 * and runs the regions on host memory.
 * Usage: unified_memory <seed>
 */
/* Before anything else: the requirement must precede every target construct, and
 * hook_test.h has some. */
#pragma omp requires unified_shared_memory

#include "hook_test.h"

int main(int argc, char **argv)
{
    ht_init(argc, argv, "unified_memory");
    uint64_t r = ht_state(1);
    size_t n = ht_between(&r, 1, 5000);
    unsigned char *p = ht_malloc(n);
    ht_fill_random(p, n, 2);
    unsigned char *want = ht_dup(p, n);
#pragma omp target enter data map(to : p[0:n])
#pragma omp target teams distribute parallel for
    for (size_t j = 0; j < n; j++)
        p[j] ^= ht_key(ht_seed, 3, j);
    ht_host_scramble(want, n, 3);
#pragma omp target update from(p[0:n])
#pragma omp target exit data map(from : p[0:n])
    ht_expect_host(p, want, n, "unified_memory: the region's writes");
    ht_report("unified_memory", p, n);
    free(p);
    free(want);
    return ob_check_finish("unified_memory");
}
