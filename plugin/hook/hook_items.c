/* A construct's map items as the hook judges them (hook_items.h). */
#include "plugin/hook/hook_items.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/sort.h"

/* A construct's arrays are kept for the thread's next construct: allocating and freeing
 * them (four blocks, the items zeroed) was a third of what the hook spends on a construct of
 * 48 struct members it forwards. A construct that comes while the thread's arrays are in use
 * (a runtime calling back) allocates its own. Larger arrays than this are not kept. */
#define OB_SCRATCH_KEEP_ITEMS 1024

typedef struct kept_scratch {
    ob_hook_scratch arrays;
    int full;
} kept_scratch;

static pthread_key_t kept_key;
static int kept_key_made;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

static void scratch_arrays_free(ob_hook_scratch *s)
{
    free(s->items);
    free(s->types);
    free(s->fwd.bases);
    free(s->copies);
    memset(s, 0, sizeof(*s));
}

static void kept_thread_exit(void *value)
{
    kept_scratch *kept = value;
    scratch_arrays_free(&kept->arrays);
    free(kept);
}

static void create_kept_key(void)
{
    kept_key_made = pthread_key_create(&kept_key, kept_thread_exit) == 0;
}

/* The thread's place for kept arrays, made on first use; NULL when none can be had. */
static kept_scratch *thread_kept(void)
{
    pthread_once(&kept_once, create_kept_key);
    if (!kept_key_made)
        return NULL;
    kept_scratch *kept = pthread_getspecific(kept_key);
    if (kept == NULL && (kept = calloc(1, sizeof(*kept))) != NULL &&
        pthread_setspecific(kept_key, kept) != 0) {
        free(kept);
        kept = NULL;
    }
    return kept;
}

void ob_hook_scratch_free(ob_hook_scratch *s)
{
    for (int32_t i = 0; s->items != NULL && i < s->count; i++) {
        ob_pieces_free(&s->items[i].pieces);
        free(s->items[i].rect);
    }
    kept_scratch *kept = s->items != NULL && s->capacity <= OB_SCRATCH_KEEP_ITEMS
                             ? thread_kept()
                             : NULL;
    if (kept != NULL && kept->full && kept->arrays.capacity < s->capacity) {
        scratch_arrays_free(&kept->arrays); /* the larger arrays serve more constructs */
        kept->full = 0;
    }
    if (kept != NULL && !kept->full) {
        kept->arrays = *s;
        kept->full = 1;
        memset(s, 0, sizeof(*s));
    } else {
        scratch_arrays_free(s);
    }
}

/* The thread's kept arrays into s when they hold n items. */
static int scratch_take_kept(ob_hook_scratch *s, size_t n)
{
    pthread_once(&kept_once, create_kept_key);
    kept_scratch *kept = kept_key_made ? pthread_getspecific(kept_key) : NULL;
    if (kept == NULL || !kept->full || kept->arrays.capacity < n)
        return 0;
    *s = kept->arrays;
    kept->full = 0;
    return 1;
}

/* One allocation failure means the construct is forwarded whole: the hook never fails a
 * program's construct for its own sake. */
int ob_hook_scratch_alloc(ob_hook_scratch *s, int32_t count)
{
    size_t n = (size_t)count;
    if (scratch_take_kept(s, n)) {
        memset(s->items, 0, n * sizeof(ob_hook_item));
    } else {
        memset(s, 0, sizeof(*s));
        s->items = ob_calloc(n, sizeof(ob_hook_item));
        s->types = ob_malloc(n * sizeof(int64_t));
        s->copies = ob_malloc(2 * n * sizeof(ob_hook_copy)); /* an update item may go both ways */
        /* bases, begins, sizes, types, names, mappers of the compacted list, in one block */
        s->fwd.bases = ob_malloc(n * 6 * sizeof(void *));
        s->capacity = n;
        s->copies_capacity = 2 * n;
        if (s->items == NULL || s->types == NULL || s->copies == NULL || s->fwd.bases == NULL) {
            scratch_arrays_free(s);
            return -1;
        }
    }
    s->count = count;
    s->fwd.begins = s->fwd.bases + n;
    s->fwd.sizes = (int64_t *)(s->fwd.bases + 2 * n);
    s->fwd.types = (int64_t *)(s->fwd.bases + 3 * n);
    s->fwd.names = s->fwd.bases + 4 * n;
    s->fwd.mappers = s->fwd.bases + 5 * n;
    return 0;
}

int ob_hook_any_mapper(const ob_map_args *a)
{
    for (int32_t i = 0; i < a->count; i++)
        if (ob_hook_has_mapper(a, i))
            return 1;
    return 0;
}

