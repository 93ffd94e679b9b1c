/*
 * A multi-field stencil: the shape of program the ompbatch OpenMP hook is for.
 *
 * F fields (default 64) are the subdomains of one periodic 1-D chain. Each field is a separate
 * malloc'd pair of arrays of a few KiB (lengths vary a little per field), mapped once with
 * `target enter data`. Every step:
 *   1. one `target teams distribute parallel for` per field applies a 5-point stencil, writing
 *      the new values, the field's halo (its R first and R last cells) and a diagnostic array
 *      (DIAG samples of the field);
 *   2. `target update from` brings every field's halo and diagnostics back, 8 fields (16 small
 *      arrays) per construct;
 *   3. the host computes each field's ghost cells from its neighbours' halos and the mean of all
 *      diagnostics;
 *   4. `target update to` sends the ghost cells, 16 boundary arrays per construct.
 * At the end `target exit data map(from:)` brings the fields back.
 *
 * The program runs the whole thing with the hook off and on (or once when the hook is not
 * linked), from the same seeded data, times the step loops, and requires both results to be
 * byte-identical to a host-only computation of the same stencil, so a wrong or missing copy
 * anywhere shows. It is a plain OpenMP program: without ompbatch it builds and runs the same.
 *
 * Usage: stencil [--steps N] [--fields N] [--seed N] [--quick]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook_api.h"

#define R 2            /* stencil radius: halo and ghost cells per side */
#define DIAG 16        /* diagnostic samples per field */
#define FROM_FIELDS 8  /* fields per `update from`: halo + diag each, 16 items */
#define TO_FIELDS 16   /* fields per `update to`: one boundary array each, 16 items */
#define MIN_CELLS 448  /* field lengths are MIN_CELLS + [0, CELL_SPREAD] doubles (3.5-4.5 KiB) */
#define CELL_SPREAD 128

typedef struct field {
    long n;        /* cells */
    double *u[2];  /* the field, ping-pong: u[cur] is the newest */
    double *halo;  /* [2R]: the R first and R last cells of the newest values (kernel) */
    double *diag;  /* [DIAG]: samples of the newest values (kernel) */
    double *bnd;   /* [2R]: R left and R right ghost cells (host) */
} field;

typedef struct sim {
    int nf;
    int cur;
    field *f;
    double monitor; /* sum over steps of the diagnostics' mean: printed, and compared */
} sim;

typedef struct options {
    int steps;
    int fields;
    uint64_t seed;
} options;

/* ---- the stencil, shared by the kernels and the host reference ----------------------------- */

/* The weights (1 2 2 2 1) / 8 are powers of two, so every product is exact: the device may
 * contract a*b+c into an FMA and still produce the host's bits. */
#pragma omp declare target
static inline double cell(const double *u, const double *bnd, long n, long i)
{
    if (i < 0)
        return bnd[R + i];
    if (i >= n)
        return bnd[R + (i - n)];
    return u[i];
}

/* Computes cell i of the new values and records it in the halo and diagnostics when it is one
 * of theirs: each cell is written by exactly one iteration, so no synchronisation is needed. */
static inline void update_cell(const double *src, double *dst, const double *bnd, double *halo,
                               double *diag, long n, long i)
{
    double s = cell(src, bnd, n, i - 2);
    s += 2.0 * cell(src, bnd, n, i - 1);
    s += 2.0 * cell(src, bnd, n, i);
    s += 2.0 * cell(src, bnd, n, i + 1);
    s += cell(src, bnd, n, i + 2);
    double v = s * 0.125;
    dst[i] = v;
    if (i < R)
        halo[i] = v;
    if (i >= n - R)
        halo[R + (i - (n - R))] = v;
    long stride = n / DIAG;
    if (i % stride == 0 && i / stride < DIAG)
        diag[i / stride] = v;
}
#pragma omp end declare target

