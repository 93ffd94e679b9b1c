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

#endif
