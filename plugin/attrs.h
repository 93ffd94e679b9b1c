/* Infers the cuMemcpyBatchAsync attributes of a copy from its OpenMP map type, the memory
 * kinds of both sides and the batch's options. README.md's inference table is this file. */
#ifndef OMPBATCH_PLUGIN_ATTRS_H
#define OMPBATCH_PLUGIN_ATTRS_H

#include "copy.h"

typedef struct ob_attr_context {
    int device_ordinal;  /* the batch's CUDA device */
    int synchronous;     /* the caller waits right after submit */
    int prefer_overlap;  /* nowait: ask for overlap with compute */
} ob_attr_context;

/* Fills copy->attr; copy->src_mem and copy->dst_mem must be classified. */
void ob_attrs_infer(const ob_attr_context *context, ob_copy *copy);

/* Total order on attributes, so equal ones sort next to each other. */
int ob_attrs_compare(const CUmemcpyAttributes *a, const CUmemcpyAttributes *b);

/* Whether two attributes are the same (cheaper than the order when only equality matters). */
int ob_attrs_equal(const CUmemcpyAttributes *a, const CUmemcpyAttributes *b);

const char *ob_access_order_name(CUmemcpySrcAccessOrder order);

#endif
