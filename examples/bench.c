/* The benchmark: `bazel run //examples:bench -- [options]` (--help lists them).
 *
 * For every cell of a grid (direction x host memory kind x piece count x piece size) it times
 * the same pieces moved two ways, on the library's own non-blocking stream of the device:
 *   per-copy  one cuMemcpyAsync per piece, then cuStreamSynchronize;
 *   ompbatch  ompbatch_batch_add for every piece, ompbatch_batch_submit, ompbatch_batch_wait
 *             (the batch is created once per cell and reset between runs, outside the timing).
 * Each figure is the median wall-clock time (CLOCK_MONOTONIC) of the timed runs after warm-ups;
 * runs of the two ways alternate so that drift affects both alike. Pieces lie `size + 64` bytes
 * apart (rounded up to 64) on both sides, so the library cannot merge any two of them; the
 * device side of a cell is one cuMemAlloc. After the timed runs the destination is poisoned, the
 * library's path runs once more and every byte is checked, gaps included, so that a fast but
 * wrong path cannot pass.
 *
 * Without a GPU it prints "no GPU: <reason>" and exits 0 (1 with --require-gpu). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "example_gpu.h"
#include "example_util.h"
#include "ompbatch.h"

#define BENCH "bench"
#define MAX_LIST 32
/* Bytes between the end of one piece and the start of the next, before alignment (--gap). */
#define DEFAULT_GAP ((size_t)64)
#define PIECE_ALIGN ((size_t)64)
/* Cells larger than this run at most BIG_CELL_REPEATS timed runs (the probe's "5 for the
 * largest"); any cell whose warm-up shows that its runs would take longer than CELL_BUDGET_US is
 * trimmed to fit, down to MIN_REPEATS. */
#define BIG_CELL_BYTES ((size_t)64 << 20)
#define BIG_CELL_REPEATS 5
#define MIN_REPEATS 5
#define CELL_BUDGET_US 2.0e6
#define SMALL_CELL_FACTOR 5
#define SMALL_CELL_BUDGET_US 0.1e6
/* A cell counts as slower than per-copy when the library takes this much longer. */
#define SLOWER_RATIO 1.05
/* How many of those cells the summary names. */
#define MAX_LISTED 12

typedef enum bench_dir { DIR_H2D = 0, DIR_D2H = 1 } bench_dir;

static const char *dir_name(bench_dir dir)
{
    return dir == DIR_H2D ? "H2D" : "D2H";
}

typedef struct options {
    size_t counts[MAX_LIST];
    size_t n_counts;
    size_t sizes[MAX_LIST];
    size_t n_sizes;
    bench_dir dirs[2];
    size_t n_dirs;
    ex_host_kind kinds[3];
    size_t n_kinds;
    int repeats;
    int warmup;
    size_t max_total;
    size_t gap;
    int device;
    int require_gpu;
    int quick;
    const char *json;
    const char *form;
} options;

typedef struct cell {
    bench_dir dir;
    ex_host_kind kind;
    size_t count;
    size_t size;
    size_t stride;
    int repeats;
    double per_copy_us;     /* medians */
    double batch_us;
    double per_copy_min_us;
    double batch_min_us;
    ompbatch_stats stats;   /* of the last timed batch */
    int verified;
    char failure[192];      /* what the byte check found, when it failed */
} cell;

/* The pieces of one cell: `count` copies of `size` bytes, every `stride` bytes on both sides. */
typedef struct transfer {
    CUdeviceptr dst;
    CUdeviceptr src;
    int dst_num;            /* OpenMP device numbers of the two sides */
    int src_num;
    size_t count;
    size_t size;
    size_t stride;
} transfer;

