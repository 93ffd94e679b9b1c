/*
 * The OpenMP hook test of asynchronous and concurrent use:
 *   - chains of `target enter data nowait`, `target nowait` kernels, host tasks,
 *     `target update from/to nowait` and `target exit data nowait`, ordered only by `depend`,
 *     several chains at once inside a parallel region, one outside any (where nowait runs
 *     without a task team), then taskwait;
 *   - `depend` without nowait (a blocking construct inside an undeferred task);
 *   - several host threads, each mapping, updating and unmapping its own arrays round after
 *     round, inside `target data` regions of one shared read-only array that all kernels read.
 * A plain OpenMP program: compare.sh runs it with and without the hook and wants the same
 * report; see BUILD.bazel for the hook statistics it expects.
 *
 * (Without depend, nowait constructs are unordered: libomp may well run an exit data before
 * the enter data issued earlier. Every chain here orders each step with depend(inout).)
 *
 * Usage: async_threads <seed>. Prints checksums of every array's final contents and
 * "async_threads: N checks passed, M failed"; exits 1 on any failure.
 */
#include "hook_test.h"

/* ---- nowait chains -------------------------------------------------------------------------- */

/* One chain's array and every state it goes through, computed on the host beforehand, so the
 * host tasks of the chain only copy and compare. */
typedef struct chain {
    unsigned char *a;  /* the array the chain maps */
    size_t n;
    unsigned char *w0; /* initial data (entered) */
    unsigned char *p1; /* host poison before the update from */
    unsigned char *w1; /* w0 scrambled by kernel 1 (updated from) */
    unsigned char *w2; /* new host data (updated to) */
    unsigned char *p2; /* host poison before the exit */
    unsigned char *w3; /* w2 scrambled by kernel 2 (exited from) */
    uint64_t tag1, tag2;
    size_t bad[3]; /* mismatches seen by kernel 1, the host task, kernel 2 */
} chain;

static chain chain_new(uint64_t salt)
{
    uint64_t r = ht_state(salt);
    chain c;
    memset(&c, 0, sizeof c);
    c.n = ht_between(&r, 1, 5000);
    c.a = ht_malloc(c.n);
    c.w0 = ht_malloc(c.n);
    ht_fill_random(c.w0, c.n, salt + 1);
    memcpy(c.a, c.w0, c.n);
    c.tag1 = salt + 2;
    c.tag2 = salt + 3;
    c.w1 = ht_dup(c.w0, c.n);
    ht_host_scramble(c.w1, c.n, c.tag1);
    c.p1 = ht_malloc(c.n);
    ht_fill_unlike(c.p1, c.w1, c.n, salt + 4);
    c.w2 = ht_malloc(c.n);
    ht_fill_unlike(c.w2, c.w1, c.n, salt + 5);
    c.w3 = ht_dup(c.w2, c.n);
    ht_host_scramble(c.w3, c.n, c.tag2);
    c.p2 = ht_malloc(c.n);
    ht_fill_unlike(c.p2, c.w3, c.n, salt + 6);
    return c;
}

static void chain_free(chain *c)
{
    unsigned char *bufs[] = {c->a, c->w0, c->p1, c->w1, c->w2, c->p2, c->w3};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        free(bufs[k]);
}

/* A nowait kernel of a chain: counts the device bytes that differ from want into *bad, then
 * scrambles the device copy with tag. Ordered after the previous step by depend. */
static void chain_kernel(unsigned char *a, size_t n, const unsigned char *want, size_t *bad,
                         uint64_t tag)
{
    uint64_t s = ht_seed;
#pragma omp target nowait depend(inout : a[0]) map(alloc : a[0:n]) map(to : want[0:n])        \
    map(from : bad[0:1]) firstprivate(n, s, tag)
    {
        size_t count = 0;
        for (size_t j = 0; j < n; j++) {
            count += a[j] != want[j];
            a[j] ^= ht_key(s, tag, j);
        }
        bad[0] = count;
    }
}