/* ---- set-up ---------------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: deterministic across runs and machines, which the comparison relies on. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* A value in [-1, 1) with 20 significant bits, so sums stay exact for a while. */
static double rng_value(uint64_t *s)
{
    return (double)(int64_t)(rng_next(s) >> 44) / (double)(1 << 19) - 1.0;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "stencil: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* Halo and diagnostics of u[cur], as the kernel would have written them. */
static void host_halo_diag(field *fl, int cur)
{
    const double *u = fl->u[cur];
    long stride = fl->n / DIAG;
    for (long k = 0; k < R; k++) {
        fl->halo[k] = u[k];
        fl->halo[R + k] = u[fl->n - R + k];
    }
    for (long k = 0; k < DIAG; k++)
        fl->diag[k] = u[k * stride];
}

/* Ghost cells from the neighbours' halos, pulled a quarter of the way to the mean of all
 * diagnostics (the "something" the host computes with the data it brought back). */
static void host_exchange(sim *s)
{
    double sum = 0.0;
    for (int f = 0; f < s->nf; f++)
        for (int k = 0; k < DIAG; k++)
            sum += s->f[f].diag[k];
    double mean = sum / (double)(s->nf * DIAG);
    s->monitor += mean;
    for (int f = 0; f < s->nf; f++) {
        const field *left = &s->f[(f + s->nf - 1) % s->nf];
        const field *right = &s->f[(f + 1) % s->nf];
        for (int k = 0; k < R; k++) {
            s->f[f].bnd[k] = 0.75 * left->halo[R + k] + 0.25 * mean;
            s->f[f].bnd[R + k] = 0.75 * right->halo[k] + 0.25 * mean;
        }
    }
}

/* Fresh fields from the seed: identical for every run with the same seed and field count. */
static sim sim_create(int nf, uint64_t seed)
{
    sim s = {.nf = nf, .cur = 0, .f = xmalloc((size_t)nf * sizeof(field)), .monitor = 0.0};
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int f = 0; f < nf; f++) {
        field *fl = &s.f[f];
        fl->n = MIN_CELLS + (long)(rng_next(&rng) % (CELL_SPREAD + 1));
        for (int b = 0; b < 2; b++)
            fl->u[b] = xmalloc((size_t)fl->n * sizeof(double));
        fl->halo = xmalloc(2 * R * sizeof(double));
        fl->diag = xmalloc(DIAG * sizeof(double));
        fl->bnd = xmalloc(2 * R * sizeof(double));
        for (long i = 0; i < fl->n; i++) {
            fl->u[0][i] = rng_value(&rng);
            fl->u[1][i] = 0.0;
        }
        host_halo_diag(fl, 0);
    }
    host_exchange(&s);
    s.monitor = 0.0;
    return s;
}

static void sim_destroy(sim *s)
{
    for (int f = 0; f < s->nf; f++) {
        free(s->f[f].u[0]);
        free(s->f[f].u[1]);
        free(s->f[f].halo);
        free(s->f[f].diag);
        free(s->f[f].bnd);
    }
    free(s->f);
    s->f = NULL;
}

/* ---- the host reference ---------------------------------------------------------------------- */

static void reference_run(sim *s, int steps)
{
    for (int step = 0; step < steps; step++) {
        for (int f = 0; f < s->nf; f++) {
            field *fl = &s->f[f];
            for (long i = 0; i < fl->n; i++)
                update_cell(fl->u[s->cur], fl->u[s->cur ^ 1], fl->bnd, fl->halo, fl->diag,
                            fl->n, i);
        }
        s->cur ^= 1;
        host_exchange(s);
    }
}

/* ---- the offloaded run ----------------------------------------------------------------------- */

static void map_field(field *fl)
{
    double *u0 = fl->u[0], *u1 = fl->u[1], *bnd = fl->bnd, *halo = fl->halo, *diag = fl->diag;
    long n = fl->n;
#pragma omp target enter data map(to: u0[0:n], u1[0:n], bnd[0:2 * R]) \
    map(alloc: halo[0:2 * R], diag[0:DIAG])
}

static void unmap_field(field *fl)
{
    double *u0 = fl->u[0], *u1 = fl->u[1], *bnd = fl->bnd, *halo = fl->halo, *diag = fl->diag;
    long n = fl->n;
#pragma omp target exit data map(from: u0[0:n], u1[0:n]) \
    map(release: bnd[0:2 * R], halo[0:2 * R], diag[0:DIAG])
}

/* One kernel per field. Everything is already mapped, so map(alloc:) only looks the arrays up
 * (clang 16 without -fopenmp-version=51 has no `present` modifier); were one missing, the
 * kernel would work on fresh memory and the final comparison would fail. */
static void step_field(field *fl, int cur)
{
    const double *src = fl->u[cur];
    double *dst = fl->u[cur ^ 1], *bnd = fl->bnd, *halo = fl->halo, *diag = fl->diag;
    long n = fl->n;
#pragma omp target teams distribute parallel for \
    map(alloc: src[0:n], dst[0:n], bnd[0:2 * R], halo[0:2 * R], diag[0:DIAG])
    for (long i = 0; i < n; i++)
        update_cell(src, dst, bnd, halo, diag, n, i);
}

/* The constructs name each array by a local pointer: clang 16 refuses two sections of elements
 * of one array (`p[0][0:n], p[1][0:n]`) in one clause, and `p[i][0:n]` would also map the
 * pointer p[i] itself and attach it (PTR_AND_OBJ), which is not the shape under test. */
