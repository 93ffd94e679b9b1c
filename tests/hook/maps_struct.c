/*
 * The OpenMP hook test of what the hook must leave to the runtime, each next to plain arrays
 * in the same constructs (which the hook may copy itself, so a construct mixes both):
 *   - structs with pointer members attached on the device (struct then s.p[0:n]; both in one
 *     clause; a pointer to a struct), updates of the struct and of a member, whose pointer
 *     field must stay the device address on the device and the host address on the host;
 *   - struct entries created by those forwarded begins, whose data and members later updates
 *     and exits reach (the hook follows their reference counts);
 *   - `declare mapper` (named, default, on an array of structs);
 *   - the `present` modifier on update to/from, enter and exit, where the data is present;
 *   - `declare target` globals updated with target update, and entered and exited (their
 *     infinite reference count means no copy without `always`).
 * A plain OpenMP program: compare.sh runs it with and without the hook and wants the same
 * report; see BUILD.bazel for the hook statistics it expects.
 *
 * Usage: maps_struct <seed>. Prints checksums and values of every sub-case and
 * "maps_struct: N checks passed, M failed"; exits 1 on any failure.
 */
#include <stddef.h>

#include "hook_test.h"

/* ---- a struct with an attached pointer ------------------------------------------------------ */

typedef struct vec {
    int n;        /* p[0:n] */
    int tag;      /* changed on both sides, to see which side's struct a copy brought */
    double *p;    /* attached on the device */
    double extra; /* a field after the pointer */
} vec;

/* What a struct check on the device found. */
typedef struct vec_seen {
    int pointer_ok; /* the device struct's p is the device copy of the host p[0:n] */
    int n, tag;
    size_t data_mismatches;
} vec_seen;

/* A vec whose p[0:n] and expected contents are random. */
typedef struct vec_case {
    vec s;
    double *host_p;      /* the host address s.p must keep on the host */
    unsigned char *pdev; /* what the device copy of p[0:n] must hold */
    unsigned char *phost;
} vec_case;

static vec_case vec_case_new(uint64_t salt)
{
    uint64_t r = ht_state(salt);
    vec_case c;
    c.s.n = (int)ht_between(&r, 1, 600);
    c.s.tag = (int)ht_between(&r, 1, 1 << 20);
    c.s.p = ht_malloc((size_t)c.s.n * sizeof(double));
    c.s.extra = (double)ht_below(&r, 1000) / 4.0;
    ht_fill_random(c.s.p, (size_t)c.s.n * sizeof(double), salt + 1);
    c.host_p = c.s.p;
    c.pdev = ht_dup(c.s.p, (size_t)c.s.n * sizeof(double));
    c.phost = ht_dup(c.s.p, (size_t)c.s.n * sizeof(double));
    return c;
}

static size_t vec_bytes(const vec_case *c)
{
    return (size_t)c->s.n * sizeof(double);
}

static void vec_case_free(vec_case *c)
{
    free(c->host_p);
    free(c->pdev);
    free(c->phost);
}

/* On the device, through the device copy of *sp (which must be mapped): checks the pointer,
 * n, tag and p[0:n] against want, then scrambles p[0:n] with scramble_tag and sets tag to
 * new_tag. Returns what it saw. */
static vec_seen vec_device_step(vec *sp, const unsigned char *want, uintptr_t want_dev_p,
                                int new_tag, uint64_t scramble_tag)
{
    vec_seen seen = {0, 0, 0, 0};
    size_t nb = (size_t)sp->n * sizeof(double);
    uint64_t s = ht_seed;
    if (!ht_is_mapped(sp, sizeof *sp)) {
        OB_CHECK(0, "struct at %p is not mapped", (void *)sp);
        return seen;
    }
#pragma omp target map(alloc : sp[0:1]) map(to : want[0:nb]) map(tofrom : seen)                \
    firstprivate(nb, s, want_dev_p, new_tag, scramble_tag)
    {
        seen.pointer_ok = (uintptr_t)sp->p == want_dev_p;
        seen.n = sp->n;
        seen.tag = sp->tag;
        unsigned char *b = (unsigned char *)sp->p;
        if (seen.pointer_ok && (size_t)sp->n * sizeof(double) == nb) {
            for (size_t j = 0; j < nb; j++) {
                seen.data_mismatches += b[j] != want[j];
                b[j] ^= ht_key(s, scramble_tag, j);
            }
        }
        sp->tag = new_tag;
    }
    return seen;
}

/* vec_device_step on c, checking what it saw: the device struct must hold want_tag and the
 * attached device address of c's data. Records the scramble and the new tag. */
static void vec_step(vec_case *c, vec *sp, int want_tag, int new_tag, uint64_t scramble_tag,
                     const char *what)
{
    uintptr_t dev_p = (uintptr_t)omp_get_mapped_ptr(c->host_p, omp_get_default_device());
    vec_seen seen = vec_device_step(sp, c->pdev, dev_p, new_tag, scramble_tag);
    OB_CHECK(dev_p != 0 && dev_p != (uintptr_t)c->host_p,
          "%s: the data has no separate device copy", what);
    OB_CHECK(seen.pointer_ok, "%s: the device struct's pointer is not the attached device address",
          what);
    OB_CHECK(seen.n == c->s.n && seen.tag == want_tag, "%s: device struct n %d tag %d, want %d %d",
          what, seen.n, seen.tag, c->s.n, want_tag);
    OB_CHECK(seen.data_mismatches == 0, "%s: %zu bytes of the device data differ", what,
          seen.data_mismatches);
    ht_host_scramble(c->pdev, vec_bytes(c), scramble_tag);
}

