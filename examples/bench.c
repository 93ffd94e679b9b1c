/* The benchmark: `bazel run //examples:bench -- [options]` (--help lists them).
 *
 * For every cell of a grid (direction x host memory kind x piece count x piece size) it times
 * the same pieces moved five ways, on the library's own non-blocking stream of the device:
 *   per-copy  one cuMemcpyAsync per piece, then cuStreamSynchronize;
 *   direct    an ompbatch batch with options.strategy = OMPBATCH_STRATEGY_DIRECT;
 *   staged    the same with OMPBATCH_STRATEGY_STAGED;
 *   auto      the same with OMPBATCH_STRATEGY_AUTO;
 *   bulk      the limit: one cuMemcpyAsync of count * size contiguous bytes between the cell's
 *             host slab (so host memory of the same kind) and its device slab, then
 *             cuStreamSynchronize.
 * A library way is ompbatch_batch_add for every piece, ompbatch_batch_submit and
 * ompbatch_batch_wait; each strategy has its own batch, created once per cell and reset between
 * runs, outside the timing. Each figure is the median wall-clock time (CLOCK_MONOTONIC) of the
 * timed runs after warm-ups; every timed round runs all five ways, in orders that give every
 * way every other way as its predecessor equally often (see round_order), so that drift and
 * whatever a way leaves behind affect every way alike. Pieces lie
 * `size + 64` bytes apart (rounded up to 64) on both sides, so the library cannot merge any two
 * of them; the device side of a cell is one cuMemAlloc. After the timed runs, for every way in
 * turn, the destination is poisoned, the way runs once more and every byte is checked, gaps
 * included, so that a fast but wrong path cannot pass; any mismatch makes the exit status 1.
 *
 * The JSON keeps the keys of the two-way bench (ompbatch_us, speedup, path, ... now describe
 * auto, the library's default strategy) and adds every way's time, the statistics of each
 * library way after its last timed run, and the ratios.
 *
 * --targets runs a fixed list of cells instead of the grid and compares each with its target.
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
/* Cells larger than this run at most BIG_CELL_REPEATS timed rounds (the probe's "5 for the
 * largest"); any cell whose warm-up shows that its rounds would take longer than CELL_BUDGET_US
 * is trimmed to fit, down to MIN_REPEATS. */
#define BIG_CELL_BYTES ((size_t)64 << 20)
#define BIG_CELL_REPEATS 8
#define MIN_REPEATS 8
/* Rounds come in whole cycles of round_order: N_WAYS - 1 rounds. */
#define ORDER_CYCLE (N_WAYS - 1)
#define CELL_BUDGET_US 1.5e6
#define SMALL_CELL_FACTOR 10
#define SMALL_CELL_BUDGET_US 2.0e6
/* A cell counts as slower when it takes this much longer than what it is compared with: auto
 * against per-copy, and auto against the best single strategy (direct or staged). */
#define SLOWER_RATIO 1.05
/* How many of the cells slower than per-copy the summary names. */
#define MAX_LISTED 12
/* Exit status when every cell ran and every byte was right but a --targets target was missed. */
#define EXIT_TARGET_MISSED 3

/* Where a library way's time goes: the adds, the submit, the wait. */
enum { PHASE_ADD = 0, PHASE_SUBMIT, PHASE_WAIT, N_PHASES };
static const char *const phase_keys[N_PHASES] = {"add_us", "submit_us", "wait_us"};

typedef enum bench_dir { DIR_H2D = 0, DIR_D2H = 1 } bench_dir;

static const char *dir_name(bench_dir dir)
{
    return dir == DIR_H2D ? "H2D" : "D2H";
}

/* The ways a cell's pieces are moved, in the order of the table's columns. */
typedef enum bench_way {
    WAY_PER_COPY = 0,
    WAY_DIRECT,
    WAY_STAGED,
    WAY_AUTO,
    WAY_BULK,
    N_WAYS
} bench_way;

static const char *const way_names[N_WAYS] = {"per-copy", "direct", "staged", "auto", "bulk"};
/* The same as JSON keys. */
static const char *const way_keys[N_WAYS] = {"per_copy", "direct", "staged", "auto", "bulk"};
/* The batch strategy of each library way; 0 for the ways that call the driver themselves. */
static const int way_strategy[N_WAYS] = {0, OMPBATCH_STRATEGY_DIRECT, OMPBATCH_STRATEGY_STAGED,
                                         OMPBATCH_STRATEGY_AUTO, 0};

static int way_is_library(bench_way way)
{
    return way_strategy[way] != 0;
}

/* One cell of --targets and what its auto way must reach there. */
typedef enum target_metric {
    TARGET_AUTO_US = 0,     /* auto's median time at most limit microseconds */
    TARGET_BULK_OVER_AUTO   /* bulk time / auto time at least limit (auto's share of bulk's
                               bandwidth) */
} target_metric;

typedef struct target {
    bench_dir dir;
    ex_host_kind kind;
    size_t count;
    size_t size;
    target_metric metric;
    double limit;
} target;

