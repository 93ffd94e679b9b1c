#include "plugin/plan/route.h"

/* Thresholds measured on the H200 (BENCHMARKS.md, "Routing sweep": 2-128 pieces of 512 B to
 * 32 KiB; docs/strategies.md, "Routing"). The driver's batch path from host memory to the
 * device has a valley between 4 KiB and 32 KiB pieces where it loses to a per-copy loop:
 * pinned 8 KiB 0.82-0.95x, 16 KiB 0.67-0.77x; pageable 16 KiB 0.86-0.95x, 32 KiB 0.76-0.87x.
 * Below it, pieces need a few copies to win (pinned 4 KiB: 0.94x at 4 pieces, 1.04x at 8). */
#define OB_KIB ((size_t)1024)

static ob_route pinned_h2d(size_t count, size_t mean)
{
    if (mean <= OB_KIB)
        return OB_ROUTE_BATCH; /* 1.11-2.08x from 2 pieces */
    if (mean <= 4 * OB_KIB)
        return count >= 8 ? OB_ROUTE_BATCH : OB_ROUTE_PER_COPY;
    if (mean < 32 * OB_KIB)
        return OB_ROUTE_PER_COPY;
    return OB_ROUTE_BATCH; /* 32 KiB 1.05-2.03x; 64 KiB 1.4-2.0x; 1 MiB 1.06-1.13x */
}

static ob_route pageable_h2d(size_t count, size_t mean)
{
    if (mean <= 4 * OB_KIB)
        return OB_ROUTE_BATCH; /* 0.98-1.02x at 2 pieces, 1.12x and up from 4 */
    if (mean <= 8 * OB_KIB)
        return count >= 8 ? OB_ROUTE_BATCH : OB_ROUTE_PER_COPY;
    /* 16 KiB and up, as far as 1 MiB (128 x 1 MiB: 23.9 ms batched vs 20.2 ms). */
    return OB_ROUTE_PER_COPY;
}

ob_category ob_route_category(const ob_copy *copy)
{
    if (copy->src_mem.kind == OB_MEM_MANAGED || copy->dst_mem.kind == OB_MEM_MANAGED)
        return OB_CAT_MANAGED;
    int src_dev = copy->src_mem.kind == OB_MEM_DEVICE;
    int dst_dev = copy->dst_mem.kind == OB_MEM_DEVICE;
    if (src_dev && dst_dev)
        return OB_CAT_D2D;
    if (dst_dev)
        return copy->src_mem.kind == OB_MEM_PINNED ? OB_CAT_H2D_PINNED : OB_CAT_H2D_PAGEABLE;
    if (src_dev)
        return copy->dst_mem.kind == OB_MEM_PINNED ? OB_CAT_D2H_PINNED : OB_CAT_D2H_PAGEABLE;
    return OB_CAT_H2H;
}

ob_route ob_route_choose(ob_category category, size_t count, size_t bytes,
                         ompbatch_batch_form form, int disabled)
{
    if (category == OB_CAT_H2H)
        return OB_ROUTE_HOST;
    if (disabled || count <= 1 || form == OMPBATCH_FORM_PER_COPY || form == OMPBATCH_FORM_NONE)
        return OB_ROUTE_PER_COPY;
    switch (category) {
    case OB_CAT_D2H_PAGEABLE:
        /* A batch into pageable memory is 2-2.5x slower than per-copy at every size measured
         * (1024 x 4 KiB: 20.7 ms batched vs 9.3 ms per-copy). */
        return OB_ROUTE_PER_COPY;
    case OB_CAT_H2D_PAGEABLE:
        return pageable_h2d(count, bytes / count);
    case OB_CAT_H2D_PINNED:
        return pinned_h2d(count, bytes / count);
    case OB_CAT_D2H_PINNED:
        /* Wins at every size and count measured: 1.02x (2 x 32 KiB) to 3.3x. */
    case OB_CAT_D2D:
        /* Same-GPU batches cost about 1 us a copy, below a per-copy call. */
    case OB_CAT_MANAGED:
        /* 0.99-1.09x: no loss, and the location hints can only help. */
        return OB_ROUTE_BATCH;
    case OB_CAT_H2H:
    case OB_CAT_LONE:
    case OB_CAT_COUNT:
        break;
    }
    return OB_ROUTE_PER_COPY;
}

const char *ob_category_name(ob_category category)
{
    static const char *const names[OB_CAT_COUNT] = {
        [OB_CAT_H2H] = "host-host",
        [OB_CAT_H2D_PAGEABLE] = "H2D pageable",
        [OB_CAT_H2D_PINNED] = "H2D pinned",
        [OB_CAT_D2H_PAGEABLE] = "D2H pageable",
        [OB_CAT_D2H_PINNED] = "D2H pinned",
        [OB_CAT_D2D] = "D2D",
        [OB_CAT_MANAGED] = "managed",
        [OB_CAT_LONE] = "single copy",
    };
    return (unsigned)category < OB_CAT_COUNT ? names[category] : "unknown";
}

const char *ob_route_name(ob_route route)
{
    static const char *const names[OB_ROUTE_COUNT] = {
        [OB_ROUTE_HOST] = "host memcpy",
        [OB_ROUTE_BATCH] = "cuMemcpyBatchAsync",
        [OB_ROUTE_PER_COPY] = "per-copy cuMemcpyAsync",
        [OB_ROUTE_PIPELINED] = "pipelined through pinned staging",
        [OB_ROUTE_STAGED] = "staged (copy kernel)",
    };
    return (unsigned)route < OB_ROUTE_COUNT ? names[route] : "unknown";
}

const char *ob_stage_how_name(ob_stage_how how)
{
    switch (how) {
    case OB_STAGE_IN_PLACE:
        return "kernel in place";
    case OB_STAGE_PACK:
        return "pack + bulk copy + scatter";
    case OB_STAGE_GATHER:
        return "gather + bulk copy + unpack";
    }
    return "unknown";
}
