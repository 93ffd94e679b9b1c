#include "route.h"

/* Measured on the H200 (shared/reference/h200-probe.md): a plain batch from pageable host
 * memory to the device loses to a per-copy loop once pieces are large (16 x 64 KiB: 167 us
 * batched vs 121 us per-copy; 128 x 1 MiB: 23.9 ms vs 20.2 ms) and wins below (1024 x 4 KiB:
 * 1.5 ms vs 2.6 ms). */
#define OB_PAGEABLE_H2D_BATCH_MAX_MEAN ((size_t)32 * 1024)

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
        return bytes / count <= OB_PAGEABLE_H2D_BATCH_MAX_MEAN ? OB_ROUTE_BATCH
                                                                : OB_ROUTE_PER_COPY;
    case OB_CAT_H2D_PINNED:
    case OB_CAT_D2H_PINNED:
    case OB_CAT_D2D:
    case OB_CAT_MANAGED:
        /* Pinned batches win or tie from two copies up (1024 x 8 B H2D: 0.43 ms vs 2.4 ms). */
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
    };
    return (unsigned)route < OB_ROUTE_COUNT ? names[route] : "unknown";
}
