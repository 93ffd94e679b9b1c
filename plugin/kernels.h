/* Device code shipped inside the library, as PTX the driver compiles for the GPU at load. */
#ifndef OMPBATCH_PLUGIN_KERNELS_H
#define OMPBATCH_PLUGIN_KERNELS_H

#include <stdint.h>

/* PTX of plugin/kernels/scatter.cu (NUL-terminated), generated at build time. */
extern const char ob_scatter_ptx[];

/* One piece of a scatter: keep in step with struct ob_scatter_piece in scatter.cu. */
typedef struct ob_scatter_piece {
    uint64_t dst;    /* device address */
    uint64_t offset; /* of the piece's bytes in the packed buffer (a multiple of 64) */
    uint64_t bytes;
} ob_scatter_piece;

#define OB_SCATTER_KERNEL "ob_scatter"

#endif