static const target targets[] = {
    {DIR_H2D, EX_HOST_PINNED, 1024, 4096, TARGET_AUTO_US, 150},
    {DIR_H2D, EX_HOST_PAGEABLE, 1024, 4096, TARGET_AUTO_US, 350},
    {DIR_D2H, EX_HOST_PAGEABLE, 1024, 4096, TARGET_AUTO_US, 500},
    {DIR_D2H, EX_HOST_PINNED, 1024, 4096, TARGET_AUTO_US, 200},
    {DIR_H2D, EX_HOST_PINNED, 4096, 256, TARGET_AUTO_US, 100},
    {DIR_H2D, EX_HOST_PINNED, 64, (size_t)1 << 20, TARGET_BULK_OVER_AUTO, 0.95},
    {DIR_D2H, EX_HOST_PINNED, 64, (size_t)1 << 20, TARGET_BULK_OVER_AUTO, 0.95},
};
#define N_TARGETS (sizeof(targets) / sizeof(targets[0]))

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
    int targets;
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
    double us[N_WAYS];              /* medians */
    double min_us[N_WAYS];
    double phase_us[N_WAYS][N_PHASES]; /* library ways: medians of add, submit, wait */
    ompbatch_stats stats[N_WAYS];   /* library ways: after the last timed run */
    /* How often a timed way ran right after another way (self pairs aside), fewest and most:
     * equal when round_order balanced the cell's predecessors. */
    int follows_min;
    int follows_max;
    int way_verified[N_WAYS];
    int verified;                   /* every way's bytes were right */
    char failure[192];              /* the first way whose byte check failed, and what it found */
    const target *target;           /* --targets: what this cell must reach; else NULL */
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

/* What the ways of one cell run with: the library ways' batches are indexed by way. */
typedef struct runner {
    ex_gpu *gpu;
    const transfer *t;
    ompbatch_batch *batches[N_WAYS];
} runner;

/* ---- options ------------------------------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench [options]   (bazel run //examples:bench -- [options])\n"
            "Moves the same pieces five ways per cell of a grid: a per-copy cuMemcpyAsync loop;\n"
            "ompbatch batches with the direct, staged and auto strategies; and bulk, one\n"
            "contiguous cuMemcpyAsync of all the bytes (the limit). Every way's bytes are\n"
            "checked.\n"
            "  --counts LIST     piece counts (default 1,16,256,1024,4096)\n"
            "  --sizes LIST      piece sizes, suffixes B, K/KiB, M/MiB (default\n"
            "                    8,256,4K,64K,1M,4M)\n"
            "  --dirs LIST       h2d,d2h (default both)\n"
            "  --kinds LIST      pinned,pageable,managed host memory (default pinned,pageable)\n"
            "  --repeats N       timed rounds per cell (default 24; cells over 64 MiB run at most\n"
            "                    %d, and slow cells are trimmed to about %.1f s, never below %d;\n"
            "                    fast cells run up to %dx as many, as fit in %.1f s; always a\n"
            "                    multiple of %d, the cycle of the ways' orders)\n"
            "  --warmup N        untimed rounds per cell first (default 3)\n"
            "  --max-total SIZE  skip cells with more bytes than this (default 256M)\n"
            "  --gap SIZE        bytes between pieces before rounding up to 64 (default 64;\n"
            "                    at least 1, so that no two pieces can merge)\n"
            "  --form F          auto|13000|12080|percopy: sets OMPBATCH_BATCH_FORM before the\n"
            "                    library starts\n"
            "  --device N        CUDA device (default 0)\n"
            "  --json FILE       also write every cell as JSON (relative to where bazel run was\n"
            "                    started); benchmarks/plot_strategies.sh plots it\n"
            "  --quick           small grid for smoke runs: counts 16,1024, sizes 8,4K, 8 rounds\n"
            "                    after 2 warm-ups (explicit options still apply)\n"
            "  --targets         run only the target cells (the grid options are ignored) and\n"
            "                    print each with its target and PASS or FAIL\n"
            "  --require-gpu     exit 1 instead of 0 when there is no GPU\n"
            "  -h, --help        this text\n"
            "Exit status: 0 all well; 1 a failure or a byte mismatch; 2 a bad command line;\n"
            "%d a target missed (--targets).\n",
            BIG_CELL_REPEATS, CELL_BUDGET_US * 1e-6, MIN_REPEATS, SMALL_CELL_FACTOR,
            SMALL_CELL_BUDGET_US * 1e-6, ORDER_CYCLE, EXIT_TARGET_MISSED);
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
    static const size_t counts[] = {1, 16, 256, 1024, 4096};
    static const size_t sizes[] = {8, 256, 4096, 65536, 1048576, 4194304};
    static const size_t quick_counts[] = {16, 1024};
    static const size_t quick_sizes[] = {8, 4096};
    int counts_set = 0, sizes_set = 0, repeats_set = 0, warmup_set = 0;
    memset(o, 0, sizeof(*o));
    o->repeats = 24;
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
        if (strcmp(arg, "--targets") == 0) {
            o->targets = 1;
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
        o->n_kinds = 2;
    }
    if (o->quick && !repeats_set)
        o->repeats = 8;
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

/* The cell's bytes as one contiguous copy from the start of one slab to the start of the other:
 * the same memory kinds as the pieces, none of their per-piece costs. */
static int bulk_once(const ex_gpu *gpu, const transfer *t, double *us)
{
    const ob_driver *driver = gpu->driver;
    double start = ex_now_us();
    int status = OB_CU(driver, cuMemcpyAsync, t->dst, t->src, t->count * t->size, gpu->stream);
    if (status == OMPBATCH_OK)
        status = OB_CU(driver, cuStreamSynchronize, gpu->stream);
    *us = ex_now_us() - start;
    return status;
}

