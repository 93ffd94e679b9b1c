/* libFuzzer target over the planner: a random list of copies (overlaps, chains that must keep
 * their order, neighbours that may merge, zero-byte copies, map types, options), run through a
 * batch and checked against a reference executor that applies the copies one after another.
 * Any difference aborts, so libFuzzer reports it with the input.
 *
 * Host mode: every copy lies in one host arena, through a host batch. Device mode (flags bit 7,
 * when a CUDA driver is loaded: the test runs with the fake driver): copies lie in three
 * regions -- pageable, pinned and device memory of device 0 -- through a device-0 batch whose
 * strategy (direct, staged, auto) comes from the input's length; the fake driver executes the
 * copies and the copy kernel on host memory and stops at any access the GPU could not make.
 *
 * Input: byte 0 is flags, then records of 6 bytes per copy: dst offset (2, little endian),
 * src offset (2), length (1, times 1 or 16 by a flag), map type selector (1). A selector with
 * bit 7 set makes the record a rectangle instead (ompbatch_batch_add_rect): a column of `rows`
 * elements (64 to 127 from the length byte's low 6 bits, fewer where the region ends) of 1, 2,
 * 4 or 8 bytes (its top 2 bits), each side's rows 1 to 4 elements apart (selector bits 0-1 for
 * src, 2-3 for dst): whole with its walks when the runs are many, run by run otherwise.
 *   flags bit 0-1: options.max_copies = 0 (default), 1, 2 or 3 (long plans split)
 *   bit 2: options.synchronous
 *   bit 3: lengths are the byte times 16 (larger copies)
 *   bit 4: refill the batch with the same copies and check again (plan reuse)
 *   bit 5: describe the open batch before submitting
 *   bit 6: reset and refill with the copies in reverse order (a different plan)
 *   bit 7: device mode (offsets then address all three regions)
 *
 * Invariants: every add succeeds (the pointers are valid); the submit fails with
 * OMPBATCH_ERR_INVALID_ARGUMENT exactly when a copy's source and destination overlap, and then
 * no byte changed; otherwise every region equals the reference byte for byte; the
 * statistics count every copy added, every zero-byte one and every byte planned; a refill of the
 * same copies reuses the plan. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompbatch.h"
#include "plugin/cuda/driver.h"

#define ARENA_BYTES 4096
#define RECORD_BYTES 6
#define MAX_COPIES 512

typedef struct copy {
    size_t dst, src, bytes;
    uint64_t map_type;
    /* A rectangle when rows > 0: rows elements of `element` bytes, src_pitch and dst_pitch
     * elements apart; bytes is rows * element. */
    size_t rows, element, src_pitch, dst_pitch;
} copy;

/* The contiguous runs of a rectangle (1 when both sides are contiguous). */
static size_t rect_runs(const copy *c)
{
    return c->src_pitch == 1 && c->dst_pitch == 1 ? 1 : c->rows;
}

/* What the batch counts as added for a copy: a rectangle of many runs is one copy. */
static size_t added_for(const copy *c)
{
    if (c->rows == 0)
        return 1;
    size_t runs = rect_runs(c);
    return runs >= 64 ? 1 : runs;
}

static int add_copy(ompbatch_batch *batch, const copy *c, unsigned char *dst, int dst_dev,
                    const unsigned char *src, int src_dev)
{
    if (c->rows == 0)
        return ompbatch_batch_add(batch, dst, dst_dev, src, src_dev, c->bytes, c->map_type);
    size_t volume[2] = {c->rows, 1}, zero[2] = {0, 0};
    size_t dst_dims[2] = {c->rows, c->dst_pitch}, src_dims[2] = {c->rows, c->src_pitch};
    return ompbatch_batch_add_rect(batch, dst, dst_dev, src, src_dev, c->element, 2, volume,
                                   zero, zero, dst_dims, src_dims, c->map_type);
}

#define REGIONS 3

