/* The hook's decisions for target update, the begin of target data / enter data, the end of
 * target data / exit data, and target regions split into both, following libomptarget 16's
 * rules item by item (docs/hook.md says which). The hook copies only what it can account for
 * exactly: contiguous items (or the objects of pointer-based ones) lying in mappings it saw
 * created or learnt, with no attached pointers, no struct begins or ends, no mappers.
 * Everything else goes to the runtime unchanged.
 *
 * Callers hold the construct lock exclusively (omp_hook.c), so nothing else changes the
 * mirror or libomptarget's table between a decision and the forwarded call. */
#include "plugin/hook/hook_construct.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/api/rect.h"
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/core/log.h"
#include "plugin/cuda/nvtx.h"
#include "plugin/exec/backend_staged.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_mapper.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_runtime.h"
#include "plugin/hook/hook_stats.h"
#include "plugin/hook/noncontig.h"
#include "ompbatch.h"
#include "plugin/core/phase_time.h"
#include "plugin/core/sort.h"

/* Where a construct is, from the compiler's source string ";file;function;line;column;;"
 * (";unknown;unknown;0;0;;" for a program built without debug information). Returns 0 when
 * there is none. */
typedef struct source_location {
    const char *file;     /* the path as recorded, file_length bytes */
    int file_length;
    const char *line;     /* the line number's digits, line_length bytes */
    int line_length;
} source_location;

static int locate(const ob_ident *loc, source_location *out)
{
    const char *source = loc != NULL ? loc->psource : NULL;
    if (source == NULL || source[0] != ';')
        return 0;
    const char *file = source + 1;
    const char *file_end = strchr(file, ';');
    const char *function_end = file_end != NULL ? strchr(file_end + 1, ';') : NULL;
    const char *line = function_end != NULL ? function_end + 1 : NULL;
    const char *line_end = line != NULL ? strchr(line, ';') : NULL;
    if (line_end == NULL || file_end == file || line_end == line)
        return 0;
    *out = (source_location){file, (int)(file_end - file), line, (int)(line_end - line)};
    return 1;
}

/* "update maps.c:42" for the NVTX range of the construct's batch. Built only while a profiler
 * listens; NULL otherwise. */
static const char *range_label(const ob_construct *c, char *buf, size_t size)
{
    if (!ob_nvtx_active())
        return NULL;
    const char *what = strcmp(c->what, "begin") == 0 ? "data begin"
                       : strcmp(c->what, "end") == 0 ? "data end"
                                                     : c->what;
    source_location where;
    if (!locate(c->loc, &where)) {
        snprintf(buf, size, "%s", what);
        return buf;
    }
    const char *base = where.file;
    for (const char *p = where.file; p < where.file + where.file_length; p++)
        if (*p == '/')
            base = p + 1;
    snprintf(buf, size, "%s %.*s:%.*s", what, (int)(where.file + where.file_length - base), base,
             where.line_length, where.line);
    return buf;
}

typedef struct item {
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
} item;

typedef struct scratch {
    item *items;
    int32_t count;
    int64_t *types;
    ob_map_args fwd;    /* arrays for a compacted argument list (update) */
    ob_hook_copy *copies;
    size_t capacity;    /* items the arrays hold room for */
    size_t copies_capacity;
} scratch;

/* A construct's arrays are kept for the thread's next construct: allocating and freeing
 * them (four blocks, the items zeroed) was a third of what the hook spends on a construct of
 * 48 struct members it forwards. A construct that comes while the thread's arrays are in use
 * (a runtime calling back) allocates its own. Larger arrays than this are not kept. */
#define OB_SCRATCH_KEEP_ITEMS 1024

typedef struct kept_scratch {
    scratch arrays;
    int full;
} kept_scratch;

static pthread_key_t kept_key;
static int kept_key_made;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

static void scratch_arrays_free(scratch *s)
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

