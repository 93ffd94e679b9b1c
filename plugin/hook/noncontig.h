/* The pieces of a non-contiguous `target update` item (OB_MAP_NON_CONTIG): clang describes a
 * strided section, such as a column u[0:n][j:1], by one {offset, count, stride} descriptor per
 * dimension (ob_non_contig, outermost first, strides in bytes), followed by {0, 1, element
 * size}. Each piece is a contiguous byte range at an offset from the item's base; libomptarget
 * copies each piece as its own item (present or skipped on its own).
 *
 * Two lists are formed. The runtime's is what libomptarget 16 copies, reproduced exactly
 * (docs/hook.md "Strided updates" describes its algorithm and where it departs from the
 * specification: the piece size comes from the last descriptor, dimensions whose
 * count * stride equals the next-outer stride are dropped wherever they lie, and offsets are
 * multiplied by the user's stride). The specification's is what the OpenMP specification
 * says, as far as the descriptors show it: an innermost user stride is the innermost stride
 * over the element size, but outer user strides are folded into strides with the array's
 * extents and cannot be told apart, so outer dimensions are read as the runtime reads them. */
#ifndef OMPBATCH_PLUGIN_NONCONTIG_H
#define OMPBATCH_PLUGIN_NONCONTIG_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/hook/omp_abi.h"
#include "plugin/plan/walk.h"

/* Descriptors beyond this many dimensions are not read: no compiler emits them. */
#define OB_PIECES_MAX_DIMS 32

typedef struct ob_strided_piece {
    uint64_t offset; /* from the item's base */
    uint64_t size;
} ob_strided_piece;

typedef struct ob_strided_pieces {
    ob_strided_piece *at;
    size_t count;
} ob_strided_pieces;

typedef enum ob_pieces_status {
    OB_PIECES_OK = 0,
    OB_PIECES_FORMAT,    /* no dimensions, too many, or not the layout clang emits (spec) */
    OB_PIECES_TOO_MANY,  /* more pieces than the caller's limit */
    OB_PIECES_OVERFLOW,  /* an offset or size does not fit 64 bits */
    OB_PIECES_NO_MEMORY
} ob_pieces_status;

/* libomptarget 16's pieces for d[0..dims), in its order. On success *out holds them (count 0
 * and no allocation when there are none); free with ob_pieces_free. */
ob_pieces_status ob_pieces_runtime(const ob_non_contig *d, int64_t dims, size_t limit,
                                   ob_strided_pieces *out);

/* The specification's pieces for d[0..dims), outermost index first. */
ob_pieces_status ob_pieces_spec(const ob_non_contig *d, int64_t dims, size_t limit,
                                ob_strided_pieces *out);

/* Whether two lists cover the same bytes. Sorts and merges both in place (adjacent and
 * overlapping pieces become one), so each afterwards lists its bytes in increasing order. */
int ob_pieces_same_bytes(ob_strided_pieces *a, ob_strided_pieces *b);

/* Sorts by offset and merges adjacent or overlapping pieces. */
void ob_pieces_normalize(ob_strided_pieces *p);

void ob_pieces_free(ob_strided_pieces *p);

/* The pieces as one rectangle (plan/walk.h), both sides laid out alike from the first piece's
 * offset (*first), when they are a regular grid in the order listed: pieces of one size at
 * offsets first + sum over d of i_d * stride_d, the innermost index fastest, none overlapping
 * another -- a column, a pencil, a face or a plane of an array. Returns 0 for any other list
 * (fewer than two pieces among them). */
int ob_pieces_rect(const ob_strided_pieces *p, ob_rect *out, uint64_t *first);

#endif