/* Reset is outside the timing: it only forgets the last fill (the stream is idle by then).
 * phases (may be NULL) receives the time of the adds, the submit and the wait. */
static int batch_once(ompbatch_batch *batch, const transfer *t, double *us, double *phases)
{
    int status = ompbatch_batch_reset(batch);
    if (status != OMPBATCH_OK)
        return status;
    double start = ex_now_us();
    for (size_t i = 0; i < t->count && status == OMPBATCH_OK; i++)
        status = ompbatch_batch_add(batch, EX_HPTR(t->dst + i * t->stride), t->dst_num,
                                    EX_HPTR(t->src + i * t->stride), t->src_num, t->size, 0);
    double added = ex_now_us();
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(batch);
    double submitted = ex_now_us();
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(batch);
    double end = ex_now_us();
    *us = end - start;
    if (phases != NULL) {
        phases[PHASE_ADD] = added - start;
        phases[PHASE_SUBMIT] = submitted - added;
        phases[PHASE_WAIT] = end - submitted;
    }
    return status;
}

static int run_way(const runner *r, bench_way way, double *us, double *phases)
{
    switch (way) {
    case WAY_PER_COPY:
        return per_copy_once(r->gpu, r->t, us);
    case WAY_BULK:
        return bulk_once(r->gpu, r->t, us);
    default:
        return batch_once(r->batches[way], r->t, us, phases);
    }
}

static int choose_repeats(const options *o, const cell *c, double warm_round_us)
{
    int repeats = o->repeats;
    /* Cells of tens to hundreds of microseconds are the noisiest and the cheapest: give them
     * as many rounds as fit in SMALL_CELL_BUDGET_US, up to SMALL_CELL_FACTOR times the asked
     * number. With 21 rounds, ways that took the very same path timed up to 15% apart in the
     * H200 grids; a median of ~100 rounds narrows that. */
    if (warm_round_us > 0 && warm_round_us * repeats < SMALL_CELL_BUDGET_US) {
        double fit = SMALL_CELL_BUDGET_US / warm_round_us;
        int most = repeats * SMALL_CELL_FACTOR;
        repeats = fit < most ? (int)fit : most;
    }
    if (c->count * c->size > BIG_CELL_BYTES && repeats > BIG_CELL_REPEATS)
        repeats = BIG_CELL_REPEATS;
    if (warm_round_us > 0 && repeats > MIN_REPEATS && warm_round_us * repeats > CELL_BUDGET_US) {
        int fit = (int)(CELL_BUDGET_US / warm_round_us);
        repeats = fit < MIN_REPEATS ? MIN_REPEATS : fit;
    }
    return (repeats + ORDER_CYCLE - 1) / ORDER_CYCLE * ORDER_CYCLE;
}

/* The order of the ways in round `round`: way k * step mod N_WAYS at place k, with step 1, 2,
 * 3, 4 in turn. N_WAYS is prime, so each round runs every way once; within a cycle of four
 * rounds every way follows every other way exactly once (step d gives the five pairs (w,
 * w + d), the last one across into the next round). What a way leaves behind -- the pack
 * threads awake or asleep, caches, the driver's own staging after a per-copy loop -- changes
 * the next way's time by up to tens of percent on the H200 host. A rotation made auto always
 * follow staged; a shuffle with a fixed seed balanced only on average, and in the D2H pageable
 * 1024 x 4 KiB cell auto followed staged 23 times in 62 rounds and staged followed auto 7, the
 * same in every run, which timed auto 2-11% slower than staged on the same path run after run. */
static void round_order(long round, int order[N_WAYS])
{
    _Static_assert(N_WAYS == 5, "round_order needs a prime number of ways");
    long cycle_at = round % ORDER_CYCLE;
    int step = (int)(cycle_at < 0 ? cycle_at + ORDER_CYCLE : cycle_at) + 1;
    for (int k = 0; k < N_WAYS; k++)
        order[k] = k * step % N_WAYS;
}