/* ---- options ------------------------------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench [options]   (bazel run //examples:bench -- [options])\n"
            "Per-copy cuMemcpyAsync loop against one ompbatch batch, over a grid of cells.\n"
            "  --counts LIST     piece counts (default 1,16,128,1024,4096)\n"
            "  --sizes LIST      piece sizes, suffixes B, K/KiB, M/MiB (default 8,256,4K,64K,1M)\n"
            "  --dirs LIST       h2d,d2h (default both)\n"
            "  --kinds LIST      pinned,pageable,managed host memory (default all three)\n"
            "  --repeats N       timed runs per cell (default 21; cells over 64 MiB run at most\n"
            "                    %d, and slow cells are trimmed to about 2 s, never below %d)\n"
            "  --warmup N        untimed runs per cell first (default 3)\n"
            "  --max-total SIZE  skip cells with more bytes than this (default 256M)\n"
            "  --gap SIZE        bytes between pieces before rounding up to 64 (default 64;\n"
            "                    at least 1, so that no two pieces can merge)\n"
            "  --form F          auto|13000|12080|percopy: sets OMPBATCH_BATCH_FORM before the\n"
            "                    library starts\n"
            "  --device N        CUDA device (default 0)\n"
            "  --json FILE       also write every cell as JSON (relative to where bazel run was\n"
            "                    started)\n"
            "  --quick           small grid for smoke runs: counts 16,1024, sizes 8,4K, 7 runs\n"
            "                    after 2 warm-ups (explicit options still apply)\n"
            "  --require-gpu     exit 1 instead of 0 when there is no GPU\n"
            "  -h, --help        this text\n",
            BIG_CELL_REPEATS, MIN_REPEATS);
}

static int parse_size(const char *text, size_t *out)
{
    errno = 0;
    char *end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || end == text || text[0] == '-')
        return -1;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift != 0) {
        end++;
        if (strcasecmp(end, "ib") == 0 || strcasecmp(end, "b") == 0)
            end += strlen(end);
    } else if (strcasecmp(end, "b") == 0) {
        end++;
    }
    if (*end != '\0' || value > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)value << shift;
    return 0;
}

static int parse_int(const char *text, int min, int max, int *out)
{
    errno = 0;
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < min || value > max)
        return -1;
    *out = (int)value;
    return 0;
}

/* Splits a comma list; each item goes through parse_item into the next slot of items. */
static int parse_list(const char *option, const char *text, void *items, size_t item_size,
                      size_t max, size_t *count, int (*parse_item)(const char *, void *))
{
    char buf[512];
    if (snprintf(buf, sizeof(buf), "%s", text) >= (int)sizeof(buf)) {
        fprintf(stderr, BENCH ": %s: list too long\n", option);
        return -1;
    }
    *count = 0;
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        if (*count == max) {
            fprintf(stderr, BENCH ": %s: more than %zu items\n", option, max);
            return -1;
        }
        if (parse_item(item, (char *)items + *count * item_size) != 0) {
            fprintf(stderr, BENCH ": %s: cannot read \"%s\"\n", option, item);
            return -1;
        }
        (*count)++;
    }
    if (*count == 0) {
        fprintf(stderr, BENCH ": %s: empty list\n", option);
        return -1;
    }
    return 0;
}

static int parse_count_item(const char *text, void *out)
{
    size_t value;
    if (parse_size(text, &value) != 0 || value == 0)
        return -1;
    *(size_t *)out = value;
    return 0;
}

static int parse_dir_item(const char *text, void *out)
{
    if (strcasecmp(text, "h2d") == 0)
        *(bench_dir *)out = DIR_H2D;
    else if (strcasecmp(text, "d2h") == 0)
        *(bench_dir *)out = DIR_D2H;
    else
        return -1;
    return 0;
}

static int parse_kind_item(const char *text, void *out)
{
    static const ex_host_kind kinds[] = {EX_HOST_PINNED, EX_HOST_PAGEABLE, EX_HOST_MANAGED};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (strcasecmp(text, ex_host_kind_name(kinds[i])) == 0) {
            *(ex_host_kind *)out = kinds[i];
            return 0;
        }
    }
    return -1;
}