/* Host mode uses region 0 (a static arena); device mode all three (allocated once). */
static unsigned char host_arena[ARENA_BYTES];
static unsigned char *region[REGIONS] = {host_arena};
static int region_device[REGIONS] = {OMPBATCH_HOST_DEVICE, OMPBATCH_HOST_DEVICE, 0};
static int device_mode_ready;
static unsigned char *pageable_region;
static unsigned char expect[REGIONS * ARENA_BYTES];
static unsigned char before[REGIONS * ARENA_BYTES];
static copy copies[MAX_COPIES];
static size_t regions = 1;

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

/* Byte `at` of the regions in use, as one address range of regions * ARENA_BYTES. */
static unsigned char *at(size_t offset)
{
    return region[offset / ARENA_BYTES] + offset % ARENA_BYTES;
}

static void fill_regions(uint32_t seed)
{
    for (size_t i = 0; i < regions * ARENA_BYTES; i++) {
        seed = seed * 1664525u + 1013904223u;
        *at(i) = (unsigned char)(seed >> 24);
    }
}

static void snapshot(unsigned char *out)
{
    for (size_t r = 0; r < regions; r++)
        memcpy(out + r * ARENA_BYTES, region[r], ARENA_BYTES);
}

/* Pageable, pinned and device memory of device 0 from the loaded driver (the fake in tests);
 * 0 when there is no driver. */
static int prepare_device_mode(void)
{
    if (device_mode_ready)
        return device_mode_ready > 0;
    device_mode_ready = -1;
    const ob_driver *driver = ob_driver_get();
    if (!driver->loaded || driver->device_count < 1 || ob_driver_push_context(0) != OMPBATCH_OK)
        return 0;
    void *pinned = NULL;
    CUdeviceptr device = 0;
    unsigned char *pageable = malloc(ARENA_BYTES);
    int ok = pageable != NULL && driver->fn.cuMemAllocHost(&pinned, ARENA_BYTES) == CUDA_SUCCESS &&
             driver->fn.cuMemAlloc(&device, ARENA_BYTES) == CUDA_SUCCESS;
    ob_driver_pop_context();
    if (!ok)
        return 0;
    pageable_region = pageable;
    region[1] = pinned;
    region[2] = (unsigned char *)(uintptr_t)device;
    device_mode_ready = 1;
    return 1;
}

static int ranges_overlap(size_t a, size_t b, size_t n)
{
    return n > 0 && a < b + n && b < a + n;
}

/* Whether a copy (for a rectangle: one of its runs) reads bytes it writes: the batch refuses
 * it. */
static int overlaps(const copy *c)
{
    if (c->rows == 0 || rect_runs(c) == 1)
        return ranges_overlap(c->dst, c->src, c->bytes);
    for (size_t i = 0; i < c->rows; i++)
        if (ranges_overlap(c->dst + i * c->dst_pitch * c->element,
                           c->src + i * c->src_pitch * c->element, c->element))
            return 1;
    return 0;
}

/* The copy on the reference, run after run as the runtime's rectangle copy would. */
static void apply(const copy *c)
{
    if (c->rows == 0 || rect_runs(c) == 1) {
        memcpy(expect + c->dst, expect + c->src, c->bytes);
        return;
    }
    for (size_t i = 0; i < c->rows; i++)
        memcpy(expect + c->dst + i * c->dst_pitch * c->element,
               expect + c->src + i * c->src_pitch * c->element, c->element);
}

