/* The copy descriptor that flows from the API through classification and planning to the
 * backends (the memory kinds it is classified by are memkind.h's). */
#ifndef OMPBATCH_PLUGIN_COPY_H
#define OMPBATCH_PLUGIN_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/cuda/driver_api.h"
#include "plugin/cuda/memkind.h"
#include "plugin/plan/walk.h"

/* Where a side of a copy lives, as the caller named it. */
typedef enum ob_side { OB_SIDE_HOST = 0, OB_SIDE_DEVICE = 1 } ob_side;

/* How a planned copy is executed. */
typedef enum ob_route {
    OB_ROUTE_HOST = 0,     /* memcpy on the calling thread */
    OB_ROUTE_BATCH,        /* one cuMemcpyBatchAsync per chunk */
    OB_ROUTE_PER_COPY,     /* one cuMemcpyAsync per copy */
    OB_ROUTE_PIPELINED,    /* a large pageable copy through pinned staging, chunks overlapped */
    OB_ROUTE_STAGED,       /* the copy kernel, with staging for pageable memory (sorted last) */
    OB_ROUTE_COUNT
} ob_route;

/* Direction and host memory kind: what the routing table is keyed by. */
typedef enum ob_category {
    OB_CAT_H2H = 0,
    OB_CAT_H2D_PAGEABLE,
    OB_CAT_H2D_PINNED,
    OB_CAT_D2H_PAGEABLE,
    OB_CAT_D2H_PINNED,
    OB_CAT_D2D,
    OB_CAT_MANAGED,
    OB_CAT_LONE,        /* the only copy of a plan: not classified, see plan.c */
    OB_CAT_COUNT
} ob_category;

/* How a staged copy moves (OB_ROUTE_STAGED). */
typedef enum ob_stage_how {
    OB_STAGE_IN_PLACE = 0, /* the kernel copies between the two addresses (device or mapped
                              pinned memory) */
    OB_STAGE_PACK,         /* H2D: CPU pack into pinned staging, bulk copy, kernel scatter */
    OB_STAGE_GATHER        /* D2H: kernel gather, bulk copy, CPU unpack at the wait */
} ob_stage_how;

/* What identifies an added copy for planning: a batch refilled with copies equal in all of
 * these reuses its plan. */
typedef struct ob_copy_key {
    uintptr_t dst;
    uintptr_t src;
    size_t bytes;
    uint64_t map_type;
    uint8_t dst_side;  /* ob_side */
    uint8_t src_side;
    uint16_t reserved; /* 0 */
    uint32_t rect;     /* 0, or 1 + the index of the batch's rectangle this copy is */
} ob_copy_key;

/* The API fills the fields up to `merged`; planning fills the rest. A rectangle (`rect` not
 * NULL) is one copy of `bytes` compact bytes whose sides start at dst and src and walk as
 * rect says; it is never merged, and only the host and staged backends take it whole. */
typedef struct ob_copy {
    uintptr_t dst;
    uintptr_t src;
    size_t bytes;
    const ob_rect *rect;
    uint64_t map_type;
    ob_side dst_side;
    ob_side src_side;
    size_t index;        /* position of the (first) copy as the caller added it */
    size_t merged;       /* how many added copies this one covers (1 when not merged) */
    /* Filled by planning. */
    ob_mem_info dst_mem;
    ob_mem_info src_mem;
    unsigned level;      /* dependency level: level k runs after every copy of level k-1 */
    ob_category category;
    ob_route route;
    ob_stage_how stage_how; /* OB_ROUTE_STAGED only */
    CUmemcpyAttributes attr;
} ob_copy;

/* The bytes a copy's side spans from its first byte. */
static inline size_t ob_copy_dst_extent(const ob_copy *copy)
{
    return copy->rect != NULL ? (size_t)copy->rect->dst_span : copy->bytes;
}

static inline size_t ob_copy_src_extent(const ob_copy *copy)
{
    return copy->rect != NULL ? (size_t)copy->rect->src_span : copy->bytes;
}

#endif
