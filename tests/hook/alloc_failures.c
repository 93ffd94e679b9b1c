/*
 * The hook when the library cannot allocate: every allocation of a construct's life fails in
 * turn (the library's test switch, linked in from libompbatch.a), and the program's results
 * must stay exact each time. The hook then forwards what it cannot handle (no scratch, no
 * staging, no batch), hands back copies it had taken over (`to` taken off at a begin, a failed
 * batch), or simply knows less (a mirror entry it could not record). Then the same for strided
 * updates, whose pieces and rectangle the hook allocates too.
 * Usage: alloc_failures <seed>   (hooked build only: it calls the library's test switch)
 */
#include "hook_test.h"

void ob_alloc_fail_after_for_testing(long successes);

enum { BUFFERS = 6 };

/* One round of the constructs the hook takes over: enter, update from, update to, exit. */
static void round_trip(long allowed, uint64_t salt)
{
    uint64_t r = ht_state(salt);
    ht_buf b[BUFFERS];
    for (int i = 0; i < BUFFERS; i++)
        b[i] = ht_buf_new(ht_between(&r, 1, 3000), salt * 100 + (uint64_t)i);
    unsigned char *p0 = b[0].p, *p1 = b[1].p, *p2 = b[2].p, *p3 = b[3].p, *p4 = b[4].p,
                  *p5 = b[5].p;
    size_t n0 = b[0].n, n1 = b[1].n, n2 = b[2].n, n3 = b[3].n, n4 = b[4].n, n5 = b[5].n;

    ob_alloc_fail_after_for_testing(allowed);
#pragma omp target enter data map(to : p0[0:n0], p1[0:n1], p2[0:n2], p3[0:n3], p4[0:n4], p5[0:n5])
    ob_alloc_fail_after_for_testing(-1);
    for (int i = 0; i < BUFFERS; i++) {
        ht_buf_expect(&b[i], 0, b[i].n, "after enter");
        ht_buf_scramble(&b[i], 0, b[i].n, salt * 100 + 10 + (uint64_t)i);
        ht_buf_poison(&b[i], salt * 100 + 20 + (uint64_t)i);
    }
    ob_alloc_fail_after_for_testing(allowed);
#pragma omp target update from(p0[0:n0], p1[0:n1], p2[0:n2], p3[0:n3], p4[0:n4], p5[0:n5])
    ob_alloc_fail_after_for_testing(-1);
    for (int i = 0; i < BUFFERS; i++) {
        ht_buf_copied_from(&b[i], 0, b[i].n);
        ht_buf_expect(&b[i], 0, b[i].n, "after update from");
        ht_buf_host_new(&b[i], 0, b[i].n, salt * 100 + 30 + (uint64_t)i);
    }
    ob_alloc_fail_after_for_testing(allowed);
#pragma omp target update to(p0[0:n0], p1[0:n1], p2[0:n2], p3[0:n3], p4[0:n4], p5[0:n5])
    ob_alloc_fail_after_for_testing(-1);
    for (int i = 0; i < BUFFERS; i++) {
        ht_buf_copied_to(&b[i], 0, b[i].n);
        ht_buf_expect(&b[i], 0, b[i].n, "after update to");
        ht_buf_scramble(&b[i], 0, b[i].n, salt * 100 + 40 + (uint64_t)i);
        ht_buf_poison(&b[i], salt * 100 + 50 + (uint64_t)i);
    }
    ob_alloc_fail_after_for_testing(allowed);
#pragma omp target exit data map(from : p0[0:n0], p1[0:n1], p2[0:n2], p3[0:n3], p4[0:n4], p5[0:n5])
    ob_alloc_fail_after_for_testing(-1);
    for (int i = 0; i < BUFFERS; i++) {
        ht_buf_copied_from(&b[i], 0, b[i].n);
        ht_buf_expect_host(&b[i], "after exit");
        ht_buf_free(&b[i]);
    }
}

enum { ROWS = 64, COLS = 48 };

/* Strided updates of a mapped grid, columns of it (pieces the hook reads from the descriptors
 * and copies as one rectangle): from two columns, to every other row of a third. */
static void strided_round(long allowed, uint64_t salt)
{
    ht_buf b = ht_buf_new(ROWS * COLS, salt * 100);
    unsigned char(*g)[COLS] = (unsigned char(*)[COLS])(void *)b.p;
    unsigned char(*h)[COLS] = g; /* one variable per item of a construct */
#pragma omp target enter data map(to : g[0:ROWS][0:COLS])
    ht_buf_scramble(&b, 0, b.n, salt * 100 + 1);
    ht_buf_poison(&b, salt * 100 + 2);
    ob_alloc_fail_after_for_testing(allowed);
#pragma omp target update from(g[0:ROWS][5:1], h[0:ROWS][9:1])
    ob_alloc_fail_after_for_testing(-1);
    for (size_t r = 0; r < ROWS; r++) {
        ht_buf_copied_from(&b, r * COLS + 5, 1);
        ht_buf_copied_from(&b, r * COLS + 9, 1);
    }
    ht_buf_expect(&b, 0, b.n, "after strided update from");
    ht_buf_host_new(&b, 0, b.n, salt * 100 + 3);
    ob_alloc_fail_after_for_testing(allowed);
#pragma omp target update to(g[0:ROWS:2][7:1])
    ob_alloc_fail_after_for_testing(-1);
    for (size_t r = 0; r < ROWS; r += 2)
        ht_buf_copied_to(&b, r * COLS + 7, 1);
    ht_buf_expect(&b, 0, b.n, "after strided update to");
#pragma omp target exit data map(delete : g[0:ROWS][0:COLS])
    ht_buf_expect_host(&b, "after the grid's exit");
    ht_buf_free(&b);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "alloc_failures");
    /* From no allocation allowed to more than a construct makes: each one fails in turn. */
    for (long allowed = 0; allowed < 40; allowed++)
        round_trip(allowed, (uint64_t)allowed + 1);
    for (long allowed = 0; allowed < 24; allowed++)
        strided_round(allowed, (uint64_t)allowed + 50);
    return ob_check_finish("alloc_failures");
}