/* The host struct must hold tag and the host data pointer (restored by the runtime after any
 * copy of the struct back), and its data phost. */
static void vec_expect_host(const vec_case *c, const vec *s, int tag, const char *what)
{
    OB_CHECK(s->p == c->host_p, "%s: the host struct's pointer changed", what);
    OB_CHECK(s->n == c->s.n && s->tag == tag, "%s: host struct n %d tag %d, want %d %d", what,
          s->n, s->tag, c->s.n, tag);
    ht_expect_host(c->host_p, c->phost, vec_bytes(c), what);
}

/* Poisons the host data of c (before a copy back). */
static void vec_poison(vec_case *c, uint64_t salt)
{
    ht_fill_unlike(c->host_p, c->host_p, vec_bytes(c), salt);
    memcpy(c->phost, c->host_p, vec_bytes(c));
}

/* The struct, then its data s.p[0:n] in a later construct (attach to a present struct),
 * alongside a plain array w in the same constructs; updates of the data, of the whole struct
 * (whose device pointer must survive `update to` and whose host pointer must survive
 * `update from`) and of one member. */
static void test_attach_separate(void)
{
    vec_case c = vec_case_new(1);
    uint64_t r = ht_state(2);
    ht_buf w = ht_buf_new(ht_between(&r, 1, 5000), 3);
    unsigned char *wp = w.p;
    size_t wn = w.n;
    int tag0 = c.s.tag;

#pragma omp target enter data map(to : c.s)
#pragma omp target enter data map(to : c.s.p[0:c.s.n], wp[0:wn])
    ht_buf_expect(&w, 0, wn, "attach: w after enter");
    vec_step(&c, &c.s, tag0, tag0 + 1, 10, "attach: after enter");

    ht_buf_scramble(&w, 0, wn, 11);
    ht_buf_poison(&w, 12);
    vec_poison(&c, 13);
#pragma omp target update from(c.s.p[0:c.s.n], wp[0:wn])
    ht_buf_copied_from(&w, 0, wn);
    memcpy(c.phost, c.pdev, vec_bytes(&c));
    ht_buf_expect(&w, 0, wn, "attach: w after update from");
    vec_expect_host(&c, &c.s, tag0, "attach: after update from of the data");

#pragma omp target update from(c.s)
    vec_expect_host(&c, &c.s, tag0 + 1, "attach: after update from of the struct");

    c.s.tag = tag0 + 2;
    c.s.extra += 1.0;
#pragma omp target update to(c.s)
    vec_step(&c, &c.s, tag0 + 2, tag0 + 3, 14, "attach: after update to of the struct");

    c.s.tag = tag0 + 4;
#pragma omp target update to(c.s.tag)
    vec_step(&c, &c.s, tag0 + 4, tag0 + 5, 15, "attach: after update to of a member");

    /* Two members around the attached pointer: clang's combined entry spans the pointer, and
     * moves nothing; the pointer must stay the device address there and the host one here. */
    c.s.tag = tag0 + 6;
    c.s.extra += 2.0;
#pragma omp target update to(c.s.tag, c.s.extra)
    vec_step(&c, &c.s, tag0 + 6, tag0 + 7, 19, "attach: after update to of two members");
    c.s.tag = -1;
#pragma omp target update from(c.s.tag, c.s.extra)
    vec_expect_host(&c, &c.s, tag0 + 7, "attach: after update from of two members");

    ht_buf_scramble(&w, 0, wn, 16);
    ht_buf_poison(&w, 17);
    vec_poison(&c, 18);
    c.s.tag = tag0 + 8;
#pragma omp target exit data map(from : c.s.p[0:c.s.n], wp[0:wn])
    ht_buf_copied_from(&w, 0, wn);
    memcpy(c.phost, c.pdev, vec_bytes(&c));
    ht_buf_expect_host(&w, "attach: w after exit");
    vec_expect_host(&c, &c.s, tag0 + 8, "attach: after exit of the data");

#pragma omp target exit data map(from : c.s)
    vec_expect_host(&c, &c.s, tag0 + 7, "attach: after exit of the struct");
    OB_CHECK(ht_is_unmapped(&c.s, sizeof c.s), "attach: struct still mapped");
    printf("attach: n %d tag %d extra %.17g\n", c.s.n, c.s.tag, c.s.extra);
    ht_report("attach: data", c.host_p, vec_bytes(&c));
    ht_report("attach: w", w.p, wn);
    vec_case_free(&c);
    ht_buf_free(&w);
}

/* The struct and its data in one clause, and a heap struct through a pointer (ps[0:1] with
 * ps->p[0:n]). */