static int time_cell(const options *o, const runner *r, cell *c)
{
    double warm[N_WAYS] = {0};
    int status = OMPBATCH_OK;
    int previous = -1, follows[N_WAYS][N_WAYS] = {{0}};
    /* The warm-ups end the cycle that the timed rounds begin, so the first timed way follows
     * the way that the cycle puts before it. */
    for (int w = 0; w < o->warmup && status == OMPBATCH_OK; w++) {
        int order[N_WAYS];
        round_order((long)w - o->warmup, order);
        for (int i = 0; i < N_WAYS && status == OMPBATCH_OK; i++) {
            status = run_way(r, (bench_way)order[i], &warm[order[i]], NULL);
            previous = order[i];
        }
    }
    if (status != OMPBATCH_OK)
        return status;
    double round_us = 0;
    for (int way = 0; way < N_WAYS; way++)
        round_us += warm[way];
    c->repeats = choose_repeats(o, c, o->warmup > 0 ? round_us : 0);
    size_t n = (size_t)c->repeats;
    /* times[way * n + rep]; phases[((way * N_PHASES) + phase) * n + rep] */
    double *times = malloc(N_WAYS * n * (1 + N_PHASES) * sizeof(*times));
    if (times == NULL) {
        fprintf(stderr, BENCH ": out of memory for %d timings\n", c->repeats);
        return OMPBATCH_ERR_NO_MEMORY;
    }
    double *phases = times + N_WAYS * n;
    for (size_t rep = 0; rep < n && status == OMPBATCH_OK; rep++) {
        int order[N_WAYS];
        round_order((long)rep, order);
        for (int i = 0; i < N_WAYS && status == OMPBATCH_OK; i++) {
            size_t way = (size_t)order[i];
            double got[N_PHASES] = {0};
            status = run_way(r, (bench_way)way, &times[way * n + rep], got);
            for (size_t ph = 0; ph < N_PHASES; ph++)
                phases[(way * N_PHASES + ph) * n + rep] = got[ph];
            if (previous >= 0)
                follows[previous][way]++;
            previous = (int)way;
        }
    }
    c->follows_min = INT32_MAX;
    c->follows_max = 0;
    for (int a = 0; a < N_WAYS; a++)
        for (int b = 0; b < N_WAYS; b++)
            if (a != b) {
                c->follows_min = follows[a][b] < c->follows_min ? follows[a][b] : c->follows_min;
                c->follows_max = follows[a][b] > c->follows_max ? follows[a][b] : c->follows_max;
            }
    for (int way = 0; way < N_WAYS && status == OMPBATCH_OK; way++) {
        c->min_us[way] = ex_min(times + (size_t)way * n, n);
        c->us[way] = ex_median(times + (size_t)way * n, n);
        for (size_t ph = 0; ph < N_PHASES; ph++)
            c->phase_us[way][ph] = ex_median(phases + ((size_t)way * N_PHASES + ph) * n, n);
        memset(&c->stats[way], 0, sizeof(c->stats[way]));
        c->stats[way].struct_size = sizeof(c->stats[way]);
        if (way_is_library((bench_way)way))
            status = ompbatch_batch_get_stats(r->batches[way], &c->stats[way]);
    }
    free(times);
    return status;
}

/* Poisons the destination, runs the way once more and checks every byte of the slab. expect
 * holds the source slab's bytes (same layout); scratch is a pageable slab for reading back a
 * device destination; host_dst is the host destination (D2H) or NULL (H2D). Bulk copies
 * count * size bytes from the start of the slab, so everything after them must stay poisoned. */