/* Issues the whole chain of c as deferred work; nothing has necessarily run on return. */
static void chain_issue(chain *c)
{
    unsigned char *a = c->a;
    size_t n = c->n;
#pragma omp target enter data map(to : a[0:n]) nowait depend(out : a[0])
    chain_kernel(a, n, c->w0, &c->bad[0], c->tag1);
#pragma omp task depend(inout : a[0]) firstprivate(c)
    memcpy(c->a, c->p1, c->n);
#pragma omp target update from(a[0:n]) nowait depend(inout : a[0])
#pragma omp task depend(inout : a[0]) firstprivate(c)
    {
        c->bad[1] = (size_t)(memcmp(c->a, c->w1, c->n) != 0);
        memcpy(c->a, c->w2, c->n);
    }
#pragma omp target update to(a[0:n]) nowait depend(inout : a[0])
    chain_kernel(a, n, c->w2, &c->bad[2], c->tag2);
#pragma omp task depend(inout : a[0]) firstprivate(c)
    memcpy(c->a, c->p2, c->n);
#pragma omp target exit data map(from : a[0:n]) nowait depend(inout : a[0])
}

/* After taskwait: every step saw what it should, and the host holds the last kernel's data. */
static void chain_check(chain *c, const char *what)
{
    OB_CHECK(c->bad[0] == 0, "%s: kernel 1 saw %zu wrong device bytes after enter nowait", what,
          c->bad[0]);
    OB_CHECK(c->bad[1] == 0, "%s: the host task saw wrong bytes after update from nowait", what);
    OB_CHECK(c->bad[2] == 0, "%s: kernel 2 saw %zu wrong device bytes after update to nowait",
          what, c->bad[2]);
    ht_expect_host(c->a, c->w3, c->n, what);
    OB_CHECK(ht_is_unmapped(c->a, c->n), "%s: still mapped after exit data nowait", what);
    ht_report(what, c->a, c->n);
}

enum { NCHAINS = 4 };

/* NCHAINS chains issued by one thread of a team of two, running concurrently. */
static void test_chains_parallel(void)
{
    chain c[NCHAINS];
    for (int k = 0; k < NCHAINS; k++)
        c[k] = chain_new(1000 + 10 * (uint64_t)k);
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        for (int k = 0; k < NCHAINS; k++)
            chain_issue(&c[k]);
#pragma omp taskwait
    }
    for (int k = 0; k < NCHAINS; k++) {
        chain_check(&c[k], "nowait chain in a parallel region");
        chain_free(&c[k]);
    }
}

/* One chain issued outside any parallel region. */
static void test_chain_serial(void)
{
    chain c = chain_new(2000);
    chain_issue(&c);
#pragma omp taskwait
    chain_check(&c, "nowait chain outside a parallel region");
    chain_free(&c);
}

/* ---- depend without nowait ------------------------------------------------------------------ */

/* Blocking constructs with depend: each runs inside an undeferred task, and is the ordinary
 * blocking entry point for the hook. */
static void test_depend_blocking(void)
{
    uint64_t r = ht_state(3000);
    ht_buf b = ht_buf_new(ht_between(&r, 2, 5000), 3001);
    unsigned char *a = b.p;
    size_t n = b.n, x = ht_below(&r, n), y = ht_between(&r, 1, n - x);

#pragma omp target enter data map(to : a[0:n]) depend(out : a[0])
    ht_buf_expect(&b, 0, n, "depend: after enter");
    ht_buf_scramble(&b, 0, n, 3002);
    ht_buf_poison(&b, 3003);
#pragma omp target update from(a[0:n]) depend(inout : a[0])
    ht_buf_copied_from(&b, 0, n);
    ht_buf_expect(&b, 0, n, "depend: after update from");
    ht_buf_host_new(&b, x, y, 3004);
#pragma omp target update to(a[x:y]) depend(inout : a[0])
    ht_buf_copied_to(&b, x, y);
    ht_buf_expect(&b, 0, n, "depend: after update to");
    ht_buf_scramble(&b, 0, n, 3006);
    ht_buf_poison(&b, 3007);
#pragma omp target exit data map(from : a[0:n]) depend(inout : a[0])
    ht_buf_copied_from(&b, 0, n);
    ht_buf_expect_host(&b, "depend: after exit");
    ht_report("depend without nowait", b.p, n);
    ht_buf_free(&b);
}

/* ---- host threads --------------------------------------------------------------------------- */

enum { NTHREADS = 4, ROUNDS = 6 };

/* The shared read-only array every kernel of the thread test reads: s is the mapped host
 * array, dev what its device copy holds. The host array is changed after the enter, so a
 * `target data map(to: s)` that copied although the array is present would show. */
typedef struct shared_ro {
    unsigned char *s;
    const unsigned char *dev;
    size_t n;
} shared_ro;