static void test_attach_combined(void)
{
    vec_case c = vec_case_new(20);
    vec_case h = vec_case_new(21);
    vec *ps = ht_malloc(sizeof *ps);
    *ps = h.s;
    int tag = c.s.tag, htag = h.s.tag;

#pragma omp target enter data map(to : c.s, c.s.p[0:c.s.n])
#pragma omp target enter data map(to : ps[0:1], ps->p[0:ps->n])
    vec_step(&c, &c.s, tag, tag + 1, 22, "combined: struct");
    vec_step(&h, ps, htag, htag + 1, 23, "combined: struct through a pointer");

    vec_poison(&c, 24);
    vec_poison(&h, 25);
#pragma omp target exit data map(from : c.s, c.s.p[0:c.s.n])
#pragma omp target exit data map(from : ps[0:1], ps->p[0:ps->n])
    memcpy(c.phost, c.pdev, vec_bytes(&c));
    memcpy(h.phost, h.pdev, vec_bytes(&h));
    vec_expect_host(&c, &c.s, tag + 1, "combined: struct after exit");
    vec_expect_host(&h, ps, htag + 1, "combined: struct through a pointer after exit");
    OB_CHECK(ht_is_unmapped(&c.s, sizeof c.s) && ht_is_unmapped(ps, sizeof *ps),
          "combined: structs still mapped");
    ht_report("combined: data", c.host_p, vec_bytes(&c));
    ht_report("combined: data through a pointer", h.host_p, vec_bytes(&h));
    free(ps);
    vec_case_free(&c);
    vec_case_free(&h);
}

/* ---- updates of struct members --------------------------------------------------------------- */

typedef struct duo {
    double a[40];
    int mid;             /* never named: must not move */
    unsigned char b[200];
} duo;

/* The bytes of d[k]'s member at offset off, size n, copied from `from` to `to` (expectations). */
static void duo_member_copied(unsigned char *to, const unsigned char *from, int k, size_t off,
                              size_t n)
{
    size_t at = (size_t)k * sizeof(duo) + off;
    memcpy(to + at, from + at, n);
}

#define DUO_A offsetof(duo, a), sizeof(((duo *)0)->a)
#define DUO_B offsetof(duo, b), sizeof(((duo *)0)->b)

/* An array of duos and what its host and device copies must hold. */
typedef struct duo_case {
    duo *d;
    unsigned char *dev, *host;
    size_t bytes;
} duo_case;

/* New data on both sides, unlike before and unlike each other: the device copy scrambled by a
 * kernel, the host array poisoned. */
static void duo_new_data(duo_case *c, uint64_t salt)
{
    ht_device_scramble(c->d, c->bytes, salt);
    ht_host_scramble(c->dev, c->bytes, salt);
    ht_fill_unlike(c->d, c->d, c->bytes, salt + 1);
    memcpy(c->host, c->d, c->bytes);
}

static void duo_expect(const duo_case *c, const char *what)
{
    ht_expect_host(c->d, c->host, c->bytes, what);
    ht_expect_device(c->d, c->dev, c->bytes, what);
}

/* Updates naming members of several structs of a mapped array (clang adds each struct's
 * combined entry, which moves nothing, around the members it names): `to`, `from`, both in
 * one construct, and members of an array that is not mapped (no copy either way). Every byte of
 * the array, the members' and those between and around them, is checked on both sides. */
static void test_member_updates(void)
{
    enum { N = 6 };
    duo_case c = {.bytes = N * sizeof(duo)};
    c.d = ht_malloc(c.bytes);
    ht_fill_random(c.d, c.bytes, 300);
    c.dev = ht_dup(c.d, c.bytes);
    c.host = ht_malloc(c.bytes);
    duo *d = c.d;
    /* One pointer per struct: a clause may not name two elements of one array. */
    duo *d0 = &d[0], *d1 = &d[1], *d2 = &d[2], *d3 = &d[3], *d4 = &d[4], *d5 = &d[5];
#pragma omp target enter data map(to : d[0:N])
    ht_fill_unlike(d, c.dev, c.bytes, 301);
    memcpy(c.host, d, c.bytes);
#pragma omp target update to(d1->a, d1->b, d2->a, d2->b, d4->b)
    duo_member_copied(c.dev, c.host, 1, DUO_A);
    duo_member_copied(c.dev, c.host, 1, DUO_B);
    duo_member_copied(c.dev, c.host, 2, DUO_A);
    duo_member_copied(c.dev, c.host, 2, DUO_B);
    duo_member_copied(c.dev, c.host, 4, DUO_B);
    duo_expect(&c, "members: after update to");

    duo_new_data(&c, 302);
#pragma omp target update from(d0->b, d3->a, d3->b, d5->a)
    duo_member_copied(c.host, c.dev, 0, DUO_B);
    duo_member_copied(c.host, c.dev, 3, DUO_A);
    duo_member_copied(c.host, c.dev, 3, DUO_B);
    duo_member_copied(c.host, c.dev, 5, DUO_A);
    duo_expect(&c, "members: after update from");

    duo_new_data(&c, 304);
#pragma omp target update to(d2->b, d5->a) from(d1->a, d4->b)
    duo_member_copied(c.dev, c.host, 2, DUO_B);
    duo_member_copied(c.dev, c.host, 5, DUO_A);
    duo_member_copied(c.host, c.dev, 1, DUO_A);
    duo_member_copied(c.host, c.dev, 4, DUO_B);
    duo_expect(&c, "members: after update to and from");
#pragma omp target exit data map(delete : d[0:N])
    OB_CHECK(ht_is_unmapped(d, c.bytes), "members: still mapped");

    /* Not mapped: the runtime copies nothing and says nothing. */
    memcpy(c.host, d, c.bytes);
#pragma omp target update to(d1->a, d1->b) from(d3->b)
    ht_expect_host(d, c.host, c.bytes, "members: host after updates of unmapped members");
    ht_report("members: array", d, c.bytes);
    free(c.dev);
    free(c.host);
    free(d);
}

