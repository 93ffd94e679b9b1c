#include "plugin/plan/attrs.h"

#include <string.h>

#include "ompbatch.h"

static CUmemcpySrcAccessOrder infer_access_order(const ob_attr_context *context,
                                                 const ob_copy *copy)
{
    /* Device and managed sources may be written by earlier kernels on the stream. */
    if (copy->src_mem.kind == OB_MEM_DEVICE || copy->src_mem.kind == OB_MEM_MANAGED)
        return CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    /* LITERAL and PRIVATE sources are the runtime's temporaries: they die after the call. */
    if (copy->map_type & (OMPBATCH_MAP_LITERAL | OMPBATCH_MAP_PRIVATE))
        return CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    /* Pinned memory may be the destination of an earlier asynchronous copy on the stream. */
    if (copy->src_mem.kind == OB_MEM_PINNED)
        return CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    /* malloc'd memory is touched by no stream work, and a synchronous caller keeps it alive
     * and unchanged until the copy is done. An asynchronous caller gets stream order. */
    return context->synchronous ? CU_MEMCPY_SRC_ACCESS_ORDER_ANY
                                : CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
}

/* Location hints only matter for managed memory: the side named the device should end up on
 * the device, the side named the host on the host. */
static CUmemLocation infer_hint(const ob_attr_context *context, const ob_mem_info *mem,
                                ob_side side)
{
    CUmemLocation location;
    memset(&location, 0, sizeof(location));
    if (mem->kind != OB_MEM_MANAGED)
        return location; /* CU_MEM_LOCATION_TYPE_INVALID: no hint */
    if (side == OB_SIDE_DEVICE) {
        location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        location.id = context->device_ordinal;
    } else {
        location.type = CU_MEM_LOCATION_TYPE_HOST;
        location.id = 0;
    }
    return location;
}

void ob_attrs_infer(const ob_attr_context *context, ob_copy *copy)
{
    memset(&copy->attr, 0, sizeof(copy->attr));
    copy->attr.srcAccessOrder = infer_access_order(context, copy);
    copy->attr.srcLocHint = infer_hint(context, &copy->src_mem, copy->src_side);
    copy->attr.dstLocHint = infer_hint(context, &copy->dst_mem, copy->dst_side);
    copy->attr.flags = context->prefer_overlap ? CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE
                                               : CU_MEMCPY_FLAG_DEFAULT;
}

_Static_assert(sizeof(CUmemcpyAttributes) == 3 * sizeof(uint64_t),
               "CUmemcpyAttributes is not the 24 bytes attrs.h compares");

const char *ob_access_order_name(CUmemcpySrcAccessOrder order)
{
    switch (order) {
    case CU_MEMCPY_SRC_ACCESS_ORDER_STREAM:
        return "STREAM";
    case CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL:
        return "DURING_API_CALL";
    case CU_MEMCPY_SRC_ACCESS_ORDER_ANY:
        return "ANY";
    default:
        return "INVALID";
    }
}