/* On the device: a[j] ^= s[j % ns] ^ key(tag, j); the same on the host's expected copy. */
static void mix_with_shared(ht_buf *b, shared_ro sh, uint64_t tag)
{
    unsigned char *a = b->p, *s = sh.s;
    size_t n = b->n, ns = sh.n;
    uint64_t seed = ht_seed;
#pragma omp target map(alloc : a[0:n], s[0:ns]) firstprivate(n, ns, seed, tag)
    for (size_t j = 0; j < n; j++)
        a[j] ^= (unsigned char)(s[j % ns] ^ ht_key(seed, tag, j));
    for (size_t j = 0; j < n; j++)
        b->dev[j] ^= (unsigned char)(sh.dev[j % ns] ^ ht_key(seed, tag, j));
}

/* One round of one thread on its own array b: enter, kernel reading the shared array, update
 * from, update to of a sub-range, exit; all inside a target data region of the shared array
 * (a count change on an entry other threads use at the same time). */
static void thread_round(ht_buf *b, shared_ro sh, uint64_t salt)
{
    unsigned char *a = b->p, *s = sh.s;
    size_t n = b->n, ns = sh.n;
    uint64_t r = ht_state(salt);
    size_t x = ht_below(&r, n), y = ht_between(&r, 1, n - x);

#pragma omp target data map(to : s[0:ns])
    {
#pragma omp target enter data map(to : a[0:n])
        ht_buf_expect(b, 0, n, "threads: after enter");
        mix_with_shared(b, sh, salt + 1);
        ht_buf_poison(b, salt + 2);
#pragma omp target update from(a[0:n])
        ht_buf_copied_from(b, 0, n);
        ht_buf_expect(b, 0, n, "threads: after update from");
        ht_buf_host_new(b, x, y, salt + 3);
#pragma omp target update to(a[x:y])
        ht_buf_copied_to(b, x, y);
        ht_buf_expect(b, 0, n, "threads: after update to");
        ht_buf_scramble(b, 0, n, salt + 5);
        ht_buf_poison(b, salt + 6);
#pragma omp target exit data map(from : a[0:n])
        ht_buf_copied_from(b, 0, n);
        ht_buf_expect_host(b, "threads: after exit");
    }
}

/* NTHREADS host threads, ROUNDS rounds each, on arrays made beforehand (so their contents do
 * not depend on scheduling); the report is printed afterwards in a fixed order. */
static void test_threads(void)
{
    uint64_t r = ht_state(4000);
    ht_buf shared = ht_buf_new(ht_between(&r, 1, 5000), 4001);
    shared_ro sh = {shared.p, shared.dev, shared.n};
    ht_buf bufs[NTHREADS][ROUNDS];
    for (int t = 0; t < NTHREADS; t++)
        for (int k = 0; k < ROUNDS; k++)
            bufs[t][k] =
                ht_buf_new(ht_between(&r, 1, 5000), 5000 + 100 * (uint64_t)(t * ROUNDS + k));
    unsigned char *s = sh.s;
    size_t ns = sh.n;

#pragma omp target enter data map(to : s[0:ns])
    ht_buf_host_new(&shared, 0, ns, 4002);
    int team = 0;
    /* One array set per loop index, one index per thread while the team is full size; with
     * a smaller team the work still gets done, and the team-size check says why. */
#pragma omp parallel num_threads(NTHREADS)
    {
#pragma omp single
        team = omp_get_num_threads();
#pragma omp for schedule(static, 1)
        for (int t = 0; t < NTHREADS; t++)
            for (int k = 0; k < ROUNDS; k++)
                thread_round(&bufs[t][k], sh, 20000 + 100 * (uint64_t)(t * ROUNDS + k));
    }
    OB_CHECK(team == NTHREADS, "threads: a team of %d threads, want %d", team, NTHREADS);
    ht_buf_expect(&shared, 0, shared.n, "threads: the shared array after all rounds");
#pragma omp target exit data map(delete : s[0:ns])
    ht_buf_expect_host(&shared, "threads: the shared array after delete");
    for (int t = 0; t < NTHREADS; t++) {
        for (int k = 0; k < ROUNDS; k++) {
            char what[64];
            snprintf(what, sizeof what, "threads: thread %d round %d", t, k);
            ht_report(what, bufs[t][k].p, bufs[t][k].n);
            ht_buf_free(&bufs[t][k]);
        }
    }
    ht_buf_free(&shared);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "async_threads");
    test_chains_parallel();
    test_chain_serial();
    test_depend_blocking();
    test_threads();
    return ob_check_finish("async_threads");
}