/* ---- struct entries the hook learns from the begins it forwards ----------------------------- */

typedef struct grid {
    int n;
    double *u;      /* u[0:n], attached on the device */
    double halo[6]; /* in the struct's entry, which holds an attached pointer */
} grid;

typedef struct params {
    int iters;
    double coef[12];
    char label[10];
} params;

/* A struct with its data in one clause, then a loop of regions through the struct and
 * updates of the data (the hook learnt the data's entry from the forwarded begin, so it may
 * copy the updates itself); a struct without pointers entered twice member by member, updated
 * and exited member by member, whose reference count the hook must follow exactly: the first
 * exit copies nothing back, the second everything. */
static void test_struct_learnt(void)
{
    uint64_t r = ht_state(70);
    grid g;
    g.n = (int)ht_between(&r, 16, 3000);
    size_t ub = (size_t)g.n * sizeof(double);
    g.u = ht_malloc(ub);
    ht_fill_random(g.u, ub, 71);
    ht_fill_random(g.halo, sizeof g.halo, 72);
    double *host_u = g.u;
    unsigned char *dev_u = ht_dup(g.u, ub);

#pragma omp target enter data map(to : g, g.u[0:g.n])
    for (int step = 0; step < 4; step++) {
        ht_device_scramble(g.u, ub, 73 + (uint64_t)step);
        ht_host_scramble(dev_u, ub, 73 + (uint64_t)step);
        ht_fill_unlike(g.u, dev_u, ub, 80 + (uint64_t)step);
#pragma omp target update from(g.u[0:g.n])
        OB_CHECK(g.u == host_u, "learnt: the host pointer changed");
        ht_expect_host(g.u, dev_u, ub, "learnt: u after update from");
        ht_fill_unlike(g.u, dev_u, ub, 90 + (uint64_t)step);
        memcpy(dev_u, g.u, ub);
#pragma omp target update to(g.u[0:g.n])
        ht_expect_device(g.u, dev_u, ub, "learnt: u after update to");
    }
    double halo[6];
    memcpy(halo, g.halo, sizeof halo);
    ht_fill_unlike(g.halo, halo, sizeof g.halo, 95);
#pragma omp target update from(g.halo)
    ht_expect_host(g.halo, halo, sizeof halo, "learnt: halo after update from");
#pragma omp target exit data map(release : g, g.u[0:g.n])
    OB_CHECK(ht_is_unmapped(&g, sizeof g) && ht_is_unmapped(host_u, ub),
          "learnt: grid still mapped");
    ht_report("learnt: u", host_u, ub);

    params pr;
    pr.iters = (int)ht_between(&r, 1, 1000);
    ht_fill_random(pr.coef, sizeof pr.coef, 96);
    memcpy(pr.label, "learnt-st", sizeof pr.label);
    double coef[12];
    memcpy(coef, pr.coef, sizeof coef);
#pragma omp target enter data map(to : pr.iters, pr.coef)
#pragma omp target enter data map(to : pr.iters, pr.coef)
    pr.iters += 7;
    int iters = pr.iters;
#pragma omp target update to(pr.iters)
    ht_expect_device(&pr.iters, &iters, sizeof iters, "learnt: iters after update to");
    ht_device_scramble(pr.coef, sizeof pr.coef, 97);
    unsigned char dev_coef[sizeof coef];
    memcpy(dev_coef, coef, sizeof coef);
    ht_host_scramble(dev_coef, sizeof dev_coef, 97);
#pragma omp target exit data map(from : pr.coef)
    ht_expect_host(pr.coef, coef, sizeof coef, "learnt: coef after the first exit");
    OB_CHECK(ht_is_mapped(pr.coef, sizeof pr.coef), "learnt: params gone after the first exit");
    pr.iters = -1;
#pragma omp target exit data map(from : pr.iters, pr.coef)
    ht_expect_host(pr.coef, dev_coef, sizeof dev_coef, "learnt: coef after the last exit");
    OB_CHECK(pr.iters == iters, "learnt: iters %d after the last exit, want %d", pr.iters, iters);
    OB_CHECK(ht_is_unmapped(&pr.iters, sizeof pr.iters + sizeof pr.coef),
          "learnt: params still mapped");
    ht_report("learnt: coef", pr.coef, sizeof pr.coef);
    free(host_u);
    free(dev_u);
}

/* ---- declare mapper ------------------------------------------------------------------------- */

#pragma omp declare mapper(deep : vec v) map(tofrom : v, v.p[0:v.n])

/* A struct with a default mapper: every map of an ivec goes through it. */
typedef struct ivec {
    int n;
    int *q;
} ivec;
#pragma omp declare mapper(ivec v) map(tofrom : v, v.q[0:v.n])

/* After a mapper's exit the struct is still mapped (see leaked_vec). A plain enter of it then
 * finds it present and copies nothing, so the device keeps the struct of the last copy
 * (last_tag), not the host's new values; whatever the runtime does, the report must be the same
 * with and without the hook, which cannot see the entries a mapper makes. */