#define HD_LOCAL(k) double *h##k = fl[k].halo, *d##k = fl[k].diag;
#define HD_SEC(k) h##k[0:2 * R], d##k[0:DIAG]
#define B_LOCAL(k) double *b##k = fl[k].bnd;
#define EACH8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define EACH16(X) EACH8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

static void halo_diag_from_8(field *fl)
{
    EACH8(HD_LOCAL)
#pragma omp target update from(HD_SEC(0), HD_SEC(1), HD_SEC(2), HD_SEC(3), HD_SEC(4), \
                               HD_SEC(5), HD_SEC(6), HD_SEC(7))
}

static void halo_diag_from_1(field *fl)
{
    HD_LOCAL(0)
#pragma omp target update from(HD_SEC(0))
}

static void bnd_to_16(field *fl)
{
    EACH16(B_LOCAL)
#pragma omp target update to(b0[0:2 * R], b1[0:2 * R], b2[0:2 * R], b3[0:2 * R], b4[0:2 * R], \
                             b5[0:2 * R], b6[0:2 * R], b7[0:2 * R], b8[0:2 * R], b9[0:2 * R], \
                             b10[0:2 * R], b11[0:2 * R], b12[0:2 * R], b13[0:2 * R],           \
                             b14[0:2 * R], b15[0:2 * R])
}

static void bnd_to_1(field *fl)
{
    B_LOCAL(0)
#pragma omp target update to(b0[0:2 * R])
}

/* Full groups first, then one field per construct for the rest. */
static void halo_diag_from_all(sim *s)
{
    int f = 0;
    for (; f + FROM_FIELDS <= s->nf; f += FROM_FIELDS)
        halo_diag_from_8(&s->f[f]);
    for (; f < s->nf; f++)
        halo_diag_from_1(&s->f[f]);
}

static void bnd_to_all(sim *s)
{
    int f = 0;
    for (; f + TO_FIELDS <= s->nf; f += TO_FIELDS)
        bnd_to_16(&s->f[f]);
    for (; f < s->nf; f++)
        bnd_to_1(&s->f[f]);
}

/* Maps, runs and unmaps; returns the seconds spent in the step loop. */
static double device_run(sim *s, int steps)
{
    for (int f = 0; f < s->nf; f++)
        map_field(&s->f[f]);
    double t0 = omp_get_wtime();
    for (int step = 0; step < steps; step++) {
        for (int f = 0; f < s->nf; f++)
            step_field(&s->f[f], s->cur);
        s->cur ^= 1;
        halo_diag_from_all(s);
        host_exchange(s);
        bnd_to_all(s);
    }
    double t1 = omp_get_wtime();
    for (int f = 0; f < s->nf; f++)
        unmap_field(&s->f[f]);
    return t1 - t0;
}

/* ---- comparison ------------------------------------------------------------------------------ */

/* Byte comparison of n doubles; prints the first difference. Returns 1 when equal. */
static int same_doubles(const char *what, int f, const double *got, const double *want, long n,
                        const char *label)
{
    if (memcmp(got, want, (size_t)n * sizeof(double)) == 0)
        return 1;
    for (long i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof(double)) != 0) {
            fprintf(stderr, "stencil: %s: field %d %s[%ld] = %.17g, expected %.17g\n", label, f,
                    what, i, got[i], want[i]);
            break;
        }
    }
    return 0;
}

/* Every array of every field, and the monitor, must match bit for bit. */
static int same_sim(const sim *got, const sim *want, const char *label)
{
    int ok = got->cur == want->cur;
    for (int f = 0; f < got->nf && ok; f++) {
        const field *g = &got->f[f], *w = &want->f[f];
        ok = same_doubles("u0", f, g->u[0], w->u[0], g->n, label) &&
             same_doubles("u1", f, g->u[1], w->u[1], g->n, label) &&
             same_doubles("halo", f, g->halo, w->halo, 2 * R, label) &&
             same_doubles("diag", f, g->diag, w->diag, DIAG, label) &&
             same_doubles("bnd", f, g->bnd, w->bnd, 2 * R, label);
    }
    if (ok && memcmp(&got->monitor, &want->monitor, sizeof(double)) != 0) {
        fprintf(stderr, "stencil: %s: monitor %.17g, expected %.17g\n", label, got->monitor,
                want->monitor);
        ok = 0;
    }
    return ok;
}

