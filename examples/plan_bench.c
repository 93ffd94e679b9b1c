/* The planner under heavy overlap: one host batch of N copies of 8 bytes in one of three
 * shapes, added, planned and run, timed and measured, every byte checked.
 *
 *   one-dst    every copy writes the same 8 bytes, each from a source of its own: N levels
 *              (each copy after the one before), the last copy's bytes win
 *   one-src    every copy reads the same 8 bytes into a destination of its own (a broadcast):
 *              one level
 *   random     copies at random places in an arena of 16 x N bytes: destinations and sources
 *              overlap each other at random (checked against the copies applied in order)
 *
 * Usage: plan_bench [--shape one-dst|one-src|random] [--copies N] [--seed S]
 *                   [--max-seconds T] [--max-mb M]
 * Prints one line per run: the shape, N, the seconds of the adds and of the submit (plan and
 * run), the levels and the growth of the process's peak resident memory over what it held
 * before the batch. With --max-seconds or --max-mb, exits 1 when the submit took longer or
 * the memory grew more (not checked under a sanitizer, which slows and enlarges everything). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include "ompbatch.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Resident memory now, from /proc (the peak so far is getrusage's). */
static double resident_mb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0.0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * 4096.0 / (1024.0 * 1024.0);
}

static double peak_mb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0;
}

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(next_random(&s) >> 24);
}

static int die(const char *what, int status)
{
    fprintf(stderr, "plan_bench: %s: %s (%s)\n", what, ompbatch_err_name(status),
            ompbatch_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    /* Memory is counted in the pages the process touches: transparent huge pages would round
     * each 2 MiB region up whole, depending on what else the machine holds (+-30 MB here). */
    (void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    const char *shape = "one-dst";
    size_t n = 1000000;
    uint64_t seed = 1;
    double max_seconds = 0.0, max_mb = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--shape") == 0 && v != NULL)
            shape = v;
        else if (strcmp(argv[i], "--copies") == 0 && v != NULL)
            n = strtoull(v, NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0 && v != NULL)
            seed = strtoull(v, NULL, 10);
        else if (strcmp(argv[i], "--max-seconds") == 0 && v != NULL)
            max_seconds = strtod(v, NULL);
        else if (strcmp(argv[i], "--max-mb") == 0 && v != NULL)
            max_mb = strtod(v, NULL);
        else {
            fprintf(stderr, "usage: plan_bench [--shape one-dst|one-src|random] [--copies N] "
                            "[--seed S] [--max-seconds T] [--max-mb M]\n");
            return 2;
        }
        i++;
    }
    int one_dst = strcmp(shape, "one-dst") == 0, one_src = strcmp(shape, "one-src") == 0;
    if ((!one_dst && !one_src && strcmp(shape, "random") != 0) || n == 0) {
        fprintf(stderr, "plan_bench: unknown shape '%s' or no copies\n", shape);
        return 2;
    }
    const size_t piece = 8, arena = 16 * n;
    /* random: one arena both sides use; the others: sources and destinations apart. */
    unsigned char *a = malloc(arena + piece), *b = malloc(arena + piece);
    unsigned char *expect = malloc(arena + piece);
    size_t *dst_at = malloc(n * sizeof(*dst_at)), *src_at = malloc(n * sizeof(*src_at));
    if (a == NULL || b == NULL || expect == NULL || dst_at == NULL || src_at == NULL) {
        fprintf(stderr, "plan_bench: out of memory for %zu copies\n", n);
        return 1;
    }
    fill(a, arena + piece, seed);
    memset(b, 0xA5, arena + piece);
    uint64_t r = seed * 0x9E3779B97F4A7C15ull | 1;
    for (size_t i = 0; i < n; i++) {
        if (one_dst) {
            dst_at[i] = 0;
            src_at[i] = i * piece;
        } else if (one_src) {
            dst_at[i] = i * piece;
            src_at[i] = 0;
        } else {
            /* Source and destination of one copy apart (a copy may not overlap itself). */
            do {
                dst_at[i] = next_random(&r) % (arena - piece);
                src_at[i] = next_random(&r) % (arena - piece);
            } while (dst_at[i] < src_at[i] + piece && src_at[i] < dst_at[i] + piece);
        }
    }
    unsigned char *dst_base = one_dst || one_src ? b : a, *src_base = a;
    /* The reference: the copies applied one after another. */
    memcpy(expect, dst_base, arena + piece);
    if (one_dst || one_src) {
        for (size_t i = 0; i < n; i++)
            memcpy(expect + dst_at[i], a + src_at[i], piece);
    } else {
        for (size_t i = 0; i < n; i++)
            memmove(expect + dst_at[i], expect + src_at[i], piece);
    }
    double before_mb = resident_mb();
    ompbatch_batch *batch;
    int status = ompbatch_batch_create(&batch, OMPBATCH_HOST_DEVICE, NULL, NULL);
    if (status != OMPBATCH_OK)
        return die("create", status);
    double t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        status = ompbatch_batch_add(batch, dst_base + dst_at[i], OMPBATCH_HOST_DEVICE,
                                    src_base + src_at[i], OMPBATCH_HOST_DEVICE, piece, 0);
        if (status != OMPBATCH_OK)
            return die("add", status);
    }
    double t1 = now_s();
    if ((status = ompbatch_batch_submit(batch)) != OMPBATCH_OK)
        return die("submit", status);
    double t2 = now_s();
    if ((status = ompbatch_batch_wait(batch)) != OMPBATCH_OK)
        return die("wait", status);
    double grown_mb = peak_mb() - before_mb;
    ompbatch_stats stats;
    memset(&stats, 0, sizeof(stats));
    stats.struct_size = sizeof(stats);
    if ((status = ompbatch_batch_get_stats(batch, &stats)) != OMPBATCH_OK)
        return die("stats", status);
    if ((status = ompbatch_batch_destroy(batch)) != OMPBATCH_OK)
        return die("destroy", status);
    int bytes_ok = memcmp(dst_base, expect, arena + piece) == 0;
    printf("plan_bench: shape %s, %zu copies: add %.3f s, submit (plan + run) %.3f s, %llu "
           "step(s), peak memory +%.0f MB, bytes %s\n",
           shape, n, t1 - t0, t2 - t1, (unsigned long long)stats.sub_batches, grown_mb,
           bytes_ok ? "exact" : "WRONG");
    int failed = !bytes_ok;
    if (SANITIZED && (max_seconds > 0 || max_mb > 0)) {
        printf("plan_bench: bounds not checked under a sanitizer\n");
    } else {
        if (max_seconds > 0 && t2 - t1 > max_seconds) {
            printf("plan_bench: FAIL: the submit took %.3f s, more than %.3f s\n", t2 - t1,
                   max_seconds);
            failed = 1;
        }
        if (max_mb > 0 && grown_mb > max_mb) {
            printf("plan_bench: FAIL: memory grew %.0f MB, more than %.0f MB\n", grown_mb,
                   max_mb);
            failed = 1;
        }
    }
    free(a);
    free(b);
    free(expect);
    free(dst_at);
    free(src_at);
    return failed;
}