static void mapper_leftover(vec *sp, int last_tag)
{
    int present = omp_target_is_present(sp, omp_get_default_device());
    int seen_tag = 0, seen_n = 0;
    sp->tag = last_tag + 100;
    sp->n += 1;
#pragma omp target enter data map(to : sp[0:1])
#pragma omp target map(alloc : sp[0:1]) map(from : seen_tag, seen_n)
    {
        seen_tag = sp->tag - last_tag;
        seen_n = sp->n;
    }
#pragma omp target exit data map(release : sp[0:1])
    sp->n -= 1;
    printf("mapper: struct still mapped after exit: %d; after a plain enter the device has tag "
           "last%+d, n last%+d\n",
           present, seen_tag, seen_n - sp->n);
}

/* libomptarget 16 never unmaps the struct a mapper maps (map(tofrom: v, ...)): after enter
 * and exit through a mapper, even with delete, the struct's entry stays with a count of 1,
 * while the data it points to is unmapped. So the structs given to mappers here live in heap
 * blocks that are never freed: a stack or reused block would later collide with the leaked
 * entry (a larger map over it is an "explicit extension", which is fatal). */
static vec *leaked_vec(const vec *init)
{
    vec *sp = ht_malloc(sizeof *sp);
    *sp = *init;
    return sp;
}

/* A named mapper on enter, update from, update to and exit, next to a plain array. */
static void test_mapper_named(void)
{
    vec_case c = vec_case_new(30);
    vec *sp = leaked_vec(&c.s);
    uint64_t r = ht_state(31);
    ht_buf w = ht_buf_new(ht_between(&r, 1, 5000), 32);
    unsigned char *wp = w.p;
    size_t wn = w.n;
    int tag = c.s.tag;

#pragma omp target enter data map(mapper(deep), to : sp[0:1]) map(to : wp[0:wn])
    ht_buf_expect(&w, 0, wn, "mapper: w after enter");
    vec_step(&c, sp, tag, tag + 1, 33, "mapper: after enter");

    ht_buf_scramble(&w, 0, wn, 34);
    ht_buf_poison(&w, 35);
    vec_poison(&c, 36);
#pragma omp target update from(mapper(deep) : sp[0:1]) from(wp[0:wn])
    ht_buf_copied_from(&w, 0, wn);
    memcpy(c.phost, c.pdev, vec_bytes(&c));
    ht_buf_expect(&w, 0, wn, "mapper: w after update from");
    vec_expect_host(&c, sp, tag + 1, "mapper: after update from");

    ht_buf_host_new(&w, 0, wn, 37);
    ht_fill_unlike(c.host_p, c.pdev, vec_bytes(&c), 38);
    memcpy(c.phost, c.host_p, vec_bytes(&c));
    memcpy(c.pdev, c.host_p, vec_bytes(&c));
    sp->tag = tag + 2;
#pragma omp target update to(mapper(deep) : sp[0:1]) to(wp[0:wn])
    ht_buf_copied_to(&w, 0, wn);
    ht_buf_expect(&w, 0, wn, "mapper: w after update to");
    vec_step(&c, sp, tag + 2, tag + 3, 39, "mapper: after update to");

    ht_buf_scramble(&w, 0, wn, 40);
    ht_buf_poison(&w, 41);
    vec_poison(&c, 42);
#pragma omp target exit data map(mapper(deep), from : sp[0:1]) map(from : wp[0:wn])
    ht_buf_copied_from(&w, 0, wn);
    memcpy(c.phost, c.pdev, vec_bytes(&c));
    ht_buf_expect_host(&w, "mapper: w after exit");
    vec_expect_host(&c, sp, tag + 3, "mapper: after exit");
    OB_CHECK(ht_is_unmapped(c.host_p, vec_bytes(&c)), "mapper: data still mapped after exit");
    ht_report("mapper: data", c.host_p, vec_bytes(&c));
    ht_report("mapper: w", w.p, wn);
    mapper_leftover(sp, tag + 3);
    vec_case_free(&c);
    ht_buf_free(&w);
}

/* A mapper's enter, then plain updates of the data it mapped (v.p[0:n], spelled without the
 * mapper), then the mapper's exit: the hook learns the data's entry from the mapper's
 * components and batches the updates (UPDATES of them, counted in the test's minimums). */
enum { MAPPER_PLAIN_UPDATES = 4 };

static void test_mapper_then_plain_updates(void)
{
    vec_case c = vec_case_new(60);
    vec *sp = leaked_vec(&c.s);
    int tag = c.s.tag;
#pragma omp target enter data map(mapper(deep), to : sp[0:1])
    vec_step(&c, sp, tag, tag + 1, 61, "mapper+plain: after enter");
    double *p = sp->p;
    int n = sp->n;
    for (int u = 0; u < MAPPER_PLAIN_UPDATES; u += 2) {
        vec_poison(&c, 62 + (uint64_t)u);
#pragma omp target update from(p[0:n])
        memcpy(c.phost, c.pdev, vec_bytes(&c));
        vec_expect_host(&c, sp, tag, "mapper+plain: after update from");
        ht_fill_unlike(c.host_p, c.pdev, vec_bytes(&c), 63 + (uint64_t)u);
        memcpy(c.phost, c.host_p, vec_bytes(&c));
        memcpy(c.pdev, c.host_p, vec_bytes(&c));
#pragma omp target update to(p[0:n])
        vec_step(&c, sp, tag + 1, tag + 1, 64 + (uint64_t)u, "mapper+plain: after update to");
    }
    vec_poison(&c, 70);
#pragma omp target exit data map(mapper(deep), from : sp[0:1])
    memcpy(c.phost, c.pdev, vec_bytes(&c));
    vec_expect_host(&c, sp, tag + 1, "mapper+plain: after exit");
    OB_CHECK(ht_is_unmapped(c.host_p, vec_bytes(&c)), "mapper+plain: data still mapped after exit");
    ht_report("mapper+plain: data", c.host_p, vec_bytes(&c));
    vec_case_free(&c);
}