/* ---- driver ---------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out, "usage: stencil [--steps N] [--fields N] [--seed N] [--quick]\n"
                 "  --steps N   time steps (default 100; --quick: 10)\n"
                 "  --fields N  fields, each its own arrays (default 64)\n"
                 "  --seed N    initial data (default 1)\n");
}

/* Returns 0, 1 for a bad option, or -1 for --help. */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.steps = 100, .fields = 64, .seed = 1};
    int steps_given = 0, quick = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return -1;
        } else if (v && strcmp(a, "--steps") == 0) {
            o->steps = atoi(v), steps_given = 1, i++;
        } else if (v && strcmp(a, "--fields") == 0) {
            o->fields = atoi(v), i++;
        } else if (v && strcmp(a, "--seed") == 0) {
            o->seed = strtoull(v, NULL, 0), i++;
        } else {
            fprintf(stderr, "stencil: unknown or incomplete option '%s'\n", a);
            return 1;
        }
    }
    if (quick && !steps_given)
        o->steps = 10;
    if (o->steps < 1 || o->fields < 3) {
        fprintf(stderr, "stencil: need --steps >= 1 and --fields >= 3\n");
        return 1;
    }
    return 0;
}

/* Says where target regions run: a silent host fallback would make the transfers no-ops, and
 * the timings meaningless (the results would still match). */
static void report_device(void)
{
    int on_host = 1;
#pragma omp target map(from: on_host)
    on_host = omp_is_initial_device();
    printf("offload: %d device(s), default %d; target regions run %s\n", omp_get_num_devices(),
           omp_get_default_device(), on_host ? "ON THE HOST (no offload device)" : "on the device");
}

/* One offloaded run in the given hook mode; returns 0, or 1 if the results differ from the
 * reference. *seconds receives the step loop's time, *delta the hook's counters over it. */
static int timed_run(const hook_api *api, int hook_on, const options *o, const sim *ref,
                     double *seconds, ompbatch_hook_stats *delta)
{
    const char *label = hook_on ? "hook on" : "hook off";
    if (hook_api_set(api, hook_on) != 0) {
        fprintf(stderr, "stencil: could not turn the hook %s\n", hook_on ? "on" : "off");
        return 1;
    }
    sim s = sim_create(o->fields, o->seed);
    ompbatch_hook_stats before = hook_api_stats(api);
    *seconds = device_run(&s, o->steps);
    ompbatch_hook_stats after = hook_api_stats(api);
    memset(delta, 0, sizeof *delta);
    hook_stats_accumulate(delta, &before, &after);
    int ok = same_sim(&s, ref, label);
    sim_destroy(&s);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0) {
        usage(rc < 0 ? stdout : stderr);
        return rc < 0 ? 0 : 2;
    }
    hook_api api = hook_api_lookup();
    hook_api_probe(&api, stdout);
    report_device();

    sim ref = sim_create(o.fields, o.seed);
    reference_run(&ref, o.steps);
    printf("stencil: %d fields of %d..%d doubles, %d steps; per step %d kernels, %d `update "
           "from` and %d `update to` constructs\n",
           o.fields, MIN_CELLS, MIN_CELLS + CELL_SPREAD, o.steps, o.fields,
           o.fields / FROM_FIELDS + o.fields % FROM_FIELDS,
           o.fields / TO_FIELDS + o.fields % TO_FIELDS);

    int failures = 0;
    double secs[2] = {0, 0};
    ompbatch_hook_stats delta[2];
    int modes = api.can_enable ? 2 : 1;
    for (int on = 0; on < modes; on++) {
        failures += timed_run(&api, on, &o, &ref, &secs[on], &delta[on]);
        printf("  hook %-3s %10.1f us total, %8.2f us/step%s\n", on ? "on" : "off", secs[on] * 1e6,
               secs[on] * 1e6 / o.steps, api.linked ? "" : " (runtime only)");
    }
    /* Leave the hook as the program found it (on), so that OMPBATCH_STATS=1 reports it so. */
    if (api.can_enable)
        hook_api_set(&api, 1);
    if (modes == 2) {
        printf("  speed-up (off / on): %.2fx\n", secs[0] / secs[1]);
        printf("  hook statistics over the hook-on step loop:\n");
        hook_stats_print(stdout, "    ", &delta[1]);
        if (hook_stats_batched_items(&delta[0]) || delta[0].batches) {
            fprintf(stderr, "stencil: the hook batched while turned off\n");
            failures++;
        }
    }
    printf("monitor %.17g\n", ref.monitor);
    sim_destroy(&ref);
    /* Each run was compared with the reference byte for byte, so they also equal each other. */
    printf("stencil: %s\n", failures ? "FAILED"
                                     : "every run matches the host reference bit for bit");
    return failures ? 1 : 0;
}