/* Runs copies[order...] through the batch (reset first) and checks the result. */
static void run_once(ompbatch_batch *batch, size_t n, int reverse, int describe, uint32_t seed,
                     int expect_reuse)
{
    fill_regions(seed);
    snapshot(expect);
    snapshot(before);
    int bad = 0;
    uint64_t zero = 0, bytes = 0, added = 0, most_planned = 0;
    check(ompbatch_batch_reset(batch) == OMPBATCH_OK, "reset", 0);
    for (size_t k = 0; k < n; k++) {
        const copy *c = &copies[reverse ? n - 1 - k : k];
        int status = add_copy(batch, c, at(c->dst), region_device[c->dst / ARENA_BYTES],
                              at(c->src), region_device[c->src / ARENA_BYTES]);
        check(status == OMPBATCH_OK, "add", k);
        if (c->bytes == 0) {
            zero++;
        } else if (overlaps(c)) {
            bad = 1;
        } else if (!bad) {
            apply(c);
        }
        bytes += c->bytes;
        added += added_for(c);
        most_planned += c->rows > 0 ? rect_runs(c) : 1;
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
        for (size_t i = 0; i < regions * ARENA_BYTES; i++)
            check(*at(i) == before[i], "memory changed by a failed submit at byte", i);
        return;
    }
    check(status == OMPBATCH_OK, "submit", n);
    check(ompbatch_batch_wait(batch) == OMPBATCH_OK, "wait", n);
    for (size_t i = 0; i < regions * ARENA_BYTES; i++)
        check(*at(i) == expect[i], "memory differs from the reference at byte", i);
    ompbatch_stats stats;
    memset(&stats, 0, sizeof(stats));
    stats.struct_size = sizeof(stats);
    check(ompbatch_batch_get_stats(batch, &stats) == OMPBATCH_OK, "stats", 0);
    check(stats.copies_added == added, "copies_added", (size_t)stats.copies_added);
    check(stats.copies_zero == zero, "copies_zero", (size_t)stats.copies_zero);
    check(stats.bytes == bytes, "bytes", (size_t)stats.bytes);
    check(stats.copies_planned + zero <= most_planned, "copies_planned",
          (size_t)stats.copies_planned);
    check(stats.copies_done == stats.copies_planned, "copies_done", (size_t)stats.copies_done);
    if (expect_reuse)
        check(stats.plan_reused == 1, "a refill with the same copies planned again", n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    int device_mode = (flags & 0x80) && prepare_device_mode();
    regions = device_mode ? REGIONS : 1;
    region[0] = device_mode ? pageable_region : host_arena;
    size_t n = (size - 1) / RECORD_BYTES;
    if (n > MAX_COPIES)
        n = MAX_COPIES;
    for (size_t k = 0; k < n; k++) {
        const uint8_t *r = data + 1 + k * RECORD_BYTES;
        copy *c = &copies[k];
        c->dst = (size_t)(r[0] | r[1] << 8) % (regions * ARENA_BYTES);
        c->src = (size_t)(r[2] | r[3] << 8) % (regions * ARENA_BYTES);
        c->bytes = (size_t)r[4] * ((flags & 0x08) ? 16 : 1);
        /* Each side stays inside its region. */
        size_t room_dst = ARENA_BYTES - c->dst % ARENA_BYTES;
        size_t room_src = ARENA_BYTES - c->src % ARENA_BYTES;
        size_t room = room_dst < room_src ? room_dst : room_src;
        if (c->bytes > room)
            c->bytes = room;
        c->map_type = map_types[r[5] % (sizeof(map_types) / sizeof(map_types[0]))];
        c->rows = 0;
        if (r[5] & 0x80) {
            c->element = (size_t)1 << (r[4] >> 6);
            c->src_pitch = 1 + (r[5] & 3);
            c->dst_pitch = 1 + ((r[5] >> 2) & 3);
            size_t most = (c->src_pitch > c->dst_pitch ? c->src_pitch : c->dst_pitch) * c->element;
            size_t rows = 64 + (r[4] & 63);
            size_t fit_dst = room_dst / (c->dst_pitch * c->element);
            size_t fit_src = room_src / (c->src_pitch * c->element);
            if (rows > fit_dst)
                rows = fit_dst;
            if (rows > fit_src)
                rows = fit_src;
            if (rows > 0 && most > 0) {
                c->rows = rows;
                c->bytes = rows * c->element;
                c->map_type = map_types[(r[5] >> 4) & 7];
            }
        }
    }
    ompbatch_batch_options options;
    memset(&options, 0, sizeof(options));
    options.struct_size = sizeof(options);
    options.max_copies = flags & 3;
    options.synchronous = (flags >> 2) & 1;
    if (device_mode) {
        static const int strategies[] = {OMPBATCH_STRATEGY_DIRECT, OMPBATCH_STRATEGY_STAGED,
                                         OMPBATCH_STRATEGY_AUTO};
        options.strategy = strategies[size % 3];
    }
    ompbatch_batch *batch = NULL;
    check(ompbatch_batch_create(&batch, device_mode ? 0 : OMPBATCH_HOST_DEVICE, NULL,
                                &options) == OMPBATCH_OK,
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
