/* Device code shipped inside the library, as PTX the driver compiles for the GPU at load. */
#ifndef OMPBATCH_PLUGIN_KERNELS_H
#define OMPBATCH_PLUGIN_KERNELS_H

#include <stdint.h>

/* PTX of plugin/cuda/kernels/copy_pieces.cu (NUL-terminated), generated at build time. */
extern const char ob_copy_pieces_ptx[];

/* One piece of the copy kernel: keep in step with struct ob_piece in copy_pieces.cu. Both
 * addresses are ones the GPU can reach (device memory or mapped pinned host memory). */
typedef struct ob_piece {
    uint64_t dst;
    uint64_t src;
    uint64_t bytes;
} ob_piece;

#define OB_COPY_PIECES_KERNEL "ob_copy_pieces"

/* The copy kernel's twin for launches of at most OB_INLINE_PIECES pieces, whose descriptors
 * travel as the launch's parameter (keep in step with copy_pieces.cu): the blocks start on the
 * bytes without first reading a table over the bus.
 *
 * `done`, when not 0, is the address of one 32-bit word per block in pinned host memory, zeroed
 * before the launch: block b, after its pieces and a system-wide fence, sets word b to 1. The
 * host that sees every word set knows the launch's bytes are in place, a microsecond or two
 * before a stream query would say the launch is over (the H100 of 2026-12-06: 16 pieces of
 * 4 KiB from the device into pinned memory, 13.5-14.5 us a round trip by the words against
 * 14.8-16.3 by queries). */
#define OB_INLINE_PIECES 32

typedef struct ob_inline_pieces {
    uint64_t count;
    uint64_t done;
    ob_piece piece[OB_INLINE_PIECES];
} ob_inline_pieces;

#define OB_COPY_INLINE_KERNEL "ob_copy_pieces_inline"

/* Threads per block of every launch of either kernel. */
#define OB_COPY_KERNEL_THREADS 256

/* The rectangle kernel's geometry: keep in step with copy_pieces.cu. A walk lays a compact
 * byte offset x out in memory: with q = x / run, the byte lies at
 *   (x mod run) + sum over d of ((q / (count[0] * ... * count[d-1])) mod count[d]) * stride[d]
 * from the side's first byte, dimension 0 the innermost walked one. dims 0: contiguous. */
#define OB_WALK_MAX_DIMS 16

typedef struct ob_walk {
    uint64_t run;    /* bytes contiguous in memory */
    uint64_t dims;   /* walked dimensions, 0 to OB_WALK_MAX_DIMS */
    uint64_t count[OB_WALK_MAX_DIMS];
    uint64_t stride[OB_WALK_MAX_DIMS]; /* bytes between consecutive indices */
} ob_walk;

/* One launch of the rectangle kernel, passed by value: `bytes` compact bytes from src's walk
 * to dst's, in units of `unit` bytes (1, 2, 4, 8 or 16; every address a unit touches is
 * aligned to it and no run is cut inside one).
 *
 * `flags`, when not 0, is the address of one 32-bit word per chunk of OB_COPY_KERNEL_THREADS
 * units: chunk c is compact units [c * OB_COPY_KERNEL_THREADS, (c + 1) *
 * OB_COPY_KERNEL_THREADS). Block b moves chunks b, b + blocks, b + 2 * blocks, ... in turn,
 * and after each, following a system-wide fence, sets the chunk's word to 1: the host can read
 * a chunk as soon as it sees its word, before the launch has finished. */
typedef struct ob_rect_piece {
    uint64_t dst;
    uint64_t src;
    uint64_t bytes;
    uint64_t unit;
    uint64_t flags;
    ob_walk dst_walk;
    ob_walk src_walk;
} ob_rect_piece;

#define OB_COPY_RECT_KERNEL "ob_copy_rect"

#endif