int ob_hook_is_plain_member_inside(const ob_hook_item *items, int32_t count, int32_t i)
{
    const ob_hook_item *it = &items[i];
    unsigned parent = ob_hook_member_of(it->type);
    if (parent == 0 || parent > (unsigned)count || (it->type & OB_MAP_PTR_AND_OBJ))
        return 0;
    const ob_hook_item *p = &items[parent - 1];
    return it->end > it->begin && p->begin <= it->begin && it->end <= p->end;
}

/* One byte range of an item: its whole range, or one piece of a non-contiguous item. */
typedef struct span {
    uintptr_t begin, end;
    ob_hook_item *owner;
} span;

static int compare_spans(const void *x, const void *y)
{
    const span *a = x, *b = y;
    return (a->begin > b->begin) - (a->begin < b->begin);
}

/* Marks (through `flag`) the items with a span overlapping a span of another item: a sweep by
 * begin keeping the furthest-reaching span and the furthest-reaching one of another item. */
static void sweep_spans(span *spans, size_t n, int *(*flag)(ob_hook_item *))
{
    ob_sort_unless_sorted(spans, n, sizeof(*spans), compare_spans);
    const span *best = NULL, *other = NULL; /* other: best among owners other than best's */
    for (size_t k = 0; k < n; k++) {
        const span *c = &spans[k];
        const span *hit = best != NULL && best->owner != c->owner ? best : other;
        if (hit != NULL && hit->owner != c->owner && c->begin < hit->end) {
            *flag(c->owner) = 1;
            *flag(hit->owner) = 1;
        }
        if (best == NULL || c->end > best->end) {
            if (best != NULL && best->owner != c->owner)
                other = best;
            best = c;
        } else if (c->owner != best->owner && (other == NULL || c->end > other->end)) {
            other = c;
        }
    }
}

static int *overlaps_flag(ob_hook_item *it)
{
    return &it->overlaps;
}

static int *foreign_flag(ob_hook_item *it)
{
    return &it->foreign;
}

/* Whether an update item moves bytes: the runtime skips a private or literal one, and one with
 * neither `to` nor `from` (a struct's combined entry around the members it updates) is only
 * looked up. Such an item's range orders nothing, so it overlaps no other. */
static int moves_data_in_update(const ob_hook_item *it)
{
    return it->why != OB_REASON_SKIPPED && (it->type & (OB_MAP_TO | OB_MAP_FROM)) != 0;
}

/* Sets `overlaps` on items whose bytes overlap another item's (a non-contiguous item by its
 * pieces): their relative order would matter, and the hook reorders (its copies run before or
 * after the runtime's); in an update only items that move bytes count. Sets `foreign` the
 * same way, leaving plain members out: a struct parent overlapping only its own members is
 * alone in its range. */
static int mark_overlaps(ob_hook_item *items, int32_t count, int update)
{
    if (count < 2)
        return 0; /* only another item's span is an overlap */
    size_t n = 0;
    for (int32_t i = 0; i < count; i++)
        n += items[i].strided ? items[i].pieces.count : 1;
    span *spans = ob_malloc((n + 1) * sizeof(*spans));
    if (spans == NULL)
        return -1;
    size_t m = 0;
    for (int32_t i = 0; i < count; i++) {
        ob_hook_item *it = &items[i];
        if (update && !moves_data_in_update(it))
            continue;
        if (!it->strided) {
            if (it->end > it->begin)
                spans[m++] = (span){it->begin, it->end, it};
            continue;
        }
        for (size_t k = 0; k < it->pieces.count; k++) {
            const ob_strided_piece *p = &it->pieces.at[k];
            if (p->size > 0)
                spans[m++] = (span){it->base + (uintptr_t)p->offset,
                                    it->base + (uintptr_t)(p->offset + p->size), it};
        }
    }
    sweep_spans(spans, m, overlaps_flag);
    /* The same spans less the plain members', still in order: no second sort. */
    size_t kept = 0;
    for (size_t k = 0; k < m; k++)
        if (!ob_hook_is_plain_member_inside(items, count, (int32_t)(spans[k].owner - items)))
            spans[kept++] = spans[k];
    sweep_spans(spans, kept, foreign_flag);
    free(spans);
    return 0;
}

/* More pieces than this in one construct's non-contiguous items are left to the runtime
 * (16 MiB of piece list; a 256 x 256 face is 65 536): a hostile construct of many huge items
 * must not make the hook allocate without bound. */
#define OB_STRIDED_MAX_PIECES ((size_t)1 << 20)

/* A non-contiguous update item's pieces, when the hook may copy them: the runtime's when they
 * are the specification's (OMPBATCH_STRIDED=runtime), the specification's with
 * OMPBATCH_STRIDED=spec. Its range becomes the pieces' span, so that overlaps with other
 * items show. Otherwise the item keeps its reason and no range. */