static int verify_way(const runner *r, bench_way way, const unsigned char *expect,
                      unsigned char *scratch, unsigned char *host_dst, cell *c)
{
    const transfer *t = r->t;
    size_t slab = t->count * t->stride;
    size_t pieces = way == WAY_BULK ? 1 : t->count;
    size_t size = way == WAY_BULK ? t->count * t->size : t->size;
    size_t stride = way == WAY_BULK ? slab : t->stride;
    char why[160];
    double ignored;
    int status;
    const unsigned char *got = host_dst != NULL ? host_dst : scratch;
    if (host_dst != NULL) {
        memset(host_dst, EX_POISON, slab);
        if ((status = run_way(r, way, &ignored, NULL)) != OMPBATCH_OK)
            return status;
    } else {
        ex_gpu *gpu = r->gpu;
        memset(scratch, EX_POISON, slab);
        if ((status = ex_gpu_copy(gpu, t->dst, EX_DPTR(scratch), slab)) != OMPBATCH_OK ||
            (status = run_way(r, way, &ignored, NULL)) != OMPBATCH_OK ||
            (status = ex_gpu_copy(gpu, EX_DPTR(scratch), t->dst, slab)) != OMPBATCH_OK)
            return status;
    }
    c->way_verified[way] = ex_check_pieces(got, expect, pieces, size, stride, why, sizeof(why));
    if (!c->way_verified[way]) {
        if (c->verified)
            snprintf(c->failure, sizeof(c->failure), "%s: %s", way_names[way], why);
        c->verified = 0;
    }
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
    runner r;
    memset(&r, 0, sizeof(r));
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
    r.gpu = gpu;
    r.t = &t;
    for (int way = 0; way < N_WAYS && status == OMPBATCH_OK; way++) {
        if (!way_is_library((bench_way)way))
            continue;
        ompbatch_batch_options options;
        memset(&options, 0, sizeof(options));
        options.struct_size = sizeof(options);
        options.strategy = way_strategy[way];
        status = ompbatch_batch_create(&r.batches[way], gpu->ordinal, NULL, &options);
    }
    if (status != OMPBATCH_OK)
        goto destroy_batches;
    if ((status = time_cell(o, &r, c)) != OMPBATCH_OK)
        goto destroy_batches;
    c->verified = 1;
    for (int way = 0; way < N_WAYS && status == OMPBATCH_OK; way++)
        status = c->dir == DIR_H2D ? verify_way(&r, (bench_way)way, host, scratch, NULL, c)
                                   : verify_way(&r, (bench_way)way, scratch, NULL, host, c);

destroy_batches:
    if (status != OMPBATCH_OK)
        snprintf(error, error_size, "%s", ompbatch_last_error());
    for (int way = N_WAYS - 1; way >= 0; way--) {
        int destroyed = ompbatch_batch_destroy(r.batches[way]);
        if (status == OMPBATCH_OK && destroyed != OMPBATCH_OK) {
            status = destroyed;
            snprintf(error, error_size, "%s", ompbatch_last_error());
        }
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

/* ---- comparisons -------------------------------------------------------------------------- */

/* The faster of the two single strategies. */
static bench_way best_single(const cell *c)
{
    return c->us[WAY_STAGED] < c->us[WAY_DIRECT] ? WAY_STAGED : WAY_DIRECT;
}

static double auto_over_best(const cell *c)
{
    return c->us[WAY_AUTO] / c->us[best_single(c)];
}

static int auto_slower_than_best(const cell *c)
{
    return auto_over_best(c) > SLOWER_RATIO;
}

/* Whether two library ways did the very same work in their last timed run: the same paths,
 * pieces, sub-batches, driver calls, batch calls and kernel launches (the per-way "stats" of
 * the JSON, which tests/fake/bench_on_fake_driver_test.sh compares). Auto on the best single
 * strategy's own plan can only differ from it in time by noise; a slower auto on a plan of its
 * own is a wrong choice of the cost model. */
static int same_plan(const cell *c, bench_way a, bench_way b)
{
    const ompbatch_stats *x = &c->stats[a], *y = &c->stats[b];
    return x->paths == y->paths && x->copies_planned == y->copies_planned &&
           x->sub_batches == y->sub_batches &&
           x->driver_calls == y->driver_calls && x->batch_calls == y->batch_calls &&
           x->staged_copies == y->staged_copies && x->staged_bytes == y->staged_bytes &&
           x->kernel_launches == y->kernel_launches && x->staging_refused == y->staging_refused;
}

static int auto_on_best_plan(const cell *c)
{
    return same_plan(c, WAY_AUTO, best_single(c));
}

static double target_value(const cell *c)
{
    return c->target->metric == TARGET_AUTO_US ? c->us[WAY_AUTO]
                                               : c->us[WAY_BULK] / c->us[WAY_AUTO];
}

static int target_passed(const cell *c)
{
    double value = target_value(c);
    return c->target->metric == TARGET_AUTO_US ? value <= c->target->limit
                                               : value >= c->target->limit;
}

static void describe_cell(const cell *c, char *buf, size_t size)
{
    char bytes[32];
    snprintf(buf, size, "%s %s %zu x %s", dir_name(c->dir), ex_host_kind_name(c->kind),
             c->count, ex_size_name(c->size, bytes, sizeof(bytes)));
}

/* ---- output ------------------------------------------------------------------------------- */

static void print_header(void)
{
    printf("%-4s %-9s %5s %8s %10s %10s %10s %10s %10s  %-20s %4s\n", "dir", "host", "n",
           "size", "per-copy", "direct", "staged", "auto", "bulk", "auto path", "reps");
}

static void print_row(const cell *c)
{
    char size[32], path[64];
    printf("%-4s %-9s %5zu %8s", dir_name(c->dir), ex_host_kind_name(c->kind), c->count,
           ex_size_name(c->size, size, sizeof(size)));
    for (int way = 0; way < N_WAYS; way++)
        printf(" %10.1f", c->us[way]);
    printf("  %-20s %4d%s\n", ex_paths_name(c->stats[WAY_AUTO].paths, path, sizeof(path)),
           c->repeats, c->verified ? "" : "  DATA MISMATCH");
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
    size_t slower;          /* auto slower than per-copy */
    size_t auto_slower;     /* auto slower than the best single strategy */
    size_t auto_slower_own_plan; /* of those, on a plan other than the best strategy's */
    size_t targets_passed;
    double worst_ratio;     /* auto / per-copy, the largest */
    const cell *worst;
    const cell *headline_h2d; /* 1024 x 8 B pinned H2D */
    const cell *headline_d2h; /* 1024 x 4 KiB pinned D2H */
} summary;

static void summarise(const cell *cells, size_t count, summary *s)
{
    for (size_t i = 0; i < count; i++) {
        const cell *c = &cells[i];
        double ratio = c->us[WAY_AUTO] / c->us[WAY_PER_COPY];
        s->cells++;
        s->mismatches += !c->verified;
        s->slower += ratio > SLOWER_RATIO;
        s->auto_slower += auto_slower_than_best(c);
        s->auto_slower_own_plan += auto_slower_than_best(c) && !auto_on_best_plan(c);
        s->targets_passed += c->target != NULL && target_passed(c);
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

static void json_stats(FILE *f, const ompbatch_stats *st)
{
    char path[64];
    fprintf(f,
            "{\"paths\": \"%s\", \"paths_mask\": %u, \"copies_planned\": %llu, "
            "\"sub_batches\": %llu, \"driver_calls\": %llu, \"batch_calls\": %llu, "
            "\"staged_copies\": %llu, \"staged_bytes\": %llu, \"kernel_launches\": %llu, "
            "\"staging_refused\": %llu}",
            ex_paths_name(st->paths, path, sizeof(path)), st->paths,
            (unsigned long long)st->copies_planned, (unsigned long long)st->sub_batches,
            (unsigned long long)st->driver_calls, (unsigned long long)st->batch_calls,
            (unsigned long long)st->staged_copies, (unsigned long long)st->staged_bytes,
            (unsigned long long)st->kernel_launches, (unsigned long long)st->staging_refused);
}

static void json_cell(FILE *f, const cell *c)
{
    char path[64];
    const ompbatch_stats *au = &c->stats[WAY_AUTO];
    /* The keys of the two-way bench first; "ompbatch" is auto, the library's default. */
    fprintf(f,
            "    {\"dir\": \"%s\", \"host\": \"%s\", \"count\": %zu, \"size\": %zu, "
            "\"bytes\": %zu, \"stride\": %zu, \"repeats\": %d, \"per_copy_us\": %.3f, "
            "\"ompbatch_us\": %.3f, \"per_copy_min_us\": %.3f, \"ompbatch_min_us\": %.3f, "
            "\"speedup\": %.4f, \"path\": \"%s\", \"copies_planned\": %llu, "
            "\"attr_groups\": %llu, \"sub_batches\": %llu, \"driver_calls\": %llu, "
            "\"verified\": %s",
            dir_name(c->dir), ex_host_kind_name(c->kind), c->count, c->size,
            c->count * c->size, c->stride, c->repeats, c->us[WAY_PER_COPY], c->us[WAY_AUTO],
            c->min_us[WAY_PER_COPY], c->min_us[WAY_AUTO], c->us[WAY_PER_COPY] / c->us[WAY_AUTO],
            ex_paths_name(au->paths, path, sizeof(path)), (unsigned long long)au->copies_planned,
            (unsigned long long)au->attr_groups, (unsigned long long)au->sub_batches,
            (unsigned long long)au->driver_calls, c->verified ? "true" : "false");
    for (int way = 0; way < N_WAYS; way++)
        if (way != WAY_PER_COPY)
            fprintf(f, ", \"%s_us\": %.3f", way_keys[way], c->us[way]);
    fprintf(f, ", \"min_us\": {");
    for (int way = 0; way < N_WAYS; way++)
        fprintf(f, "%s\"%s\": %.3f", way ? ", " : "", way_keys[way], c->min_us[way]);
    fprintf(f, "}, \"stats\": {");
    for (int way = 0, first = 1; way < N_WAYS; way++) {
        if (!way_is_library((bench_way)way))
            continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", way_keys[way]);
        json_stats(f, &c->stats[way]);
        first = 0;
    }
    fprintf(f, "}, \"phases\": {");
    for (int way = 0, first = 1; way < N_WAYS; way++) {
        if (!way_is_library((bench_way)way))
            continue;
        fprintf(f, "%s\"%s\": {", first ? "" : ", ", way_keys[way]);
        for (int ph = 0; ph < N_PHASES; ph++)
            fprintf(f, "%s\"%s\": %.3f", ph ? ", " : "", phase_keys[ph], c->phase_us[way][ph]);
        fprintf(f, "}");
        first = 0;
    }
    fprintf(f, "}, \"follows\": [%d, %d], \"verified_ways\": {", c->follows_min, c->follows_max);
    for (int way = 0; way < N_WAYS; way++)
        fprintf(f, "%s\"%s\": %s", way ? ", " : "", way_keys[way],
                c->way_verified[way] ? "true" : "false");
    bench_way best = best_single(c);
    fprintf(f,
            "}, \"best_single\": \"%s\", \"best_single_us\": %.3f, \"auto_within_5pct\": %s, "
            "\"auto_on_best_plan\": %s, "
            "\"ratios\": {\"auto_over_best_single\": %.4f, \"per_copy_over_auto\": %.4f, "
            "\"direct_over_auto\": %.4f, \"staged_over_auto\": %.4f, "
            "\"bulk_over_auto\": %.4f, \"staged_over_direct\": %.4f}",
            way_keys[best], c->us[best], auto_slower_than_best(c) ? "false" : "true",
            auto_on_best_plan(c) ? "true" : "false", auto_over_best(c), c->us[WAY_PER_COPY] / c->us[WAY_AUTO],
            c->us[WAY_DIRECT] / c->us[WAY_AUTO], c->us[WAY_STAGED] / c->us[WAY_AUTO],
            c->us[WAY_BULK] / c->us[WAY_AUTO], c->us[WAY_STAGED] / c->us[WAY_DIRECT]);
    if (c->target != NULL)
        fprintf(f,
                ", \"target\": {\"metric\": \"%s\", \"op\": \"%s\", \"limit\": %g, "
                "\"value\": %.4f, \"pass\": %s}",
                c->target->metric == TARGET_AUTO_US ? "auto_us" : "bulk_over_auto",
                c->target->metric == TARGET_AUTO_US ? "<=" : ">=", c->target->limit,
                target_value(c), target_passed(c) ? "true" : "false");
    if (!c->verified) {
        fprintf(f, ", \"failure\": ");
        json_string(f, c->failure);
    }
    fprintf(f, "}");
}

static void json_headline(FILE *f, const char *name, const cell *c, const char *end)
{
    if (c != NULL)
        fprintf(f, "    \"%s\": %.4f%s\n", name, c->us[WAY_PER_COPY] / c->us[WAY_AUTO], end);
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
    fprintf(f, "},\n  \"settings\": {\"mode\": \"%s\", \"warmup\": %d, \"repeats\": %d, "
               "\"gap\": %zu, \"align\": %zu, \"max_total_bytes\": %zu, "
               "\"timer\": \"CLOCK_MONOTONIC\", \"statistic\": \"median\", "
               "\"order\": \"each way follows each other way equally often (cycles of 4 rounds)\", "
               "\"ways\": [",
            o->targets ? "targets" : "grid", o->warmup, o->repeats, o->gap, PIECE_ALIGN,
            o->max_total);
    for (int way = 0; way < N_WAYS; way++)
        fprintf(f, "%s\"%s\"", way ? ", " : "", way_keys[way]);
    fprintf(f, "]},\n  \"cells\": [\n");
    for (size_t i = 0; i < count; i++) {
        json_cell(f, &cells[i]);
        fprintf(f, "%s\n", i + 1 < count ? "," : "");
    }
    fprintf(f, "  ],\n  \"summary\": {\n    \"cells\": %zu,\n    \"skipped\": %zu,\n"
               "    \"mismatches\": %zu,\n    \"slower_than_per_copy\": %zu,\n"
               "    \"auto_slower_than_best_single\": %zu,\n"
               "    \"auto_slower_on_own_plan\": %zu,\n    \"auto_slower_cells\": [",
            s->cells, s->skipped, s->mismatches, s->slower, s->auto_slower,
            s->auto_slower_own_plan);
    char name[96];
    for (size_t i = 0, listed = 0; i < count; i++) {
        if (!auto_slower_than_best(&cells[i]))
            continue;
        describe_cell(&cells[i], name, sizeof(name));
        fprintf(f, "%s", listed++ ? ", " : "");
        json_string(f, name);
    }
    fprintf(f, "],\n");
    if (o->targets)
        fprintf(f, "    \"targets_passed\": %zu,\n    \"targets\": %zu,\n", s->targets_passed,
                s->cells);
    if (s->worst != NULL)
        fprintf(f, "    \"worst_ratio\": %.4f,\n", s->worst_ratio);
    else
        fprintf(f, "    \"worst_ratio\": null,\n");
    json_headline(f, "speedup_h2d_pinned_1024x8", s->headline_h2d, ",");
    json_headline(f, "speedup_d2h_pinned_1024x4096", s->headline_d2h, "");
    fprintf(f, "  }\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* For each cell: the better single strategy and how auto compares with it. */
static void print_strategies(const cell *cells, size_t count)
{
    char name[96];
    printf("\nauto against the best single strategy (slower: auto more than %.0f%% slower)\n",
           (SLOWER_RATIO - 1) * 100);
    printf("%-30s %-7s %10s %10s %9s\n", "cell", "best", "best us", "auto us", "auto/best");
    for (size_t i = 0; i < count; i++) {
        const cell *c = &cells[i];
        bench_way best = best_single(c);
        describe_cell(c, name, sizeof(name));
        printf("%-30s %-7s %10.1f %10.1f %9.2f  %s\n", name, way_names[best], c->us[best],
               c->us[WAY_AUTO], auto_over_best(c),
               !auto_slower_than_best(c) ? "within"
               : auto_on_best_plan(c)    ? "SLOWER (same plan)"
                                         : "SLOWER");
    }
}

/* Where the library ways' time goes: a slow cell shows whether the CPU (adds, submit) or the
 * transfer (wait) is what to work on. */
static void print_phases(const cell *cells, size_t count)
{
    char name[96];
    printf("\nphases (median us of the timed rounds)\n%-30s", "cell");
    for (int way = 0; way < N_WAYS; way++)
        if (way_is_library((bench_way)way))
            printf(" %7s add  submit    wait", way_names[way]);
    printf("\n");
    for (size_t i = 0; i < count; i++) {
        describe_cell(&cells[i], name, sizeof(name));
        printf("%-30s", name);
        for (int way = 0; way < N_WAYS; way++)
            if (way_is_library((bench_way)way))
                printf(" %11.1f %7.1f %7.1f", cells[i].phase_us[way][PHASE_ADD],
                       cells[i].phase_us[way][PHASE_SUBMIT], cells[i].phase_us[way][PHASE_WAIT]);
        printf("\n");
    }
}

static void print_targets(const cell *cells, size_t count, const summary *s)
{
    char name[96];
    print_phases(cells, count);
    printf("\ntargets\n");
    for (size_t i = 0; i < count; i++) {
        const cell *c = &cells[i];
        if (c->target == NULL)
            continue;
        char value[48], goal[32], detail[64] = "";
        describe_cell(c, name, sizeof(name));
        if (c->target->metric == TARGET_AUTO_US) {
            snprintf(value, sizeof(value), "auto %.1f us", target_value(c));
            snprintf(goal, sizeof(goal), "<= %.0f us", c->target->limit);
        } else {
            snprintf(value, sizeof(value), "bulk/auto %.3f", target_value(c));
            snprintf(goal, sizeof(goal), ">= %.2f", c->target->limit);
            snprintf(detail, sizeof(detail), "  (bulk %.1f us, auto %.1f us)", c->us[WAY_BULK],
                     c->us[WAY_AUTO]);
        }
        printf("  %-28s %-18s target %-11s %s%s\n", name, value, goal,
               target_passed(c) ? "PASS" : "FAIL", detail);
    }
    printf("targets: %zu of %zu passed\n", s->targets_passed, s->cells);
}

static void print_summary(const cell *cells, size_t count, const summary *s)
{
    char name[96];
    if (s->slower > 0) {
        size_t listed = 0;
        printf("auto slower than per-copy by more than %.0f%% (auto/per-copy):",
               (SLOWER_RATIO - 1) * 100);
        for (size_t i = 0; i < count && listed < MAX_LISTED; i++) {
            const cell *c = &cells[i];
            double ratio = c->us[WAY_AUTO] / c->us[WAY_PER_COPY];
            if (ratio > SLOWER_RATIO) {
                describe_cell(c, name, sizeof(name));
                printf("%s %s %.2f", listed ? ";" : "", name, ratio);
                listed++;
            }
        }
        if (s->slower > listed)
            printf("; and %zu more", s->slower - listed);
        printf("\n");
    }
    printf("auto more than %.0f%% slower than the best single strategy: %zu of %zu cell(s)",
           (SLOWER_RATIO - 1) * 100, s->auto_slower, s->cells);
    if (s->auto_slower > 0)
        printf(", %zu on the best strategy's own plan (the same driver calls and launches: "
               "timing noise), %zu on a plan of its own:",
               s->auto_slower - s->auto_slower_own_plan, s->auto_slower_own_plan);
    printf("\n");
    for (size_t i = 0; i < count; i++) {
        const cell *c = &cells[i];
        if (!auto_slower_than_best(c))
            continue;
        bench_way best = best_single(c);
        describe_cell(c, name, sizeof(name));
        printf("  %s: auto %.1f us, %s %.1f us (%.2fx)%s\n", name, c->us[WAY_AUTO],
               way_names[best], c->us[best], auto_over_best(c),
               auto_on_best_plan(c) ? ", same plan" : ", own plan");
    }
    if (s->mismatches > 0)
        printf("DATA MISMATCH in %zu cell(s): see the rows marked above\n", s->mismatches);
    if (s->worst != NULL)
        describe_cell(s->worst, name, sizeof(name));
    printf("summary: %zu cells (%zu skipped); worst auto/per-copy %.2f (%s); slower than "
           "per-copy by >%.0f%%: %s (%zu); 1024 x 8 B pinned H2D ",
           s->cells, s->skipped, s->worst_ratio, s->worst ? name : "none",
           (SLOWER_RATIO - 1) * 100, s->slower ? "yes" : "no", s->slower);
    if (s->headline_h2d)
        printf("%.2fx", s->headline_h2d->us[WAY_PER_COPY] / s->headline_h2d->us[WAY_AUTO]);
    else
        printf("not run");
    printf(", 1024 x 4 KiB pinned D2H ");
    if (s->headline_d2h)
        printf("%.2fx", s->headline_d2h->us[WAY_PER_COPY] / s->headline_d2h->us[WAY_AUTO]);
    else
        printf("not run");
    printf("\n");
}

/* ---- main --------------------------------------------------------------------------------- */

/* Fills cells with the grid of the options (or the target cells); returns how many, and counts
 * the cells over --max-total in *skipped. */
static size_t plan_cells(const options *o, cell *cells, size_t *skipped)
{
    size_t n = 0;
    *skipped = 0;
    if (o->targets) {
        for (size_t i = 0; i < N_TARGETS; i++) {
            cells[n].dir = targets[i].dir;
            cells[n].kind = targets[i].kind;
            cells[n].count = targets[i].count;
            cells[n].size = targets[i].size;
            cells[n].target = &targets[i];
            n++;
        }
        return n;
    }
    for (size_t d = 0; d < o->n_dirs; d++)
        for (size_t k = 0; k < o->n_kinds; k++)
            for (size_t c = 0; c < o->n_counts; c++)
                for (size_t z = 0; z < o->n_sizes; z++) {
                    if (o->sizes[z] > o->max_total / o->counts[c]) {
                        (*skipped)++;
                        continue;
                    }
                    cells[n].dir = o->dirs[d];
                    cells[n].kind = o->kinds[k];
                    cells[n].count = o->counts[c];
                    cells[n].size = o->sizes[z];
                    n++;
                }
    return n;
}

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
    size_t max_cells =
        o.targets ? N_TARGETS : o.n_dirs * o.n_kinds * o.n_counts * o.n_sizes;
    cell *cells = calloc(max_cells ? max_cells : 1, sizeof(*cells));
    if (cells == NULL) {
        ex_gpu_close(&gpu);
        fprintf(stderr, BENCH ": out of memory\n");
        return 1;
    }
    size_t skipped = 0;
    size_t planned = plan_cells(&o, cells, &skipped);
    char max_total[32];
    printf("bench: %s (device %d), driver %d.%d, %s%s\n", gpu.name, gpu.ordinal,
           info.driver_version / 1000, info.driver_version % 1000 / 10,
           ex_form_name(info.batch_form), info.forced ? " (forced by OMPBATCH_BATCH_FORM)" : "");
    printf("%s; median us of %d timed rounds of all ways, in orders where each way follows "
           "each other way equally often, after %d warm-up(s) (fewer for cells "
           "over 64 MiB or slow ones, up to %dx for fast ones: column reps); pieces %zu B apart, "
           "aligned to %zu, nothing merges; "
           "cells over %s skipped\n",
           o.targets ? "target cells" : "grid", o.repeats, o.warmup, SMALL_CELL_FACTOR, o.gap,
           PIECE_ALIGN,
           ex_size_name(o.max_total, max_total, sizeof(max_total)));
    print_header();

    double started = ex_now_us();
    size_t ran = 0;
    int rc = 0;
    /* A throwaway cell first: a process's first driver calls and a GPU coming out of idle make
     * the first measured cells slower on every way, which says nothing about any. */
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
    for (size_t i = 0; i < planned && rc == 0; i++) {
        cell *c = &cells[i];
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
    print_strategies(cells, ran);
    if (o.targets)
        print_targets(cells, ran, &s);
    print_summary(cells, ran, &s);
    if (o.json != NULL && write_json(o.json, &o, &gpu, &info, cells, ran, &s) != 0)
        rc = 1;
    if (rc == 0 && s.mismatches > 0)
        rc = 1;
    if (rc == 0 && o.targets && s.targets_passed < s.cells)
        rc = EXIT_TARGET_MISSED;
    free(cells);
    ex_gpu_close(&gpu);
    return rc;
}