enum { NVECS = 3 };

/* A named mapper applied to each element of an array of structs. */
static void test_mapper_array(void)
{
    vec_case c[NVECS];
    vec *arr = ht_malloc(NVECS * sizeof *arr); /* never freed: see leaked_vec */
    for (int k = 0; k < NVECS; k++) {
        c[k] = vec_case_new(50 + 2 * (uint64_t)k);
        arr[k] = c[k].s;
    }
#pragma omp target enter data map(mapper(deep), to : arr[0:NVECS])
    for (int k = 0; k < NVECS; k++)
        vec_step(&c[k], &arr[k], c[k].s.tag, c[k].s.tag + 1, 60 + (uint64_t)k,
                 "mapper array: after enter");
    for (int k = 0; k < NVECS; k++)
        vec_poison(&c[k], 63 + (uint64_t)k);
#pragma omp target exit data map(mapper(deep), from : arr[0:NVECS])
    for (int k = 0; k < NVECS; k++) {
        memcpy(c[k].phost, c[k].pdev, vec_bytes(&c[k]));
        vec_expect_host(&c[k], &arr[k], c[k].s.tag + 1, "mapper array: after exit");
        ht_report("mapper array: data", c[k].host_p, vec_bytes(&c[k]));
        vec_case_free(&c[k]);
    }
}

/* The default mapper of ivec, used by a plain map(to: *iv) and update from(*iv). */
static void test_mapper_default(void)
{
    uint64_t r = ht_state(70);
    ivec *iv = ht_malloc(sizeof *iv); /* never freed: see leaked_vec */
    iv->n = (int)ht_between(&r, 1, 1000);
    size_t nb = (size_t)iv->n * sizeof(int);
    int *q = ht_malloc(nb);
    iv->q = q;
    ht_fill_random(q, nb, 71);
    unsigned char *dev = ht_dup(q, nb);

#pragma omp target enter data map(to : iv[0:1])
    ht_expect_device(q, dev, nb, "default mapper: data after enter");
    ht_device_scramble(q, nb, 72);
    ht_host_scramble(dev, nb, 72);
    ht_fill_unlike(q, q, nb, 73);
#pragma omp target update from(iv[0:1])
    ht_expect_host(q, dev, nb, "default mapper: data after update from");
    OB_CHECK(iv->q == q, "default mapper: host pointer changed by update from");
#pragma omp target exit data map(release : iv[0:1])
    OB_CHECK(ht_is_unmapped(q, nb), "default mapper: data still mapped after release");
    printf("default mapper: struct still mapped after release: %d\n",
           omp_target_is_present(iv, omp_get_default_device()));
    ht_report("default mapper: data", q, nb);
    free(q);
    free(dev);
}

/* Plain arrays mapped beside mapper constructs: a mapper's components are what the runtime
 * maps for it, so an update of an array no component touches stays the hook's, and one whose
 * array a component lies in (here a vec whose p points into it, mapped and attached through
 * the mapper) must be the runtime's, which keeps the attachment. The device copies are checked
 * after every step. */