/* The last descriptor whose pieces the hook took, and those pieces: a loop's update repeats
 * its descriptor every step, and enumerating, normalising and comparing two piece lists cost
 * more than the copies' planning. Only updates use it, under the construct lock, exclusively. */
#define OB_STRIDED_MEMO_MAX_PIECES ((size_t)1 << 16)
static struct {
    ob_non_contig dims[OB_PIECES_MAX_DIMS];
    int64_t count;             /* dimensions; 0: nothing remembered */
    ob_strided_choice choice;  /* OMPBATCH_STRIDED when the pieces were chosen */
    ob_strided_pieces pieces;
    unsigned long generation;  /* counts what was remembered: an item's pieces are these
                                  while its memo_generation is this */
    int rect_known;            /* the pieces' rectangle was worked out (ob_pieces_rect) */
    int rect_found;            /* ... and they form one: */
    ob_rect rect;
    uint64_t rect_first;
} strided_memo;

/* The remembered pieces, copied into *out, when d is the remembered descriptor. */
static int strided_recall(const ob_non_contig *d, int64_t dims, size_t budget,
                          ob_strided_pieces *out)
{
    if (strided_memo.count != dims || strided_memo.choice != ob_config_get()->strided ||
        strided_memo.pieces.count > budget ||
        memcmp(strided_memo.dims, d, (size_t)dims * sizeof(*d)) != 0)
        return 0;
    size_t bytes = (strided_memo.pieces.count + 1) * sizeof(ob_strided_piece);
    out->at = ob_malloc(bytes);
    if (out->at == NULL)
        return 0;
    memcpy(out->at, strided_memo.pieces.at, bytes - sizeof(ob_strided_piece));
    out->count = strided_memo.pieces.count;
    return 1;
}

/* Whether the item's pieces form a rectangle (ob_pieces_rect), worked out once for the
 * remembered pieces: a loop's column update would walk its thousand pieces every step. */
int ob_hook_item_pieces_rect(const ob_hook_item *it, ob_rect *rect, uint64_t *first)
{
    int remembered = it->memo_generation != 0 && it->memo_generation == strided_memo.generation;
    if (remembered && strided_memo.rect_known) {
        *rect = strided_memo.rect;
        *first = strided_memo.rect_first;
        return strided_memo.rect_found;
    }
    int found = ob_pieces_rect(&it->pieces, rect, first);
    if (remembered) {
        strided_memo.rect_known = 1;
        strided_memo.rect_found = found;
        if (found) {
            strided_memo.rect = *rect;
            strided_memo.rect_first = *first;
        }
    }
    return found;
}

/* Returns whether the memo now holds d's pieces. */
static int strided_remember(const ob_non_contig *d, int64_t dims, const ob_strided_pieces *p)
{
    strided_memo.count = 0;
    if (dims <= 0 || dims > OB_PIECES_MAX_DIMS || p->count > OB_STRIDED_MEMO_MAX_PIECES)
        return 0;
    size_t bytes = (p->count + 1) * sizeof(ob_strided_piece);
    ob_strided_piece *kept = ob_realloc(strided_memo.pieces.at, bytes);
    if (kept == NULL)
        return 0;
    memcpy(kept, p->at, bytes - sizeof(ob_strided_piece));
    memcpy(strided_memo.dims, d, (size_t)dims * sizeof(*d));
    strided_memo.pieces = (ob_strided_pieces){kept, p->count};
    strided_memo.choice = ob_config_get()->strided;
    strided_memo.count = dims;
    strided_memo.generation++;
    strided_memo.rect_known = 0;
    return 1;
}

/* The pieces of a descriptor the hook may copy, as plan_strided chooses them below; 0 when
 * there are none, with *why set when a reason is known. *memo: the strided memo holds them. */
static int choose_pieces(const ob_non_contig *d, int64_t dims, size_t budget,
                         ob_strided_pieces *chosen, ob_hook_reason *why, int *memo)
{
    *memo = 0;
    if (dims > 0 && strided_recall(d, dims, budget, chosen)) {
        *memo = 1;
        return 1;
    }
    ob_strided_pieces runtime, spec;
    if (ob_pieces_runtime(d, dims, budget, &runtime) != OB_PIECES_OK)
        return 0;
    ob_pieces_status spec_status = ob_pieces_spec(d, dims, budget, &spec);
    if (ob_config_get()->strided == OB_STRIDED_SPEC) {
        ob_pieces_free(&runtime);
        if (spec_status != OB_PIECES_OK)
            return 0;
        *chosen = spec;
        *memo = strided_remember(d, dims, chosen);
        return 1;
    }
    int same = 0;
    if (spec_status == OB_PIECES_OK) {
        ob_strided_pieces copy = {ob_malloc((runtime.count + 1) * sizeof(ob_strided_piece)),
                                  runtime.count};
        if (copy.at != NULL) {
            if (runtime.count > 0)
                memcpy(copy.at, runtime.at, runtime.count * sizeof(ob_strided_piece));
            same = ob_pieces_same_bytes(&copy, &spec);
        }
        ob_pieces_free(&copy);
        ob_pieces_free(&spec);
    }
    if (!same) {
        ob_pieces_free(&runtime);
        if (spec_status == OB_PIECES_OK)
            *why = OB_REASON_STRIDED_DEVIATES;
        return 0;
    }
    *chosen = runtime;
    *memo = strided_remember(d, dims, chosen);
    return 1;
}

