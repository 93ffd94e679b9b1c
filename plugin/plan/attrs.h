/* Infers the cuMemcpyBatchAsync attributes of a copy from its OpenMP map type, the memory
 * kinds of both sides and the batch's options. README.md's inference table is this file. */
#ifndef OMPBATCH_PLUGIN_ATTRS_H
#define OMPBATCH_PLUGIN_ATTRS_H

#include <stdint.h>
#include <string.h>

#include "plugin/plan/copy.h"

typedef struct ob_attr_context {
    int device_ordinal;  /* the batch's CUDA device */
    int synchronous;     /* the caller waits right after submit */
    int prefer_overlap;  /* nowait: ask for overlap with compute */
} ob_attr_context;

/* Fills copy->attr; copy->src_mem and copy->dst_mem must be classified. */
void ob_attrs_infer(const ob_attr_context *context, ob_copy *copy);

/* Attributes are always built from a zeroed struct without padding (24 bytes of four 32-bit
 * fields), so their bytes give a total order that separates every field. Planning compares
 * them for every pair of neighbouring copies, so these are inline and compare words (attrs.c
 * asserts the size). */
typedef struct ob_attr_words {
    uint64_t w[3];
} ob_attr_words;

static inline ob_attr_words ob_attr_words_of(const CUmemcpyAttributes *a)
{
    ob_attr_words words;
    memcpy(&words, a, sizeof(words));
    return words;
}

/* Total order on attributes, so equal ones sort next to each other. */
static inline int ob_attrs_compare(const CUmemcpyAttributes *a, const CUmemcpyAttributes *b)
{
    ob_attr_words x = ob_attr_words_of(a), y = ob_attr_words_of(b);
    for (int i = 0; i < 3; i++)
        if (x.w[i] != y.w[i])
            return x.w[i] < y.w[i] ? -1 : 1;
    return 0;
}

/* Whether two attributes are the same (cheaper than the order when only equality matters). */
static inline int ob_attrs_equal(const CUmemcpyAttributes *a, const CUmemcpyAttributes *b)
{
    ob_attr_words x = ob_attr_words_of(a), y = ob_attr_words_of(b);
    return x.w[0] == y.w[0] && x.w[1] == y.w[1] && x.w[2] == y.w[2];
}

const char *ob_access_order_name(CUmemcpySrcAccessOrder order);

#endif