/* Returns 0 to run, 1 to exit successfully (--help), -1 on a bad command line. */
static int parse_options(int argc, char **argv, options *o)
{
    static const size_t counts[] = {1, 16, 128, 1024, 4096};
    static const size_t sizes[] = {8, 256, 4096, 65536, 1048576};
    static const size_t quick_counts[] = {16, 1024};
    static const size_t quick_sizes[] = {8, 4096};
    int counts_set = 0, sizes_set = 0, repeats_set = 0, warmup_set = 0;
    memset(o, 0, sizeof(*o));
    o->repeats = 21;
    o->warmup = 3;
    o->max_total = (size_t)256 << 20;
    o->gap = DEFAULT_GAP;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(arg, "--quick") == 0) {
            o->quick = 1;
            continue;
        }
        if (strcmp(arg, "--require-gpu") == 0) {
            o->require_gpu = 1;
            continue;
        }
        const char *value = i + 1 < argc ? argv[++i] : NULL;
        int known = 1, bad = value == NULL;
        if (strcmp(arg, "--counts") == 0) {
            bad = bad || parse_list(arg, value, o->counts, sizeof(o->counts[0]), MAX_LIST,
                                    &o->n_counts, parse_count_item) != 0;
            counts_set = 1;
        } else if (strcmp(arg, "--sizes") == 0) {
            bad = bad || parse_list(arg, value, o->sizes, sizeof(o->sizes[0]), MAX_LIST,
                                    &o->n_sizes, parse_count_item) != 0;
            sizes_set = 1;
        } else if (strcmp(arg, "--dirs") == 0) {
            bad = bad || parse_list(arg, value, o->dirs, sizeof(o->dirs[0]), 2, &o->n_dirs,
                                    parse_dir_item) != 0;
        } else if (strcmp(arg, "--kinds") == 0) {
            bad = bad || parse_list(arg, value, o->kinds, sizeof(o->kinds[0]), 3, &o->n_kinds,
                                    parse_kind_item) != 0;
        } else if (strcmp(arg, "--repeats") == 0) {
            bad = bad || parse_int(value, 1, 100000, &o->repeats) != 0;
            repeats_set = 1;
        } else if (strcmp(arg, "--warmup") == 0) {
            bad = bad || parse_int(value, 0, 1000, &o->warmup) != 0;
            warmup_set = 1;
        } else if (strcmp(arg, "--max-total") == 0) {
            bad = bad || parse_size(value, &o->max_total) != 0;
        } else if (strcmp(arg, "--gap") == 0) {
            bad = bad || parse_size(value, &o->gap) != 0 || o->gap == 0;
        } else if (strcmp(arg, "--device") == 0) {
            bad = bad || parse_int(value, 0, 1 << 20, &o->device) != 0;
        } else if (strcmp(arg, "--json") == 0) {
            o->json = value;
        } else if (strcmp(arg, "--form") == 0) {
            o->form = value;
            bad = bad || (strcmp(value, "auto") != 0 && strcmp(value, "13000") != 0 &&
                          strcmp(value, "12080") != 0 && strcmp(value, "percopy") != 0);
        } else {
            known = 0;
        }
        if (!known) {
            fprintf(stderr, BENCH ": unknown option \"%s\"\n", arg);
            usage(stderr);
            return -1;
        }
        if (bad) {
            fprintf(stderr, BENCH ": bad or missing value for %s%s%s (see --help)\n", arg,
                    value ? ": " : "", value ? value : "");
            return -1;
        }
    }
    if (!counts_set) {
        const size_t *from = o->quick ? quick_counts : counts;
        o->n_counts = (o->quick ? sizeof(quick_counts) : sizeof(counts)) / sizeof(*from);
        memcpy(o->counts, from, o->n_counts * sizeof(*from));
    }
    if (!sizes_set) {
        const size_t *from = o->quick ? quick_sizes : sizes;
        o->n_sizes = (o->quick ? sizeof(quick_sizes) : sizeof(sizes)) / sizeof(*from);
        memcpy(o->sizes, from, o->n_sizes * sizeof(*from));
    }
    if (o->n_dirs == 0) {
        o->dirs[0] = DIR_H2D;
        o->dirs[1] = DIR_D2H;
        o->n_dirs = 2;
    }
    if (o->n_kinds == 0) {
        o->kinds[0] = EX_HOST_PINNED;
        o->kinds[1] = EX_HOST_PAGEABLE;
        o->kinds[2] = EX_HOST_MANAGED;
        o->n_kinds = 3;
    }
    if (o->quick && !repeats_set)
        o->repeats = 7;
    if (o->quick && !warmup_set)
        o->warmup = 2;
    return 0;
}

/* ---- one cell ----------------------------------------------------------------------------- */

static int per_copy_once(const ex_gpu *gpu, const transfer *t, double *us)
{
    const ob_driver *driver = gpu->driver;
    double start = ex_now_us();
    for (size_t i = 0; i < t->count; i++) {
        int status = OB_CU(driver, cuMemcpyAsync, t->dst + i * t->stride,
                           t->src + i * t->stride, t->size, gpu->stream);
        if (status != OMPBATCH_OK)
            return status;
    }
    int status = OB_CU(driver, cuStreamSynchronize, gpu->stream);
    *us = ex_now_us() - start;
    return status;
}