static void plan_strided(const ob_map_args *a, int32_t i, ob_hook_item *it, size_t *budget)
{
    const ob_non_contig *d = a->begins[i];
    int64_t dims = a->sizes[i];
    ob_strided_pieces chosen;
    int memo = 0;
    if (!choose_pieces(d, dims, *budget, &chosen, &it->why, &memo))
        return;
    if (memo)
        it->memo_generation = strided_memo.generation;
    uintptr_t base = (uintptr_t)a->bases[i];
    uint64_t low = UINT64_MAX, high = 0;
    for (size_t k = 0; k < chosen.count; k++) {
        if (chosen.at[k].size == 0)
            continue;
        if (chosen.at[k].offset < low)
            low = chosen.at[k].offset;
        if (chosen.at[k].offset + chosen.at[k].size > high)
            high = chosen.at[k].offset + chosen.at[k].size;
    }
    if (low > high || high > UINTPTR_MAX - base) {
        /* No bytes to move (or none addressable): the runtime copies nothing either. */
        ob_pieces_free(&chosen);
        if (low > high)
            it->why = OB_REASON_NO_TRANSFER;
        return;
    }
    it->strided = 1;
    it->base = base;
    it->pieces = chosen;
    *budget -= chosen.count <= *budget ? chosen.count : *budget;
    it->begin = base + (uintptr_t)low;
    it->end = base + (uintptr_t)high;
    it->why = OB_REASON_NONE;
}

/* Fills ranges, parent marks and overlap marks; the reasons every kind of construct shares
 * (an update's items are ranges only: libomptarget reads no MEMBER_OF there).
 * A pointer-based item (PTR_AND_OBJ: a global or struct-member pointer's section) that is not
 * a struct member is judged by its object, begins[i] + sizes[i], like any other item: only the
 * attachment of the pointer at bases[i] is the runtime's, and the constructs keep the mirror
 * clear of entries an attachment lands in (drop_attached). */
int ob_hook_describe_items(const ob_map_args *a, ob_hook_item *items, int update)
{
    size_t strided_budget = OB_STRIDED_MAX_PIECES;
    for (int32_t i = 0; i < a->count; i++) {
        ob_hook_item *it = &items[i];
        it->type = a->types[i];
        it->begin = (uintptr_t)a->begins[i];
        it->end = it->begin + (a->sizes[i] > 0 ? (uintptr_t)a->sizes[i] : 0);
        unsigned parent = ob_hook_member_of(it->type);
        if (parent != 0 && parent <= (unsigned)a->count)
            items[parent - 1].is_parent = 1;
    }
    for (int32_t i = 0; i < a->count; i++) {
        ob_hook_item *it = &items[i];
        int64_t t = it->type;
        if (t & (OB_MAP_PRIVATE | OB_MAP_LITERAL))
            it->why = OB_REASON_SKIPPED;
        else if (ob_hook_has_mapper(a, i))
            it->why = OB_REASON_MAPPER;
        else if (t & OB_MAP_NON_CONTIG)
            it->why = OB_REASON_NON_CONTIG;
        else if (!update && (ob_hook_member_of(t) != 0 || it->is_parent))
            it->why = OB_REASON_STRUCT; /* an update reads no MEMBER_OF: items are ranges */
        else if (t & OB_MAP_RETURN_PARAM)
            it->why = OB_REASON_RETURN_PARAM;
        else if (a->sizes[i] <= 0)
            it->why = OB_REASON_ZERO_SIZE;
        else if (t & OB_MAP_PRESENT)
            it->why = OB_REASON_PRESENT;
        else
            it->why = OB_REASON_NONE;
        /* Non-contiguous items carry a descriptor array, not their data, in begins[i]. */
        if (it->why == OB_REASON_NON_CONTIG || it->why == OB_REASON_MAPPER)
            it->end = it->begin;
        if (it->why == OB_REASON_NON_CONTIG && update)
            plan_strided(a, i, it, &strided_budget);
    }
    return mark_overlaps(items, a->count, update);
}