static void scratch_free(scratch *s)
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
static int scratch_take_kept(scratch *s, size_t n)
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
static int scratch_alloc(scratch *s, int32_t count)
{
    size_t n = (size_t)count;
    if (scratch_take_kept(s, n)) {
        memset(s->items, 0, n * sizeof(item));
    } else {
        memset(s, 0, sizeof(*s));
        s->items = ob_calloc(n, sizeof(item));
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

static unsigned member_of(int64_t type)
{
    return (unsigned)(((uint64_t)type & (uint64_t)OB_MAP_MEMBER_OF) >> 48);
}

static int has_mapper(const ob_map_args *a, int32_t i)
{
    return a->mappers != NULL && a->mappers[i] != NULL;
}

static int any_mapper(const ob_map_args *a)
{
    for (int32_t i = 0; i < a->count; i++)
        if (has_mapper(a, i))
            return 1;
    return 0;
}

/* A struct member that is not a pointer's object and lies inside its parent's range: at a
 * begin or an end it changes no reference count (the parent's entry holds it). */
static int is_plain_member_inside(const item *items, int32_t count, int32_t i)
{
    const item *it = &items[i];
    unsigned parent = member_of(it->type);
    if (parent == 0 || parent > (unsigned)count || (it->type & OB_MAP_PTR_AND_OBJ))
        return 0;
    const item *p = &items[parent - 1];
    return it->end > it->begin && p->begin <= it->begin && it->end <= p->end;
}

/* One byte range of an item: its whole range, or one piece of a non-contiguous item. */
typedef struct span {
    uintptr_t begin, end;
    item *owner;
} span;

static int compare_spans(const void *x, const void *y)
{
    const span *a = x, *b = y;
    return (a->begin > b->begin) - (a->begin < b->begin);
}

/* Marks (through `flag`) the items with a span overlapping a span of another item: a sweep by
 * begin keeping the furthest-reaching span and the furthest-reaching one of another item. */
static void sweep_spans(span *spans, size_t n, int *(*flag)(item *))
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

static int *overlaps_flag(item *it)
{
    return &it->overlaps;
}

static int *foreign_flag(item *it)
{
    return &it->foreign;
}

/* Whether an update item moves bytes: the runtime skips a private or literal one, and one with
 * neither `to` nor `from` (a struct's combined entry around the members it updates) is only
 * looked up. Such an item's range orders nothing, so it overlaps no other. */
static int moves_data_in_update(const item *it)
{
    return it->why != OB_REASON_SKIPPED && (it->type & (OB_MAP_TO | OB_MAP_FROM)) != 0;
}

/* Sets `overlaps` on items whose bytes overlap another item's (a non-contiguous item by its
 * pieces): their relative order would matter, and the hook reorders (its copies run before or
 * after the runtime's); in an update only items that move bytes count. Sets `foreign` the
 * same way, leaving plain members out: a struct parent overlapping only its own members is
 * alone in its range. */
static int mark_overlaps(item *items, int32_t count, int update)
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
        item *it = &items[i];
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
        if (!is_plain_member_inside(items, count, (int32_t)(spans[k].owner - items)))
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
static int pieces_rect(const item *it, ob_rect *rect, uint64_t *first)
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

static void plan_strided(const ob_map_args *a, int32_t i, item *it, size_t *budget)
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
static int describe_items(const ob_map_args *a, item *items, int update)
{
    size_t strided_budget = OB_STRIDED_MAX_PIECES;
    for (int32_t i = 0; i < a->count; i++) {
        item *it = &items[i];
        it->type = a->types[i];
        it->begin = (uintptr_t)a->begins[i];
        it->end = it->begin + (a->sizes[i] > 0 ? (uintptr_t)a->sizes[i] : 0);
        unsigned parent = member_of(it->type);
        if (parent != 0 && parent <= (unsigned)a->count)
            items[parent - 1].is_parent = 1;
    }
    for (int32_t i = 0; i < a->count; i++) {
        item *it = &items[i];
        int64_t t = it->type;
        if (t & (OB_MAP_PRIVATE | OB_MAP_LITERAL))
            it->why = OB_REASON_SKIPPED;
        else if (has_mapper(a, i))
            it->why = OB_REASON_MAPPER;
        else if (t & OB_MAP_NON_CONTIG)
            it->why = OB_REASON_NON_CONTIG;
        else if (!update && (member_of(t) != 0 || it->is_parent))
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

/* Ranges whose entries an item may change in ways the mirror does not follow: the item's
 * own, the pointer of an attachment, and for zero-size items the stretch back to the base
 * (libomptarget looks those up extended to their base pointer). */
static void drop_touched(int device, const ob_map_args *a, int32_t i)
{
    uintptr_t begin = (uintptr_t)a->begins[i];
    uintptr_t end = begin + (a->sizes[i] > 0 ? (uintptr_t)a->sizes[i] : 1);
    uintptr_t base = (uintptr_t)a->bases[i];
    if (a->types[i] & OB_MAP_PTR_AND_OBJ)
        ob_mirror_drop_range(device, base, base + sizeof(void *));
    else if (base < begin)
        begin = base;
    else if (base >= end)
        end = base + 1;
    ob_mirror_drop_range(device, begin, end);
}

/* The begin attached the pointers of its pointer-based items (bases[i]): an entry holding one
 * now holds a device address the mirror's copies would overwrite, so it leaves the mirror.
 * The objects' own entries stay (a pointer inside its own object made that item forwarded). */
static void drop_attached(int device, const ob_map_args *a, const item *items)
{
    for (int32_t i = 0; i < a->count; i++) {
        if (!(a->types[i] & OB_MAP_PTR_AND_OBJ) || items[i].why == OB_REASON_SKIPPED ||
            items[i].why == OB_REASON_MAPPER)
            continue;
        uintptr_t p = (uintptr_t)a->bases[i];
        ob_mirror_drop_range(device, p, p + sizeof(void *));
    }
}

/* " at file:line" for the log; nothing without a location or debug information. */
static void describe_location(const ob_ident *loc, char *out, size_t size)
{
    out[0] = '\0';
    source_location where;
    if (locate(loc, &where) && strncmp(where.file, "unknown;", 8) != 0)
        snprintf(out, size, " at %.*s:%d", where.file_length, where.file, atoi(where.line));
}

static void log_construct(const ob_construct *c, const item *items, int32_t count,
                          size_t batched)
{
    if (ob_log_level() < 1)
        return;
    unsigned counts[OB_REASON_COUNT] = {0};
    for (int32_t i = 0; i < count; i++)
        counts[items[i].why]++;
    char why[400] = "";
    size_t used = 0;
    for (int r = 1; r < OB_REASON_COUNT && used < sizeof(why); r++)
        if (counts[r] != 0)
            used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%u %s",
                                     used ? ", " : "", counts[r], ob_hook_reason_text[r]);
    char where[160];
    describe_location(c->loc, where, sizeof(where));
    ob_log_write("hook: %s%s on device %d: %d items, %zu batched, %zu forwarded%s%s%s", c->what,
                 where, c->device, (int)count, batched, (size_t)count - batched,
                 used ? " (" : "", why, used ? ")" : "");
    if (ob_log_level() < 3)
        return;
    /* What the program passed, item by item: enough to see why a map was left alone. */
    const ob_map_args *a = &c->args;
    for (int32_t i = 0; i < count; i++) {
        ob_log_write("hook:   item %d: base %p begin %p size %" PRId64 " type 0x%" PRIx64
                     "%s: %s", (int)i, a->bases[i], a->begins[i], a->sizes[i],
                     (uint64_t)a->types[i], has_mapper(a, i) ? " mapper" : "",
                     ob_hook_reason_text[items[i].why]);
        if (!(a->types[i] & OB_MAP_NON_CONTIG) || a->begins[i] == NULL)
            continue;
        const ob_non_contig *d = a->begins[i];
        for (int64_t k = 0; k < a->sizes[i] && k < 16; k++)
            ob_log_write("hook:     dimension %d: offset %" PRIu64 " count %" PRIu64
                         " stride %" PRIu64, (int)k, d[k].offset, d[k].count, d[k].stride);
    }
}

static ob_hook_kind kind_of(const ob_construct *c)
{
    if (strcmp(c->what, "update") == 0)
        return OB_KIND_UPDATE;
    if (strcmp(c->what, "begin") == 0)
        return OB_KIND_BEGIN;
    if (strcmp(c->what, "end") == 0)
        return OB_KIND_END;
    return strcmp(c->what, "region begin") == 0 ? OB_KIND_REGION_BEGIN : OB_KIND_REGION_END;
}

/* Each item's verdict, by kind of construct, for the statistics: tallied here first, so that
 * a construct of many items costs one shared atomic add per verdict it has, not per item. */
static void count_reasons(const ob_construct *c, const item *items, int32_t count)
{
    ob_hook_kind kind = kind_of(c);
    uint64_t tally[OB_REASON_COUNT] = {0};
    for (int32_t i = 0; i < count; i++)
        tally[items[i].why]++;
    for (int r = 0; r < OB_REASON_COUNT; r++)
        if (tally[r] != 0)
            ob_hook_add(&ob_hook_count.by_reason[kind][r], tally[r]);
}

/* A split region's halves count as its items once (at its begin) and their copies as the
 * region's, not as data constructs. */
static void count_construct(const ob_construct *c, int32_t count,
                            atomic_uint_fast64_t *batched_counter, size_t batched)
{
    if (c->region) {
        if (strcmp(c->what, "region begin") == 0)
            ob_hook_add(&ob_hook_count.region_items, (uint64_t)count);
        ob_hook_add(&ob_hook_count.region_batched, batched);
        return;
    }
    ob_hook_add(&ob_hook_count.constructs, 1);
    ob_hook_add(&ob_hook_count.items, (uint64_t)count);
    ob_hook_add(batched_counter, batched);
    ob_hook_add(&ob_hook_count.items_forwarded, (uint64_t)count - batched);
}

/* What became of the construct's items, `batched` of them moved by the hook: said at
 * OMPBATCH_VERBOSE=1 and counted. */
static void report_construct(const ob_construct *c, const item *items, int32_t count,
                             atomic_uint_fast64_t *batched_counter, size_t batched)
{
    log_construct(c, items, count, batched);
    count_reasons(c, items, count);
    count_construct(c, count, batched_counter, batched);
}

/* The items the hook moved itself: those with no reason to be forwarded. */
static size_t batched_items(const item *items, int32_t count)
{
    size_t batched = 0;
    for (int32_t i = 0; i < count; i++)
        batched += items[i].why == OB_REASON_NONE;
    return batched;
}

/* The construct goes to the runtime as the program made it, every item counted forwarded. */
static void forward_whole(const ob_construct *c)
{
    int32_t count = c->args.count > 0 ? c->args.count : 0;
    count_construct(c, count, &ob_hook_count.items_forwarded, 0);
    ob_hook_add(&ob_hook_count.by_reason[kind_of(c)][OB_REASON_WHOLE], (uint64_t)count);
    ob_hook_forward(c, &c->args, 1);
}

/* Copies item i's argument into the compacted list at position n. */
static void compact_item(const ob_map_args *a, int32_t i, ob_map_args *out, int32_t n,
                         int64_t type)
{
    out->bases[n] = a->bases[i];
    out->begins[n] = a->begins[i];
    out->sizes[n] = a->sizes[i];
    out->types[n] = type;
    out->names[n] = a->names != NULL ? a->names[i] : NULL;
    out->mappers[n] = a->mappers != NULL ? a->mappers[i] : NULL;
}

/* Has the runtime make the given items' copies with a blocking target update (`to`): for
 * copies the hook meant to make but could not. */
static void give_back_to_copies(const ob_construct *c, scratch *s, const item *items,
                                int32_t count, int (*selected)(const item *))
{
    int32_t n = 0;
    for (int32_t i = 0; i < count; i++)
        if (selected(&items[i]))
            compact_item(&c->args, i, &s->fwd, n++, OB_MAP_TO);
    if (n == 0)
        return;
    s->fwd.count = n;
    ob_hook_forward_update(c, &s->fwd);
}

/* A begin or an end forwarded whole changed the counts of whatever its items reach, which the
 * mirror did not follow: those ranges leave it (an update changes no entry). */
static void forget_items(const ob_construct *c)
{
    const ob_map_args *a = &c->args;
    if (kind_of(c) == OB_KIND_UPDATE)
        return;
    for (int32_t i = 0; i < a->count; i++)
        if (!(a->types[i] & (OB_MAP_PRIVATE | OB_MAP_LITERAL)) && !has_mapper(a, i))
            drop_touched(c->device, a, i);
}

/* Allocates the scratch and describes the items. When that fails, or when `mappers_whole` and
 * the construct has a mapper, forwards the construct whole and returns -1. */
static int prepare(const ob_construct *c, scratch *s, int mappers_whole)
{
    const ob_map_args *a = &c->args;
    int mapper = mappers_whole && a->count > 0 && any_mapper(a);
    if (a->count <= 0 || mapper || scratch_alloc(s, a->count) != 0) {
        /* A mapper's components reach the runtime through the hook's
         * __tgt_push_mapper_component: what they touch leaves the mirror. */
        /* A data begin's mapper components are probed as pushed, to learn what they create. */
        int learn = mapper && kind_of(c) == OB_KIND_BEGIN;
        if (mapper)
            ob_mapper_record_start(learn ? c->device : -1);
        forward_whole(c);
        if (mapper && ob_mapper_record_finish(c->device, 1) != 0)
            ob_mirror_drop_device(c->device);
        forget_items(c);
        if (learn)
            ob_mapper_learn_created(c->device, a);
        return -1;
    }
    if (describe_items(a, s->items, kind_of(c) == OB_KIND_UPDATE) != 0) {
        scratch_free(s);
        forward_whole(c);
        forget_items(c);
        return -1;
    }
    return 0;
}

/* ---- target update --------------------------------------------------------------------- */

/* Grows the copy list by two entries per piece of every non-contiguous item read. */
static int make_room_for_pieces(scratch *s)
{
    size_t pieces = 0;
    for (int32_t i = 0; i < s->count; i++)
        pieces += s->items[i].strided ? s->items[i].pieces.count : 0;
    if (pieces == 0)
        return 0;
    size_t total = 2 * (size_t)s->count + 2 * pieces;
    if (total <= s->copies_capacity)
        return 0;
    ob_hook_copy *grown = ob_realloc(s->copies, total * sizeof(*grown));
    if (grown == NULL)
        return -1;
    s->copies = grown;
    s->copies_capacity = total;
    return 0;
}

/* The item's pieces as one rectangle copy (each direction it asks for) into out, when they
 * lie in one mirrored entry and are worth a rectangle; returns the copies made, 0 if none. */
static size_t strided_rect(const ob_mirror_entry *whole, item *it, ob_hook_copy *out)
{
    ob_rect rect;
    uint64_t first;
    if (!pieces_rect(it, &rect, &first) ||
        !ob_batch_rect_goes_whole(rect.runs, rect.src.dims > 0 ? rect.src.run : rect.bytes,
                                  rect.bytes))
        return 0;
    if (it->rect == NULL && (it->rect = ob_malloc(sizeof(*it->rect))) == NULL)
        return 0; /* the pieces go one by one */
    *it->rect = rect;
    uintptr_t host = it->base + (uintptr_t)first;
    uintptr_t device = whole->device + (host - whole->begin);
    size_t n = 0;
    if (it->type & OB_MAP_FROM)
        out[n++] = (ob_hook_copy){(void *)host, (const void *)device, (size_t)rect.bytes, 0,
                                  it->rect};
    if (it->type & OB_MAP_TO)
        out[n++] = (ob_hook_copy){(void *)device, (const void *)host, (size_t)rect.bytes, 1,
                                  it->rect};
    return n;
}

/* The copies of a non-contiguous item's pieces into out, each piece as libomptarget treats it
 * on its own: inside a mirrored entry it is copied; where the runtime has nothing at its first
 * byte it is skipped (the runtime skips it too); otherwise the runtime has an entry the mirror
 * does not, and the whole item is left to it (it->why says why). Returns the copies made. */
static size_t strided_copies(const ob_construct *c, const ob_map_args *a, int32_t i, item *it,
                             ob_hook_copy *out)
{
    uintptr_t base = (uintptr_t)a->bases[i];
    size_t n = 0;
    /* The pieces' span inside one entry (a column of a mapped grid): so is every piece. */
    ob_mirror_entry *whole = NULL;
    if (ob_mirror_find(c->device, it->begin, it->end, &whole) != OB_MIRROR_INSIDE)
        whole = NULL;
    if (whole != NULL && !ob_hook_device_usable(c->device, whole->device)) {
        it->why = OB_REASON_DEVICE;
        return 0;
    }
    if (whole != NULL && (n = strided_rect(whole, it, out)) > 0)
        return n;
    for (size_t k = 0; k < it->pieces.count; k++) {
        const ob_strided_piece *p = &it->pieces.at[k];
        if (p->size == 0)
            continue;
        uintptr_t host = base + (uintptr_t)p->offset;
        ob_mirror_entry *entry = whole;
        if (entry == NULL &&
            ob_mirror_find(c->device, host, host + (uintptr_t)p->size, &entry) !=
                OB_MIRROR_INSIDE) {
            if (!ob_hook_runtime_has((void *)host, c->device))
                continue;
            it->why = OB_REASON_UNKNOWN;
            return 0;
        }
        if (entry != whole && !ob_hook_device_usable(c->device, entry->device)) {
            it->why = OB_REASON_DEVICE;
            return 0;
        }
        uintptr_t device = entry->device + (host - entry->begin);
        if (it->type & OB_MAP_FROM)
            out[n++] = (ob_hook_copy){(void *)host, (const void *)device, (size_t)p->size, 0,
                                      NULL};
        if (it->type & OB_MAP_TO)
            out[n++] = (ob_hook_copy){(void *)device, (const void *)host, (size_t)p->size, 1,
                                      NULL};
    }
    return n;
}

/* An update with a `present` item goes to the runtime whole (ob_hook_update says why), which
 * the map types alone tell: such a construct is forwarded without the scratch and the item
 * descriptions the hook would build only to forward it, unless the verbose log wants them. */
static int forwarded_for_present(const ob_construct *c)
{
    const ob_map_args *a = &c->args;
    if (a->count <= 0 || ob_log_level() >= 1)
        return 0;
    int32_t present = 0;
    for (int32_t i = 0; i < a->count; i++)
        present += (a->types[i] & OB_MAP_PRESENT) != 0;
    if (present == 0)
        return 0;
    count_construct(c, a->count, &ob_hook_count.update_batched, 0);
    ob_hook_add(&ob_hook_count.by_reason[OB_KIND_UPDATE][OB_REASON_PRESENT], (uint64_t)present);
    ob_hook_add(&ob_hook_count.by_reason[OB_KIND_UPDATE][OB_REASON_WHOLE],
                (uint64_t)(a->count - present));
    ob_hook_forward(c, a, 1);
    return 1;
}

/* The mirror entry that holds the item whole, or NULL with the item's reason set: partly
 * mapped, or not a mapping the hook knows. */
static ob_mirror_entry *entry_holding(const ob_construct *c, item *it)
{
    ob_mirror_entry *entry = NULL;
    ob_mirror_found found = ob_mirror_find(c->device, it->begin, it->end, &entry);
    if (found == OB_MIRROR_INSIDE)
        return entry;
    it->why = found == OB_MIRROR_PARTIAL ? OB_REASON_PARTIAL : OB_REASON_UNKNOWN;
    return NULL;
}

void ob_hook_update(const ob_construct *c)
{
    const ob_map_args *a = &c->args;
    if (forwarded_for_present(c))
        return;
    scratch s;
    if (prepare(c, &s, 0) != 0)
        return;
    item *items = s.items;
    /* A present miss aborts the program in the runtime's item order; copies the hook made
     * early would be visible to nothing else, but keep the construct whole so the runtime's
     * behaviour, abort included, is exactly its own. Items whose ranges are unknown
     * (mappers, non-contiguous) could overlap a batched item in the other direction. */
    int keep_whole = 0, unknown_ranges = 0, directions = 0;
    for (int32_t i = 0; i < a->count; i++) {
        if (items[i].type & OB_MAP_PRESENT)
            keep_whole = 1;
        if (items[i].why == OB_REASON_MAPPER || items[i].why == OB_REASON_NON_CONTIG ||
            items[i].why == OB_REASON_STRIDED_DEVIATES)
            unknown_ranges = 1;
        directions |= (int)(items[i].type & (OB_MAP_TO | OB_MAP_FROM));
    }
    if (unknown_ranges && directions == (OB_MAP_TO | OB_MAP_FROM))
        keep_whole = 1;
    if (!keep_whole && make_room_for_pieces(&s) != 0)
        keep_whole = 1; /* out of memory: the runtime makes every copy */
    size_t batched = 0;
    int to_first = ob_hook_runtime_get()->version->update_to_first;
    for (int32_t i = 0; i < a->count && !keep_whole; i++) {
        item *it = &items[i];
        if (it->why != OB_REASON_NONE)
            continue;
        if (!(it->type & (OB_MAP_TO | OB_MAP_FROM))) {
            it->why = OB_REASON_NO_TRANSFER;
            continue;
        }
        if (it->overlaps) {
            it->why = OB_REASON_OVERLAP;
            continue;
        }
        if (it->strided) {
            size_t added = strided_copies(c, a, i, it, s.copies + batched);
            if (it->why == OB_REASON_NONE)
                batched += added;
            continue;
        }
        ob_mirror_entry *entry = entry_holding(c, it);
        if (entry == NULL)
            continue;
        if (!ob_hook_device_usable(c->device, entry->device)) {
            it->why = OB_REASON_DEVICE;
            continue;
        }
        it->device = entry->device + (it->begin - entry->begin);
        /* An item is one or the other in practice, but keep the runtime's order for an item
         * with both: 16 copies `from` first, 19 `to`. */
        ob_hook_copy to = {(void *)it->device, (const void *)it->begin,
                           (size_t)(it->end - it->begin), 1, NULL};
        ob_hook_copy from = {(void *)it->begin, (const void *)it->device,
                             (size_t)(it->end - it->begin), 0, NULL};
        if ((it->type & OB_MAP_TO) && to_first)
            s.copies[batched++] = to;
        if (it->type & OB_MAP_FROM)
            s.copies[batched++] = from;
        if ((it->type & OB_MAP_TO) && !to_first)
            s.copies[batched++] = to;
    }
    if (keep_whole) {
        for (int32_t i = 0; i < a->count; i++)
            if (items[i].why == OB_REASON_NONE)
                items[i].why = (items[i].type & OB_MAP_PRESENT) ? OB_REASON_PRESENT
                                                                 : OB_REASON_WHOLE;
    }
    size_t copies = batched;
    char label[160];
    if (copies > 0 && ob_hook_copy_run(c->device, range_label(c, label, sizeof(label)), s.copies,
                                       copies) != OMPBATCH_OK) {
        /* Nothing is lost: the runtime repeats the copies (the ones that were made wrote the
         * same bytes it will write). */
        for (int32_t i = 0; i < a->count; i++)
            if (items[i].why == OB_REASON_NONE)
                items[i].why = OB_REASON_FAILED;
    }
    size_t done = batched_items(items, a->count);
    report_construct(c, items, a->count, &ob_hook_count.update_batched, done);
    if (done == 0) {
        ob_hook_forward(c, a, 1);
    } else if (done < (size_t)a->count) {
        /* The items the hook did not copy, in their order, go to the runtime; those with no
         * transfer to make would only be looked up (no `present` here: that keeps the
         * construct whole), so a construct left with nothing else goes nowhere. */
        int32_t n = 0;
        for (int32_t i = 0; i < a->count; i++)
            if (items[i].why != OB_REASON_NONE && items[i].why != OB_REASON_NO_TRANSFER)
                compact_item(a, i, &s.fwd, n++, a->types[i]);
        s.fwd.count = n;
        if (n > 0)
            ob_hook_forward(c, &s.fwd, 0);
    }
    scratch_free(&s);
}

/* ---- begin: target enter data, target data ---------------------------------------------- */

static int begin_should_copy_back(const item *it)
{
    return it->why == OB_REASON_FAILED || it->why == OB_REASON_DEVICE;
}

/* How the mirror follows a struct item through a begin it forwards, by libomptarget 16's
 * rules: a combined parent and a member pointer's object count like any item (the parent's
 * entry may start up to 7 bytes lower, padded to 8; the mirror keeps [begin, end) of it, which
 * only means it knows less); a plain member inside its parent changes no count. */
enum follow_kind { FOLLOW_NOT = 0, FOLLOW_NEW, FOLLOW_COUNTED, FOLLOW_MEMBER };

static void plan_struct_items(const ob_construct *c, item *items)
{
    const ob_map_args *a = &c->args;
    for (int32_t i = 0; i < a->count; i++) {
        item *it = &items[i];
        if (it->why != OB_REASON_STRUCT)
            continue;
        int pointer = (it->type & OB_MAP_PTR_AND_OBJ) != 0;
        unsigned parent = member_of(it->type);
        int counts = (parent == 0 && it->is_parent && !pointer) || (parent != 0 && pointer);
        if (!counts) {
            if (is_plain_member_inside(items, a->count, i))
                it->follow = FOLLOW_MEMBER;
            continue;
        }
        if (a->sizes[i] <= 0 || it->foreign || ob_globals_overlap(it->begin, it->end))
            continue;
        ob_mirror_found found = ob_mirror_find(c->device, it->begin, it->end, NULL);
        if (found == OB_MIRROR_INSIDE)
            it->follow = FOLLOW_COUNTED;
        else if (found == OB_MIRROR_ABSENT && !ob_hook_runtime_has((void *)it->begin, c->device) &&
                 !ob_hook_runtime_has((void *)(it->end - 1), c->device))
            it->follow = FOLLOW_NEW;
    }
}

/* After the runtime: the entries of followed struct items, new or counted once more. */
static void learn_struct_items(const ob_construct *c, const item *items)
{
    for (int32_t i = 0; i < c->args.count; i++) {
        const item *it = &items[i];
        int hold = (it->type & OB_MAP_OMPX_HOLD) != 0;
        if (it->follow == FOLLOW_COUNTED) {
            ob_mirror_entry *entry = NULL;
            if (ob_mirror_find(c->device, it->begin, it->end, &entry) == OB_MIRROR_INSIDE) {
                if (hold)
                    entry->hold++;
                else
                    entry->dyn++;
            }
        } else if (it->follow == FOLLOW_NEW) {
            void *device = ob_hook_runtime_mapped((void *)it->begin, c->device);
            if (device == NULL)
                continue;
            ob_mirror_entry entry = {.begin = it->begin, .end = it->end,
                                     .device = (uintptr_t)device, .dyn = !hold, .hold = hold};
            ob_mirror_insert(c->device, &entry);
        }
    }
}

/* Before the runtime runs: which items create their entry now, and which of those the hook
 * copies (`to` taken off what the runtime sees). */
static size_t plan_begin(const ob_construct *c, item *items, int64_t *types)
{
    const ob_map_args *a = &c->args;
    size_t candidates = 0;
    for (int32_t i = 0; i < a->count; i++) {
        item *it = &items[i];
        types[i] = it->type;
        if (it->why != OB_REASON_NONE)
            continue;
        if (it->overlaps) {
            it->why = OB_REASON_OVERLAP;
            continue;
        }
        if (ob_globals_overlap(it->begin, it->end)) {
            it->why = OB_REASON_GLOBAL;
            continue;
        }
        ob_mirror_found found = ob_mirror_find(c->device, it->begin, it->end, NULL);
        if (found != OB_MIRROR_ABSENT) {
            it->why = found == OB_MIRROR_INSIDE ? OB_REASON_EXISTING : OB_REASON_PARTIAL;
            continue;
        }
        /* Not in the mirror: new only if the runtime has nothing at its first byte either.
         * One question, not one at each end: an entry of the runtime's further in (at the
         * last byte or strictly inside) makes an explicit item an extension, which the runtime
         * refuses itself, fatally, whatever the item's `to`; an implicit one (a split region's
         * begin half) it takes for present and creates nothing, so the device address asked
         * for after it is not found at the first byte and the hook copies nothing. */
        if (ob_hook_runtime_has((void *)it->begin, c->device)) {
            it->why = OB_REASON_EXISTING;
            continue;
        }
        it->is_new = 1;
        if (!(it->type & OB_MAP_TO)) {
            it->why = OB_REASON_NO_TRANSFER;
            continue;
        }
        types[i] = it->type & ~(int64_t)OB_MAP_TO;
        candidates++;
    }
    plan_struct_items(c, items);
    /* An attachment this construct makes writes a device pointer into its pointer's entry;
     * the hook's copy of that entry could land after the write and undo it. */
    for (int32_t i = 0; i < a->count && candidates > 0; i++) {
        if (!(items[i].type & OB_MAP_PTR_AND_OBJ))
            continue;
        uintptr_t p = (uintptr_t)a->bases[i];
        for (int32_t j = 0; j < a->count; j++) {
            item *it = &items[j];
            if (it->why == OB_REASON_NONE && p < it->end && it->begin < p + sizeof(void *)) {
                it->why = OB_REASON_ATTACH;
                types[j] = it->type;
                candidates--;
            }
        }
    }
    return candidates;
}

void ob_hook_begin(const ob_construct *c)
{
    const ob_map_args *a = &c->args;
    scratch s;
    if (prepare(c, &s, 1) != 0)
        return;
    item *items = s.items;
    size_t candidates = plan_begin(c, items, s.types);
    ob_map_args changed = *a;
    changed.types = s.types;
    ob_hook_forward(c, candidates > 0 ? &changed : a, candidates == 0);

    /* The runtime has created the new entries: learn them, then copy. */
    size_t n = 0;
    for (int32_t i = 0; i < a->count; i++) {
        item *it = &items[i];
        if (it->why == OB_REASON_EXISTING) {
            ob_mirror_entry *entry = NULL;
            if (ob_mirror_find(c->device, it->begin, it->end, &entry) == OB_MIRROR_INSIDE) {
                if (it->type & OB_MAP_OMPX_HOLD)
                    entry->hold++;
                else
                    entry->dyn++;
            }
            continue;
        }
        if (!it->is_new)
            continue;
        void *device = ob_hook_runtime_mapped((void *)it->begin, c->device);
        if (device == NULL) {
            /* The runtime did not map it after all; it would not have copied either. */
            if (it->why == OB_REASON_NONE)
                it->why = OB_REASON_NO_TRANSFER;
            continue;
        }
        ob_mirror_entry entry = {.begin = it->begin, .end = it->end, .device = (uintptr_t)device};
        if (it->type & OB_MAP_OMPX_HOLD)
            entry.hold = 1;
        else
            entry.dyn = 1;
        ob_mirror_insert(c->device, &entry);
        if (it->why != OB_REASON_NONE)
            continue;
        if (!ob_hook_device_usable(c->device, (uintptr_t)device)) {
            it->why = OB_REASON_DEVICE;
            continue;
        }
        s.copies[n++] = (ob_hook_copy){device, (const void *)it->begin,
                                       (size_t)(it->end - it->begin), 1, NULL};
    }
    char label[160];
    if (n > 0 && ob_hook_copy_run(c->device, range_label(c, label, sizeof(label)), s.copies, n) !=
                     OMPBATCH_OK) {
        for (int32_t i = 0; i < a->count; i++)
            if (items[i].why == OB_REASON_NONE)
                items[i].why = OB_REASON_FAILED;
    }
    give_back_to_copies(c, &s, items, a->count, begin_should_copy_back);
    /* Learnt before anything is dropped, so that a drop covering them still applies. */
    learn_struct_items(c, items);
    drop_attached(c->device, a, items);
    /* Entries changed in ways the mirror does not follow. */
    for (int32_t i = 0; i < a->count; i++) {
        ob_hook_reason why = items[i].why;
        if (items[i].follow != FOLLOW_NOT)
            continue;
        if (why == OB_REASON_ATTACH || why == OB_REASON_STRUCT || why == OB_REASON_ZERO_SIZE ||
            why == OB_REASON_RETURN_PARAM || why == OB_REASON_PARTIAL ||
            why == OB_REASON_OVERLAP)
            drop_touched(c->device, a, i);
        else if (why == OB_REASON_PRESENT || why == OB_REASON_GLOBAL)
            ob_mirror_drop_range(c->device, items[i].begin, items[i].end);
    }
    report_construct(c, items, a->count, &ob_hook_count.enter_batched,
                     batched_items(items, a->count));
    scratch_free(&s);
}

/* ---- end: target exit data, end of target data ----------------------------------------- */

/* libomptarget 16's end for one item of a mirrored entry, by its reference counting: whether
 * it is the last reference (the runtime then copies `from` and deletes the entry), and the
 * counts after it. Returns -1 for a state the hook does not model. */
static int model_end(ob_mirror_entry *entry, int64_t type)
{
    int hold = (type & OB_MAP_OMPX_HOLD) != 0;
    uint64_t *mine = hold ? &entry->hold : &entry->dyn;
    uint64_t other = hold ? entry->dyn : entry->hold;
    if (*mine == 0)
        return -1;
    int last = other > 0 ? 0 : ((type & OB_MAP_DELETE) ? 1 : *mine == 1);
    if (type & OB_MAP_DELETE)
        *mine = 1;
    (*mine)--;
    return last;
}

static size_t plan_end(const ob_construct *c, item *items, int64_t *types, size_t *staging_bytes)
{
    const ob_map_args *a = &c->args;
    size_t candidates = 0;
    *staging_bytes = 0;
    for (int32_t i = a->count - 1; i >= 0; i--) { /* the runtime's order: reverse */
        item *it = &items[i];
        types[i] = it->type;
        if (it->why != OB_REASON_NONE)
            continue;
        ob_mirror_entry *entry = entry_holding(c, it);
        if (entry == NULL)
            continue;
        it->was_mirrored = 1;
        int last = model_end(entry, it->type);
        if (last < 0) {
            it->why = OB_REASON_UNKNOWN;
            ob_mirror_drop_range(c->device, entry->begin, entry->end);
            continue;
        }
        if (!(it->type & OB_MAP_FROM) || !(last || (it->type & OB_MAP_ALWAYS))) {
            it->why = OB_REASON_NO_TRANSFER;
            continue;
        }
        if (it->overlaps) {
            it->why = OB_REASON_OVERLAP;
            continue;
        }
        if (!ob_hook_device_usable(c->device, entry->device)) {
            it->why = OB_REASON_DEVICE;
            continue;
        }
        it->device = entry->device + (it->begin - entry->begin);
        it->staging = *staging_bytes;
        *staging_bytes += ((size_t)(it->end - it->begin) + 63) & ~(size_t)63;
        types[i] = it->type & ~(int64_t)OB_MAP_FROM;
        candidates++;
    }
    return candidates;
}

/* After the runtime: entries the model or the runtime says are gone leave the mirror. */
static void settle_end(const ob_construct *c, const item *items)
{
    const ob_map_args *a = &c->args;
    for (int32_t i = 0; i < a->count; i++) {
        const item *it = &items[i];
        if (it->was_mirrored) {
            ob_mirror_entry *entry = NULL;
            if (ob_mirror_find(c->device, it->begin, it->end, &entry) == OB_MIRROR_INSIDE &&
                (entry->dyn + entry->hold == 0 ||
                 !ob_hook_runtime_has((void *)entry->begin, c->device)))
                ob_mirror_drop_range(c->device, entry->begin, entry->end);
        } else if (it->why != OB_REASON_NONE && it->why != OB_REASON_SKIPPED &&
                   it->why != OB_REASON_UNKNOWN) {
            drop_touched(c->device, a, i);
        }
    }
}

void ob_hook_end(const ob_construct *c)
{
    const ob_map_args *a = &c->args;
    scratch s;
    if (prepare(c, &s, 1) != 0) {
        ob_hook_copy_forget_memory(); /* the runtime may have freed device memory */
        return;
    }
    item *items = s.items;
    size_t staging_bytes = 0;
    size_t candidates = plan_end(c, items, s.types, &staging_bytes);
    /* The device copies go to staging before the runtime frees the device memory; host
     * memory is written afterwards, and only where the runtime would have written it. */
    ob_hook_buffer buffer = {NULL, NULL};
    if (candidates > 0 && ob_hook_buffer_get(c->device, staging_bytes, &buffer) != 0)
        buffer.bytes = NULL;
    unsigned char *staging = buffer.bytes;
    size_t n = 0;
    for (int32_t i = 0; i < a->count && staging != NULL; i++) {
        item *it = &items[i];
        if (it->why == OB_REASON_NONE)
            s.copies[n++] = (ob_hook_copy){staging + it->staging, (const void *)it->device,
                                           (size_t)(it->end - it->begin), 0, NULL};
    }
    char label[160];
    if (candidates > 0 &&
        (staging == NULL || ob_hook_copy_run(c->device, range_label(c, label, sizeof(label)),
                                             s.copies, n) != OMPBATCH_OK)) {
        for (int32_t i = 0; i < a->count; i++) {
            if (items[i].why == OB_REASON_NONE) {
                items[i].why = OB_REASON_FAILED;
                s.types[i] = items[i].type;
            }
        }
        candidates = 0;
    }
    ob_map_args changed = *a;
    changed.types = s.types;
    ob_hook_forward(c, candidates > 0 ? &changed : a, candidates == 0);

    size_t done = 0;
    /* The moves reuse the copy list's memory: an ob_hook_copy is no smaller than a move. */
    ob_host_move *moves = (ob_host_move *)s.copies;
    _Static_assert(sizeof(ob_host_move) <= sizeof(ob_hook_copy), "moves fit the copy list");
    for (int32_t i = 0; i < a->count && candidates > 0; i++) {
        item *it = &items[i];
        if (it->why != OB_REASON_NONE)
            continue;
        /* The runtime copies `always` items whatever the count, and the others only when it
         * removed the entry. */
        if ((it->type & OB_MAP_ALWAYS) || !ob_hook_runtime_has((void *)it->begin, c->device))
            moves[done++] = (ob_host_move){(void *)it->begin, staging + it->staging,
                                           (size_t)(it->end - it->begin), NULL};
        else
            it->why = OB_REASON_STILL_MAPPED;
    }
    /* Large ones in parallel, as the staged strategy unpacks. */
    if (done > 0) {
        uint64_t started = ob_phase_start();
        ob_host_moves_run(moves, done, OB_MOVE_UNPACK);
        ob_phase_end(OB_PHASE_UNPACK, started);
    }
    if (candidates > 0)
        ob_hook_buffer_put(&buffer);
    settle_end(c, items);
    ob_hook_copy_forget_memory();
    report_construct(c, items, a->count, &ob_hook_count.exit_batched, done);
    scratch_free(&s);
}

/* ---- target regions ---------------------------------------------------------------------- */

int ob_hook_kernel_maps(int device, const ob_kernel_args *k)
{
    ob_map_args a = {
        .count = (int32_t)k->num_args,
        .bases = k->arg_base_ptrs,
        .begins = k->arg_ptrs,
        .sizes = k->arg_sizes,
        .types = k->arg_types,
        .names = k->arg_names,
        .mappers = k->arg_mappers,
    };
    /* A region's maps are balanced, so the counts of mirrored entries come back to what
     * they were; what can outlive it is an attachment inside a mirrored entry. */
    ob_mirror_kernel_lock();
    for (int32_t i = 0; i < a.count; i++) {
        if (!(a.types[i] & OB_MAP_PTR_AND_OBJ))
            continue;
        uintptr_t p = (uintptr_t)a.bases[i];
        ob_mirror_drop_range(device, p, p + sizeof(void *));
    }
    ob_mirror_kernel_unlock();
    return any_mapper(&a);
}

void ob_hook_kernel_mappers_done(int device)
{
    ob_mirror_kernel_lock();
    if (ob_mapper_record_finish(device, 0) != 0)
        ob_mirror_drop_device(device);
    ob_mirror_kernel_unlock();
}
