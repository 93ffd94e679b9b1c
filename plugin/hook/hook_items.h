/* A construct's map items as the hook judges them: each item's range (a strided update item's
 * pieces and their span), the reason it goes to the runtime if it does, and whether it overlaps
 * another item of the construct; and the arrays a construct works in, kept for the thread's
 * next construct. */
#ifndef OMPBATCH_PLUGIN_HOOK_ITEMS_H
#define OMPBATCH_PLUGIN_HOOK_ITEMS_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_reasons.h"
#include "plugin/hook/noncontig.h"
#include "plugin/hook/omp_abi.h"
#include "plugin/plan/walk.h"

typedef struct ob_hook_item {
    uintptr_t begin;
    uintptr_t end;
    int64_t type;
    ob_hook_reason why;
    int is_parent;      /* a later item is MEMBER_OF this one */
    int overlaps;       /* its range overlaps another item's */
    int is_new;         /* begin: the runtime creates its entry in this construct */
    int follow;         /* begin: a struct item whose entry the mirror follows (follow_kind) */
    int foreign;        /* overlaps an item other than its own plain members */
    int was_mirrored;   /* end: a mirrored entry holds it */
    uintptr_t device;   /* device address of begin, for the hook's copy */
    size_t staging;     /* end: offset of its bytes in the staging buffer */
    ob_strided_pieces pieces;   /* update: a non-contiguous item's pieces, offsets from its base */
    int strided;        /* update: a non-contiguous item the hook read */
    uintptr_t base;     /* update: a non-contiguous item's base, where its pieces start */
    ob_rect *rect;      /* update: its pieces as one rectangle, when they form one */
    unsigned long memo_generation; /* update: its pieces are the strided memo's of then */
} ob_hook_item;

typedef struct ob_hook_scratch {
    ob_hook_item *items;
    int32_t count;
    int64_t *types;
    ob_map_args fwd;    /* arrays for a compacted argument list (update) */
    ob_hook_copy *copies;
    size_t capacity;    /* items the arrays hold room for */
    size_t copies_capacity;
} ob_hook_scratch;

/* One allocation failure means the construct is forwarded whole: the hook never fails a
 * program's construct for its own sake. Returns 0, or -1 when the arrays cannot be had. */
int ob_hook_scratch_alloc(ob_hook_scratch *s, int32_t count);
/* Frees the items' pieces and keeps the arrays for the thread's next construct when they are
 * not too large. */
void ob_hook_scratch_free(ob_hook_scratch *s);

/* Fills ranges, parent marks and overlap marks, and the reasons every kind of construct
 * shares (update: the items are ranges only, and non-contiguous ones get their pieces).
 * Returns 0, or -1 when memory for the overlap sweep cannot be had. */
int ob_hook_describe_items(const ob_map_args *a, ob_hook_item *items, int update);

/* Whether a strided item's pieces form one rectangle (ob_pieces_rect), and which. */
int ob_hook_item_pieces_rect(const ob_hook_item *it, ob_rect *rect, uint64_t *first);

/* A struct member that is not a pointer's object and lies inside its parent's range: at a
 * begin or an end it changes no reference count (the parent's entry holds it). */
int ob_hook_is_plain_member_inside(const ob_hook_item *items, int32_t count, int32_t i);

int ob_hook_any_mapper(const ob_map_args *a);

/* The 1-based index of the item's struct parent (MEMBER_OF); 0: none. */
static inline unsigned ob_hook_member_of(int64_t type)
{
    return (unsigned)(((uint64_t)type & (uint64_t)OB_MAP_MEMBER_OF) >> 48);
}

static inline int ob_hook_has_mapper(const ob_map_args *a, int32_t i)
{
    return a->mappers != NULL && a->mappers[i] != NULL;
}

#endif
