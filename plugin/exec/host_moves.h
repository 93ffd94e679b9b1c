/* Host moves (host_moves.c): the CPU's part of the staged and pipelined backends, packing the
 * program's bytes into pinned staging and unpacking them out of it. */
#ifndef OMPBATCH_PLUGIN_EXEC_HOST_MOVES_H
#define OMPBATCH_PLUGIN_EXEC_HOST_MOVES_H

#include <stddef.h>

#include "plugin/exec/backend.h"

/* From this many bytes a pack or unpack is split across every pack thread. */
#define OB_PARALLEL_MOVE_BYTES ((size_t)256 << 10)

/* What host moves do. A pack's compact destination is pinned staging the GPU reads next:
 * written with streaming stores (stream_copy.h) when the copy engine reads it in bulk, or
 * with ordinary stores when the copy kernel reads a small pack over the bus, which then finds
 * the bytes in the packing core's cache (one thread's streaming stores run at memory speed:
 * 64 KiB took 10 us on an H100's host, and twice ordinary stores' time on the build machine). */
typedef enum ob_move_kind {
    OB_MOVE_UNPACK = 0,     /* from compact staging into the program's memory */
    OB_MOVE_PACK_STREAMING, /* into staging, streaming stores */
    OB_MOVE_PACK_CACHED     /* into staging, ordinary stores */
} ob_move_kind;

/* Runs host moves, split across the pack threads when large. */
void ob_host_moves_run(const ob_host_move *moves, size_t count, ob_move_kind kind);

/* Unpacks compact bytes [begin, end) of one move on the calling thread. */
void ob_host_unpack_range(const ob_host_move *move, size_t begin, size_t end);

#endif
