/* libFuzzer target over the planner: a random list of copies inside one host arena (overlaps,
 * chains that must keep their order, neighbours that may merge, zero-byte copies, map types,
 * options), run through a host batch and checked against a reference executor that applies the
 * copies one after another. Any difference aborts, so libFuzzer reports it with the input.
 *
 * Input: byte 0 is flags, then records of 6 bytes per copy: dst offset (2, little endian),
 * src offset (2), length (1, times 1 or 16 by a flag), map type selector (1).
 *   flags bit 0-1: options.max_copies = 0 (default), 1, 2 or 3 (long plans split)
 *   bit 2: options.synchronous
 *   bit 3: lengths are the byte times 16 (larger copies)
 *   bit 4: refill the batch with the same copies and check again (plan reuse)
 *   bit 5: describe the open batch before submitting
 *   bit 6: reset and refill with the copies in reverse order (a different plan)
 *
 * Invariants: every add succeeds (the pointers are valid); the submit fails with
 * OMPBATCH_ERR_INVALID_ARGUMENT exactly when a copy's source and destination overlap, and then
 * nothing in the arena changed; otherwise the arena equals the reference byte for byte; the
 * statistics count every copy added, every zero-byte one and every byte planned; a refill of the
 * same copies reuses the plan. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompbatch.h"

#define ARENA_BYTES 4096
#define RECORD_BYTES 6
#define MAX_COPIES 512

typedef struct copy {
    size_t dst, src, bytes;
    uint64_t map_type;
} copy;

static unsigned char arena[ARENA_BYTES];
static unsigned char expect[ARENA_BYTES];
static unsigned char before[ARENA_BYTES];
static copy copies[MAX_COPIES];

static const uint64_t map_types[] = {
    0,
    OMPBATCH_MAP_TO,
    OMPBATCH_MAP_FROM,
    OMPBATCH_MAP_TO | OMPBATCH_MAP_FROM,
    OMPBATCH_MAP_LITERAL,
    OMPBATCH_MAP_PRIVATE,
    OMPBATCH_MAP_TO | OMPBATCH_MAP_ALWAYS,
    OMPBATCH_MAP_TARGET_PARAM | OMPBATCH_MAP_IMPLICIT,
};

static void fail(const char *what, size_t detail)
{
    fprintf(stderr, "plan_fuzzer: %s (%zu): %s\n", what, detail, ompbatch_last_error());
    abort();
}

static void check(int ok, const char *what, size_t detail)
{
    if (!ok)
        fail(what, detail);
}

static void fill_arena(uint32_t seed)
{
    for (size_t i = 0; i < ARENA_BYTES; i++) {
        seed = seed * 1664525u + 1013904223u;
        arena[i] = (unsigned char)(seed >> 24);
    }
}

static int overlaps(const copy *c)
{
    return c->bytes > 0 && c->dst < c->src + c->bytes && c->src < c->dst + c->bytes;
}

/* Runs copies[order...] through the batch (reset first) and checks the result. */
static void run_once(ompbatch_batch *batch, size_t n, int reverse, int describe, uint32_t seed,
                     int expect_reuse)
{
    fill_arena(seed);
    memcpy(expect, arena, ARENA_BYTES);
    memcpy(before, arena, ARENA_BYTES);
    int bad = 0;
    uint64_t zero = 0, bytes = 0;
    check(ompbatch_batch_reset(batch) == OMPBATCH_OK, "reset", 0);
    for (size_t k = 0; k < n; k++) {
        const copy *c = &copies[reverse ? n - 1 - k : k];
        int status = ompbatch_batch_add(batch, arena + c->dst, OMPBATCH_HOST_DEVICE,
                                        arena + c->src, OMPBATCH_HOST_DEVICE, c->bytes,
                                        c->map_type);
        check(status == OMPBATCH_OK, "add", k);
        if (c->bytes == 0) {
            zero++;
        } else if (overlaps(c)) {
            bad = 1;
        } else if (!bad) {
            memcpy(expect + c->dst, expect + c->src, c->bytes);
        }
        bytes += c->bytes;
    }
    if (describe) {
        size_t needed = 0;
        char text[256];
        int status = ompbatch_batch_describe(batch, text, sizeof(text), &needed);
        check(status == (bad ? OMPBATCH_ERR_INVALID_ARGUMENT : OMPBATCH_OK), "describe", n);
        check(bad || needed > 0, "describe length", needed);
    }
    int status = ompbatch_batch_submit(batch);
    if (bad) {
        check(status == OMPBATCH_ERR_INVALID_ARGUMENT, "submit of an overlapping copy", n);
        check(strstr(ompbatch_last_error(), "overlap") != NULL, "overlap message", n);
        check(memcmp(arena, before, ARENA_BYTES) == 0, "arena changed by a failed submit", n);
        return;
    }
    check(status == OMPBATCH_OK, "submit", n);
    check(ompbatch_batch_wait(batch) == OMPBATCH_OK, "wait", n);
    for (size_t i = 0; i < ARENA_BYTES; i++)
        check(arena[i] == expect[i], "arena differs from the reference at byte", i);
    ompbatch_stats stats;
    memset(&stats, 0, sizeof(stats));
    stats.struct_size = sizeof(stats);
    check(ompbatch_batch_get_stats(batch, &stats) == OMPBATCH_OK, "stats", 0);
    check(stats.copies_added == n, "copies_added", (size_t)stats.copies_added);
    check(stats.copies_zero == zero, "copies_zero", (size_t)stats.copies_zero);
    check(stats.bytes == bytes, "bytes", (size_t)stats.bytes);
    check(stats.copies_planned + zero <= n, "copies_planned", (size_t)stats.copies_planned);
    check(stats.copies_done == stats.copies_planned, "copies_done", (size_t)stats.copies_done);
    if (expect_reuse)
        check(stats.plan_reused == 1, "a refill with the same copies planned again", n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    size_t n = (size - 1) / RECORD_BYTES;
    if (n > MAX_COPIES)
        n = MAX_COPIES;
    for (size_t k = 0; k < n; k++) {
        const uint8_t *r = data + 1 + k * RECORD_BYTES;
        copy *c = &copies[k];
        c->dst = (size_t)(r[0] | r[1] << 8) % ARENA_BYTES;
        c->src = (size_t)(r[2] | r[3] << 8) % ARENA_BYTES;
        c->bytes = (size_t)r[4] * ((flags & 0x08) ? 16 : 1);
        size_t room = ARENA_BYTES - (c->dst > c->src ? c->dst : c->src);
        if (c->bytes > room)
            c->bytes = room;
        c->map_type = map_types[r[5] % (sizeof(map_types) / sizeof(map_types[0]))];
    }
    ompbatch_batch_options options;
    memset(&options, 0, sizeof(options));
    options.struct_size = sizeof(options);
    options.max_copies = flags & 3;
    options.synchronous = (flags >> 2) & 1;
    ompbatch_batch *batch = NULL;
    check(ompbatch_batch_create(&batch, OMPBATCH_HOST_DEVICE, NULL, &options) == OMPBATCH_OK,
          "create", 0);
    uint32_t seed = (uint32_t)size * 2654435761u ^ flags;
    run_once(batch, n, 0, (flags >> 5) & 1, seed, 0);
    if (flags & 0x10)
        run_once(batch, n, 0, 0, seed + 1, 1);
    if (flags & 0x40)
        run_once(batch, n, 1, 0, seed + 2, 0);
    check(ompbatch_batch_destroy(batch) == OMPBATCH_OK, "destroy", 0);
    return 0;
}