/* Reset is outside the timing: it only forgets the last fill (the stream is idle by then). */
static int batch_once(ompbatch_batch *batch, const transfer *t, double *us)
{
    int status = ompbatch_batch_reset(batch);
    if (status != OMPBATCH_OK)
        return status;
    double start = ex_now_us();
    for (size_t i = 0; i < t->count && status == OMPBATCH_OK; i++)
        status = ompbatch_batch_add(batch, EX_HPTR(t->dst + i * t->stride), t->dst_num,
                                    EX_HPTR(t->src + i * t->stride), t->src_num, t->size, 0);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(batch);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(batch);
    *us = ex_now_us() - start;
    return status;
}

static int choose_repeats(const options *o, const cell *c, double warm_pair_us)
{
    int repeats = o->repeats;
    /* Cells of a few tens of microseconds are the noisiest and the cheapest: give them up to
     * SMALL_CELL_FACTOR times the runs, still inside SMALL_CELL_BUDGET_US. */
    if (warm_pair_us > 0 && warm_pair_us * repeats * SMALL_CELL_FACTOR < SMALL_CELL_BUDGET_US)
        repeats *= SMALL_CELL_FACTOR;
    if (c->count * c->size > BIG_CELL_BYTES && repeats > BIG_CELL_REPEATS)
        repeats = BIG_CELL_REPEATS;
    if (warm_pair_us > 0 && repeats > MIN_REPEATS && warm_pair_us * repeats > CELL_BUDGET_US) {
        int fit = (int)(CELL_BUDGET_US / warm_pair_us);
        repeats = fit < MIN_REPEATS ? MIN_REPEATS : fit;
    }
    return repeats;
}

static int time_cell(const options *o, const ex_gpu *gpu, ompbatch_batch *batch,
                     const transfer *t, cell *c)
{
    double per_copy = 0, batched = 0;
    int status = OMPBATCH_OK;
    for (int w = 0; w < o->warmup && status == OMPBATCH_OK; w++) {
        if ((status = per_copy_once(gpu, t, &per_copy)) == OMPBATCH_OK)
            status = batch_once(batch, t, &batched);
    }
    if (status != OMPBATCH_OK)
        return status;
    c->repeats = choose_repeats(o, c, o->warmup > 0 ? per_copy + batched : 0);
    double *times = malloc(2 * (size_t)c->repeats * sizeof(*times));
    if (times == NULL) {
        fprintf(stderr, BENCH ": out of memory for %d timings\n", c->repeats);
        return OMPBATCH_ERR_NO_MEMORY;
    }
    double *per_copy_us = times, *batch_us = times + c->repeats;
    for (int r = 0; r < c->repeats && status == OMPBATCH_OK; r++) {
        if ((status = per_copy_once(gpu, t, &per_copy_us[r])) == OMPBATCH_OK)
            status = batch_once(batch, t, &batch_us[r]);
    }
    if (status == OMPBATCH_OK) {
        c->per_copy_min_us = ex_min(per_copy_us, (size_t)c->repeats);
        c->batch_min_us = ex_min(batch_us, (size_t)c->repeats);
        c->per_copy_us = ex_median(per_copy_us, (size_t)c->repeats);
        c->batch_us = ex_median(batch_us, (size_t)c->repeats);
        memset(&c->stats, 0, sizeof(c->stats));
        c->stats.struct_size = sizeof(c->stats);
        status = ompbatch_batch_get_stats(batch, &c->stats);
    }
    free(times);
    return status;
}

/* Poisons the destination, runs the library's path once more and checks every byte. expect
 * holds the source slab's bytes (same layout); scratch is a pageable slab for reading back. */
static int verify_cell(ex_gpu *gpu, ompbatch_batch *batch, const transfer *t,
                       const unsigned char *expect, unsigned char *scratch,
                       unsigned char *host_dst, cell *c)
{
    size_t slab = t->count * t->stride;
    double ignored;
    int status;
    if (host_dst != NULL) {
        memset(host_dst, EX_POISON, slab);
        if ((status = batch_once(batch, t, &ignored)) != OMPBATCH_OK)
            return status;
        c->verified = ex_check_pieces(host_dst, expect, t->count, t->size, t->stride,
                                      c->failure, sizeof(c->failure));
        return OMPBATCH_OK;
    }
    memset(scratch, EX_POISON, slab);
    if ((status = ex_gpu_copy(gpu, t->dst, EX_DPTR(scratch), slab)) != OMPBATCH_OK ||
        (status = batch_once(batch, t, &ignored)) != OMPBATCH_OK ||
        (status = ex_gpu_copy(gpu, EX_DPTR(scratch), t->dst, slab)) != OMPBATCH_OK)
        return status;
    c->verified = ex_check_pieces(scratch, expect, t->count, t->size, t->stride, c->failure,
                                  sizeof(c->failure));
    return OMPBATCH_OK;
}