static void test_mapper_beside_arrays(void)
{
    uint64_t r = ht_state(80);
    ht_buf a = ht_buf_new(ht_between(&r, 64, 4000), 81);
    ht_buf b = ht_buf_new(ht_between(&r, 1, 4000), 82);
    unsigned char *ap = a.p, *bp = b.p;
    size_t an = a.n, bn = b.n;
#pragma omp target enter data map(to : ap[0:an], bp[0:bn])
    ht_buf_expect(&a, 0, an, "beside a mapper: a after enter");
    /* A mapper construct on an unrelated struct. */
    vec_case c = vec_case_new(83);
    vec *sp = leaked_vec(&c.s);
#pragma omp target enter data map(mapper(deep), to : sp[0:1])
    /* Both arrays are untouched by it: updates both ways. */
    ht_buf_scramble(&a, 0, an, 84);
    ht_buf_poison(&a, 85);
#pragma omp target update from(ap[0:an])
    ht_buf_copied_from(&a, 0, an);
    ht_buf_expect(&a, 0, an, "beside a mapper: a after update from");
    ht_buf_host_new(&b, 0, bn, 86);
#pragma omp target update to(bp[0:bn])
    ht_buf_copied_to(&b, 0, bn);
    ht_buf_expect(&b, 0, bn, "beside a mapper: b after update to");
    /* A vec whose data lies inside a's mapping, mapped through the mapper (attached). */
    vec inner = {.n = (int)(an / 2 / sizeof(double)), .tag = 7,
                 .p = (double *)(void *)(ap + (an / 4) / 8 * 8), .extra = 0.5};
    vec *ip = leaked_vec(&inner);
    if (inner.n > 0) {
#pragma omp target enter data map(mapper(deep), to : ip[0:1])
        /* a's device copy holds what the host had at the enter of a (the vec's range was
         * present, so nothing was copied there); an update of a copies the host bytes, and
         * the kernel then reads them through the attached device pointer. */
        ht_buf_host_new(&a, 0, an, 87);
#pragma omp target update to(ap[0:an])
        ht_buf_copied_to(&a, 0, an);
        double sum = 0, want = 0;
        for (int k = 0; k < inner.n; k++)
            want += ip->p[k];
#pragma omp target map(alloc : ip[0:1]) map(tofrom : sum)
        for (int k = 0; k < ip->n; k++)
            sum += ip->p[k];
        OB_CHECK(memcmp(&sum, &want, sizeof sum) == 0 || sum == want,
              "beside a mapper: the attached vec reads %g, want %g", sum, want);
        ht_buf_expect(&a, 0, an, "beside a mapper: a after the attached update");
#pragma omp target exit data map(mapper(deep), release : ip[0:1])
    }
#pragma omp target exit data map(mapper(deep), release : sp[0:1])
    ht_buf_scramble(&b, 0, bn, 88);
    ht_buf_poison(&b, 89);
#pragma omp target update from(bp[0:bn])
    ht_buf_copied_from(&b, 0, bn);
    ht_buf_expect(&b, 0, bn, "beside a mapper: b after the mappers' exits");
#pragma omp target exit data map(release : ap[0:an], bp[0:bn])
    /* An array in the same constructs as a mapper: d gains a reference beside one and loses
     * both beside others, after which it is gone, and an update of it copies nothing (were
     * its entry still believed mapped, the update would read freed device memory). */
    ht_buf d = ht_buf_new(ht_between(&r, 1, 4000), 90);
    unsigned char *dp = d.p;
    size_t dn = d.n;
    vec *tp = leaked_vec(&c.s);
#pragma omp target enter data map(to : dp[0:dn])
    ht_buf_scramble(&d, 0, dn, 91);
    ht_buf_poison(&d, 92);
#pragma omp target update from(dp[0:dn])
    ht_buf_copied_from(&d, 0, dn);
    ht_buf_expect(&d, 0, dn, "beside a mapper: d after update from");
#pragma omp target enter data map(to : dp[0:dn]) map(mapper(deep), to : tp[0:1])
#pragma omp target exit data map(release : dp[0:dn]) map(mapper(deep), release : tp[0:1])
    OB_CHECK(ht_is_mapped(dp, dn), "beside a mapper: d gone after one of its two exits");
#pragma omp target exit data map(release : dp[0:dn]) map(mapper(deep), release : tp[0:1])
    ht_buf_poison(&d, 93);
#pragma omp target update from(dp[0:dn])
    ht_buf_expect_host(&d, "beside a mapper: d after an update once it is gone");
    ht_buf_free(&d);
    ht_report("beside a mapper: a", a.p, an);
    ht_report("beside a mapper: b", b.p, bn);
    vec_case_free(&c);
    ht_buf_free(&a);
    ht_buf_free(&b);
}

/* ---- present -------------------------------------------------------------------------------- */

/* The present modifier where the data is present: update to and from of sub-ranges, enter
 * (no copy: the entry exists) and exit with release and with from. A plain update comes first,
 * before any present use of the entry. */
static void test_present(void)
{
    uint64_t r = ht_state(80);
    ht_buf a = ht_buf_new(ht_between(&r, 2, 5000), 81);
    unsigned char *ap = a.p;
    size_t n = a.n;
    size_t x = ht_below(&r, n), y = ht_between(&r, 1, n - x);
    size_t x2 = ht_below(&r, n), y2 = ht_between(&r, 1, n - x2);

#pragma omp target enter data map(to : ap[0:n])
    ht_buf_host_new(&a, 0, n, 82);
#pragma omp target update to(ap[0:n])
    ht_buf_copied_to(&a, 0, n);
    ht_buf_expect(&a, 0, n, "present: after a plain update to");

    ht_buf_host_new(&a, x, y, 83);
#pragma omp target update to(present : ap[x:y])
    ht_buf_copied_to(&a, x, y);
    ht_buf_expect(&a, 0, n, "present: after update to(present:)");

    ht_buf_scramble(&a, 0, n, 84);
    ht_buf_poison(&a, 85);
#pragma omp target update from(present : ap[x2:y2])
    ht_buf_copied_from(&a, x2, y2);
    ht_buf_expect(&a, 0, n, "present: after update from(present:)");

    ht_buf_host_new(&a, 0, n, 86);
#pragma omp target enter data map(present, to : ap[0:n])
    ht_buf_expect(&a, 0, n, "present: enter of a present entry copies nothing");
#pragma omp target enter data map(present, alloc : ap[x:y])
#pragma omp target exit data map(present, release : ap[x:y])
#pragma omp target exit data map(present, release : ap[0:n])

    ht_buf_scramble(&a, 0, n, 87);
    ht_buf_poison(&a, 88);
#pragma omp target exit data map(present, from : ap[0:n])
    ht_buf_copied_from(&a, 0, n);
    ht_buf_expect_host(&a, "present: after exit from");
    ht_report("present", a.p, n);
    ht_buf_free(&a);
}

/* ---- declare target globals ----------------------------------------------------------------- */

enum { G_BYTES = 3001, G_VALS = 97 };

/* Not static: clang refuses `target update` of a declare target variable that is not
 * externally visible. */
#pragma omp declare target
unsigned char g_bytes[G_BYTES];
double g_vals[G_VALS];
int g_scalar;
#pragma omp end declare target