/* Runs one cell. On failure returns the status and leaves the message of the first failing
 * call in error (cleanup calls into the library would clear ompbatch_last_error). */
static int run_cell(const options *o, ex_gpu *gpu, cell *c, char *error, size_t error_size)
{
    size_t stride = (c->size + o->gap + PIECE_ALIGN - 1) / PIECE_ALIGN * PIECE_ALIGN;
    size_t slab = c->count * stride;
    unsigned char *host = NULL, *scratch = NULL;
    CUdeviceptr dev = 0;
    ompbatch_batch *batch = NULL;
    c->stride = stride;
    int status = ex_gpu_alloc_host(gpu, c->kind, slab, &host);
    if (status == OMPBATCH_OK)
        status = ex_gpu_alloc_host(gpu, EX_HOST_PAGEABLE, slab, &scratch);
    if (status == OMPBATCH_OK)
        status = ex_gpu_alloc_device(gpu, slab, &dev);
    if (status != OMPBATCH_OK)
        goto free_memory;

    /* The source holds random bytes, gaps included; the destination starts poisoned. For D2H
     * the random bytes are made in scratch and uploaded, and scratch then is the expectation. */
    uint64_t seed = 0x5eed0000ULL ^ (c->count << 24) ^ c->size ^ ((uint64_t)c->kind << 60) ^
                    ((uint64_t)c->dir << 62);
    transfer t = {0, 0, 0, 0, c->count, c->size, stride};
    if (c->dir == DIR_H2D) {
        ex_fill_random(host, slab, &seed);
        t.dst = dev;
        t.dst_num = gpu->ordinal;
        t.src = EX_DPTR(host);
        t.src_num = OMPBATCH_HOST_DEVICE;
    } else {
        ex_fill_random(scratch, slab, &seed);
        if ((status = ex_gpu_copy(gpu, dev, EX_DPTR(scratch), slab)) != OMPBATCH_OK)
            goto free_memory;
        memset(host, EX_POISON, slab);
        t.dst = EX_DPTR(host);
        t.dst_num = OMPBATCH_HOST_DEVICE;
        t.src = dev;
        t.src_num = gpu->ordinal;
    }
    if ((status = ompbatch_batch_create(&batch, gpu->ordinal, NULL, NULL)) != OMPBATCH_OK)
        goto free_memory;
    if ((status = time_cell(o, gpu, batch, &t, c)) != OMPBATCH_OK)
        goto destroy_batch;
    status = c->dir == DIR_H2D ? verify_cell(gpu, batch, &t, host, scratch, NULL, c)
                               : verify_cell(gpu, batch, &t, scratch, NULL, host, c);

destroy_batch:
    if (status != OMPBATCH_OK)
        snprintf(error, error_size, "%s", ompbatch_last_error());
    int destroyed = ompbatch_batch_destroy(batch);
    if (status == OMPBATCH_OK && destroyed != OMPBATCH_OK) {
        status = destroyed;
        snprintf(error, error_size, "%s", ompbatch_last_error());
    }
    goto free_host;
free_memory:
    snprintf(error, error_size, "%s", ompbatch_last_error());
free_host:
    ex_gpu_free_device(gpu, dev);
    ex_gpu_free_host(gpu, EX_HOST_PAGEABLE, scratch);
    ex_gpu_free_host(gpu, c->kind, host);
    return status;
}

/* ---- output ------------------------------------------------------------------------------- */

static void print_header(void)
{
    printf("%-4s %-9s %5s %8s %14s %14s %9s  %-15s %4s\n", "dir", "host", "n", "size",
           "per-copy us", "ompbatch us", "speed-up", "path", "reps");
}

static void print_row(const cell *c)
{
    char size[32], path[48];
    printf("%-4s %-9s %5zu %8s %14.1f %14.1f %8.2fx  %-15s %4d%s\n", dir_name(c->dir),
           ex_host_kind_name(c->kind), c->count, ex_size_name(c->size, size, sizeof(size)),
           c->per_copy_us, c->batch_us, c->per_copy_us / c->batch_us,
           ex_paths_name(c->stats.paths, path, sizeof(path)), c->repeats,
           c->verified ? "" : "  DATA MISMATCH");
    if (!c->verified)
        printf("     ^ %s\n", c->failure);
    fflush(stdout);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s != NULL && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

typedef struct summary {
    size_t cells;
    size_t skipped;
    size_t mismatches;
    size_t slower;
    double worst_ratio;     /* ompbatch / per-copy, the largest */
    const cell *worst;
    const cell *headline_h2d; /* 1024 x 8 B pinned H2D */
    const cell *headline_d2h; /* 1024 x 4 KiB pinned D2H */
} summary;

static void summarise(const cell *cells, size_t count, summary *s)
{
    for (size_t i = 0; i < count; i++) {
        const cell *c = &cells[i];
        double ratio = c->batch_us / c->per_copy_us;
        s->cells++;
        s->mismatches += !c->verified;
        s->slower += ratio > SLOWER_RATIO;
        if (s->worst == NULL || ratio > s->worst_ratio) {
            s->worst = c;
            s->worst_ratio = ratio;
        }
        if (c->kind == EX_HOST_PINNED && c->count == 1024) {
            if (c->dir == DIR_H2D && c->size == 8)
                s->headline_h2d = c;
            if (c->dir == DIR_D2H && c->size == 4096)
                s->headline_d2h = c;
        }
    }
}

static void json_cell(FILE *f, const cell *c)
{
    char path[48];
    fprintf(f,
            "    {\"dir\": \"%s\", \"host\": \"%s\", \"count\": %zu, \"size\": %zu, "
            "\"bytes\": %zu, \"stride\": %zu, \"repeats\": %d, \"per_copy_us\": %.3f, "
            "\"ompbatch_us\": %.3f, \"per_copy_min_us\": %.3f, \"ompbatch_min_us\": %.3f, "
            "\"speedup\": %.4f, \"path\": \"%s\", \"copies_planned\": %llu, "
            "\"attr_groups\": %llu, \"sub_batches\": %llu, \"driver_calls\": %llu, "
            "\"verified\": %s",
            dir_name(c->dir), ex_host_kind_name(c->kind), c->count, c->size,
            c->count * c->size, c->stride, c->repeats, c->per_copy_us, c->batch_us,
            c->per_copy_min_us, c->batch_min_us, c->per_copy_us / c->batch_us,
            ex_paths_name(c->stats.paths, path, sizeof(path)),
            (unsigned long long)c->stats.copies_planned, (unsigned long long)c->stats.attr_groups,
            (unsigned long long)c->stats.sub_batches, (unsigned long long)c->stats.driver_calls,
            c->verified ? "true" : "false");
    if (!c->verified) {
        fprintf(f, ", \"failure\": ");
        json_string(f, c->failure);
    }
    fprintf(f, "}");
}

static void json_headline(FILE *f, const char *name, const cell *c, const char *end)
{
    if (c != NULL)
        fprintf(f, "    \"%s\": %.4f%s\n", name, c->per_copy_us / c->batch_us, end);
    else
        fprintf(f, "    \"%s\": null%s\n", name, end);
}

/* bazel run starts the program in its runfiles; a relative path means where the user was. */
static FILE *open_output(const char *path)
{
    char full[4096];
    const char *dir = getenv("BUILD_WORKING_DIRECTORY");
    if (path[0] != '/' && dir != NULL && dir[0] != '\0' &&
        snprintf(full, sizeof(full), "%s/%s", dir, path) < (int)sizeof(full))
        path = full;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        fprintf(stderr, BENCH ": cannot write %s: %s\n", path, strerror(errno));
    return f;
}

static int write_json_no_gpu(const char *path, const char *reason)
{
    FILE *f = open_output(path);
    if (f == NULL)
        return -1;
    fprintf(f, "{\n  \"ompbatch_version\": %d,\n  \"gpu\": false,\n  \"reason\": ",
            ompbatch_version());
    json_string(f, reason);
    fprintf(f, ",\n  \"cells\": []\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

static int write_json(const char *path, const options *o, const ex_gpu *gpu,
                      const ompbatch_driver_info *info, const cell *cells, size_t count,
                      const summary *s)
{
    FILE *f = open_output(path);
    if (f == NULL)
        return -1;
    fprintf(f, "{\n  \"ompbatch_version\": %d,\n  \"gpu\": true,\n", ompbatch_version());
    fprintf(f, "  \"device\": {\"ordinal\": %d, \"name\": ", gpu->ordinal);
    json_string(f, gpu->name);
    fprintf(f, "},\n  \"driver\": {\"version\": %d, \"batch_form\": %d, \"forced\": %s, "
               "\"library\": ",
            info->driver_version, info->batch_form, info->forced ? "true" : "false");
    json_string(f, info->library);
    fprintf(f, "},\n  \"settings\": {\"warmup\": %d, \"repeats\": %d, \"gap\": %zu, "
               "\"align\": %zu, \"max_total_bytes\": %zu, \"timer\": \"CLOCK_MONOTONIC\", "
               "\"statistic\": \"median\"},\n",
            o->warmup, o->repeats, o->gap, PIECE_ALIGN, o->max_total);
    fprintf(f, "  \"cells\": [\n");
    for (size_t i = 0; i < count; i++) {
        json_cell(f, &cells[i]);
        fprintf(f, "%s\n", i + 1 < count ? "," : "");
    }
    fprintf(f, "  ],\n  \"summary\": {\n    \"cells\": %zu,\n    \"skipped\": %zu,\n"
               "    \"mismatches\": %zu,\n    \"slower_than_per_copy\": %zu,\n",
            s->cells, s->skipped, s->mismatches, s->slower);
    if (s->worst != NULL)
        fprintf(f, "    \"worst_ratio\": %.4f,\n", s->worst_ratio);
    else
        fprintf(f, "    \"worst_ratio\": null,\n");
    json_headline(f, "speedup_h2d_pinned_1024x8", s->headline_h2d, ",");
    json_headline(f, "speedup_d2h_pinned_1024x4096", s->headline_d2h, "");
    fprintf(f, "  }\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

static void describe_cell(const cell *c, char *buf, size_t size)
{
    char bytes[32];
    snprintf(buf, size, "%s %s %zu x %s", dir_name(c->dir), ex_host_kind_name(c->kind),
             c->count, ex_size_name(c->size, bytes, sizeof(bytes)));
}

static void print_summary(const cell *cells, size_t count, const summary *s)
{
    char name[96];
    if (s->slower > 0) {
        size_t listed = 0;
        printf("slower than per-copy by more than %.0f%% (ompbatch/per-copy):",
               (SLOWER_RATIO - 1) * 100);
        for (size_t i = 0; i < count && listed < MAX_LISTED; i++) {
            const cell *c = &cells[i];
            if (c->batch_us / c->per_copy_us > SLOWER_RATIO) {
                describe_cell(c, name, sizeof(name));
                printf("%s %s %.2f", listed ? ";" : "", name, c->batch_us / c->per_copy_us);
                listed++;
            }
        }
        if (s->slower > listed)
            printf("; and %zu more", s->slower - listed);
        printf("\n");
    }
    if (s->mismatches > 0)
        printf("DATA MISMATCH in %zu cell(s): see the rows marked above\n", s->mismatches);
    if (s->worst != NULL)
        describe_cell(s->worst, name, sizeof(name));
    printf("summary: %zu cells (%zu skipped); worst ompbatch/per-copy %.2f (%s); slower than "
           "per-copy by >%.0f%%: %s (%zu); 1024 x 8 B pinned H2D ",
           s->cells, s->skipped, s->worst_ratio, s->worst ? name : "none",
           (SLOWER_RATIO - 1) * 100, s->slower ? "yes" : "no", s->slower);
    if (s->headline_h2d)
        printf("%.2fx", s->headline_h2d->per_copy_us / s->headline_h2d->batch_us);
    else
        printf("not run");
    printf(", 1024 x 4 KiB pinned D2H ");
    if (s->headline_d2h)
        printf("%.2fx", s->headline_d2h->per_copy_us / s->headline_d2h->batch_us);
    else
        printf("not run");
    printf("\n");
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed != 0)
        return parsed > 0 ? 0 : 2;
    /* The library reads its configuration once, at its first use: set the form before that. */
    if (o.form != NULL && setenv("OMPBATCH_BATCH_FORM", o.form, 1) != 0) {
        fprintf(stderr, BENCH ": cannot set OMPBATCH_BATCH_FORM: %s\n", strerror(errno));
        return 1;
    }
    ompbatch_driver_info info;
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    int status = ompbatch_get_driver_info(&info);
    if (status != OMPBATCH_OK)
        return ex_report_failure(BENCH, "ompbatch_get_driver_info", status);
    if (!info.driver_loaded || info.device_count == 0) {
        const char *reason =
            info.driver_loaded ? "the CUDA driver reports no devices" : info.reason;
        printf("no GPU: %s\n", reason);
        if (o.json != NULL && write_json_no_gpu(o.json, reason) != 0)
            return 1;
        return o.require_gpu ? 1 : 0;
    }
    if (o.device >= info.device_count) {
        fprintf(stderr, BENCH ": --device %d: the driver reports %d device(s)\n", o.device,
                info.device_count);
        return 2;
    }

    ex_gpu gpu;
    if ((status = ex_gpu_open(o.device, &gpu)) != OMPBATCH_OK) {
        ex_gpu_close(&gpu);
        return ex_report_failure(BENCH, "opening the GPU", status);
    }
    size_t max_cells = o.n_dirs * o.n_kinds * o.n_counts * o.n_sizes;
    cell *cells = calloc(max_cells ? max_cells : 1, sizeof(*cells));
    if (cells == NULL) {
        ex_gpu_close(&gpu);
        fprintf(stderr, BENCH ": out of memory\n");
        return 1;
    }
    char max_total[32];
    printf("bench: %s (device %d), driver %d.%d, %s%s\n", gpu.name, gpu.ordinal,
           info.driver_version / 1000, info.driver_version % 1000 / 10,
           ex_form_name(info.batch_form), info.forced ? " (forced by OMPBATCH_BATCH_FORM)" : "");
    printf("median of %d timed runs after %d warm-up(s) (fewer for cells over 64 MiB or slow "
           "ones); pieces %zu B apart, aligned to %zu, nothing merges; cells over %s skipped\n",
           o.repeats, o.warmup, o.gap, PIECE_ALIGN,
           ex_size_name(o.max_total, max_total, sizeof(max_total)));
    print_header();

    double started = ex_now_us();
    size_t ran = 0, skipped = 0;
    int rc = 0;
    /* A throwaway cell first: a process's first driver calls and a GPU coming out of idle make
     * the first measured cells slower on both paths, which says nothing about either. */
    cell warm;
    memset(&warm, 0, sizeof(warm));
    warm.dir = DIR_H2D;
    warm.kind = EX_HOST_PINNED;
    warm.count = 64;
    warm.size = 8;
    char warm_error[512] = "";
    if ((status = run_cell(&o, &gpu, &warm, warm_error, sizeof(warm_error))) != OMPBATCH_OK) {
        fprintf(stderr, BENCH ": warm-up cell: %s: %s\n", ompbatch_err_name(status), warm_error);
        rc = 1;
    }
    for (size_t d = 0; d < o.n_dirs && rc == 0; d++)
        for (size_t k = 0; k < o.n_kinds && rc == 0; k++)
            for (size_t n = 0; n < o.n_counts && rc == 0; n++)
                for (size_t z = 0; z < o.n_sizes && rc == 0; z++) {
                    size_t count = o.counts[n], size = o.sizes[z];
                    if (size > o.max_total / count) {
                        skipped++;
                        continue;
                    }
                    cell *c = &cells[ran];
                    c->dir = o.dirs[d];
                    c->kind = o.kinds[k];
                    c->count = count;
                    c->size = size;
                    char error[512] = "";
                    if ((status = run_cell(&o, &gpu, c, error, sizeof(error))) != OMPBATCH_OK) {
                        char name[96];
                        describe_cell(c, name, sizeof(name));
                        fprintf(stderr, BENCH ": %s: %s: %s\n", name, ompbatch_err_name(status),
                                error[0] ? error : ompbatch_strerror(status));
                        rc = 1;
                        break;
                    }
                    print_row(c);
                    ran++;
                }

    summary s;
    memset(&s, 0, sizeof(s));
    summarise(cells, ran, &s);
    s.skipped = skipped;
    printf("elapsed %.1f s\n", (ex_now_us() - started) * 1e-6);
    print_summary(cells, ran, &s);
    if (o.json != NULL && write_json(o.json, &o, &gpu, &info, cells, ran, &s) != 0)
        rc = 1;
    if (rc == 0 && s.mismatches > 0)
        rc = 1;
    free(cells);
    ex_gpu_close(&gpu);
    return rc;
}