/* On the device: g_vals[j] = -g_vals[j] / 2 and g_scalar = g_scalar * 3 + 1 (exact). */
static void globals_kernel(void)
{
#pragma omp target
    {
        for (int j = 0; j < G_VALS; j++)
            g_vals[j] = -g_vals[j] * 0.5;
        g_scalar = (int)((unsigned)g_scalar * 3u + 1u);
    }
}

static void globals_kernel_host(double *vals, int *scalar)
{
    for (int j = 0; j < G_VALS; j++)
        vals[j] = -vals[j] * 0.5;
    *scalar = (int)((unsigned)*scalar * 3u + 1u);
}

/* Values for g_vals that are exact under globals_kernel (multiples of 1/8 below 2^20). */
static void globals_vals(double *vals, uint64_t salt)
{
    uint64_t r = ht_state(salt);
    for (int j = 0; j < G_VALS; j++)
        vals[j] = (double)(1 + ht_below(&r, 1u << 20)) / 8.0;
}

/* Globals by update (whole, partial) next to a plain array; enter/exit of a global copies
 * nothing without always (infinite count), and copies with always. */
static void test_globals(void)
{
    uint64_t r = ht_state(90);
    ht_buf w = ht_buf_new(ht_between(&r, 1, 5000), 91);
    unsigned char *wp = w.p;
    size_t wn = w.n;
    unsigned char bdev[G_BYTES], bhost[G_BYTES];
    double vals[G_VALS];
    int scalar = (int)ht_below(&r, 1u << 30);

    ht_fill_random(g_bytes, G_BYTES, 92);
    globals_vals(g_vals, 93);
    g_scalar = scalar;
    memcpy(bdev, g_bytes, G_BYTES);
    memcpy(vals, g_vals, sizeof vals);

#pragma omp target enter data map(to : wp[0:wn])
    ht_buf_host_new(&w, 0, wn, 94);
#pragma omp target update to(g_bytes, g_vals, g_scalar, wp[0:wn])
    ht_buf_copied_to(&w, 0, wn);
    ht_buf_expect(&w, 0, wn, "globals: w after update to");
    ht_expect_device(g_bytes, bdev, G_BYTES, "globals: g_bytes after update to");

    ht_device_scramble(g_bytes, G_BYTES, 95);
    ht_host_scramble(bdev, G_BYTES, 95);
    globals_kernel();
    globals_kernel_host(vals, &scalar);
    ht_fill_unlike(g_bytes, g_bytes, G_BYTES, 96);
    memcpy(bhost, g_bytes, G_BYTES);
    size_t lo = ht_below(&r, G_BYTES), len = ht_between(&r, 1, G_BYTES - lo);
#pragma omp target update from(g_bytes[lo:len])
    memcpy(bhost + lo, bdev + lo, len);
    ht_expect_host(g_bytes, bhost, G_BYTES, "globals: g_bytes after a partial update from");

    ht_buf_scramble(&w, 0, wn, 97);
    ht_buf_poison(&w, 98);
    g_scalar = ~scalar;
    globals_vals(g_vals, 99);
#pragma omp target update from(g_vals, g_scalar, wp[0:wn])
    ht_buf_copied_from(&w, 0, wn);
    ht_buf_expect(&w, 0, wn, "globals: w after update from");
    ht_expect_host(g_vals, vals, sizeof vals, "globals: g_vals after update from");
    OB_CHECK(g_scalar == scalar, "globals: g_scalar %d, want %d", g_scalar, scalar);

    /* Infinite count: enter and exit copy nothing. */
    ht_fill_unlike(g_bytes, bdev, G_BYTES, 100);
    memcpy(bhost, g_bytes, G_BYTES);
#pragma omp target enter data map(to : g_bytes)
    ht_expect_device(g_bytes, bdev, G_BYTES, "globals: enter to of a global copies nothing");
#pragma omp target exit data map(from : g_bytes)
    ht_expect_host(g_bytes, bhost, G_BYTES, "globals: exit from of a global copies nothing");

    /* With always they copy. */
    globals_vals(g_vals, 101);
    memcpy(vals, g_vals, sizeof vals);
#pragma omp target enter data map(always, to : g_vals)
    globals_kernel();
    globals_kernel_host(vals, &scalar);
    globals_vals(g_vals, 102);
#pragma omp target exit data map(always, from : g_vals)
    ht_expect_host(g_vals, vals, sizeof vals, "globals: g_vals after always to, always from");

    ht_buf_scramble(&w, 0, wn, 103);
    ht_buf_poison(&w, 104);
#pragma omp target exit data map(from : wp[0:wn])
    ht_buf_copied_from(&w, 0, wn);
    ht_buf_expect_host(&w, "globals: w after exit");
    ht_report("globals: g_bytes", g_bytes, G_BYTES);
    ht_report("globals: g_vals", g_vals, sizeof g_vals);
    ht_report("globals: w", w.p, wn);
    ht_buf_free(&w);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "maps_struct");
    test_attach_separate();
    test_attach_combined();
    test_member_updates();
    test_struct_learnt();
    test_mapper_named();
    test_mapper_then_plain_updates();
    test_mapper_array();
    test_mapper_default();
    test_mapper_beside_arrays();
    test_present();
    test_globals();
    return ob_check_finish("maps_struct");
}
