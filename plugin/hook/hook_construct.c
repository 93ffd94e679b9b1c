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

#include <stdint.h>
#include <stdlib.h>

#include "plugin/api/rect.h"
#include "plugin/core/alloc.h"
#include "plugin/core/log.h"
#include "plugin/core/phase_time.h"
#include "plugin/exec/backend_staged.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_items.h"
#include "plugin/hook/hook_mapper.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_report.h"
#include "plugin/hook/hook_runtime.h"
#include "plugin/hook/hook_stats.h"
#include "plugin/hook/noncontig.h"
#include "ompbatch.h"

/* Whether a zero-size item at ptr may reach a mirrored entry next to it: libomptarget looks
 * such an item up in the entry at or before it (reached when ptr lies before its end, or
 * before its base pointer), else in the first entry after it (reached when ptr is not below
 * its base). Entries the hook did not see made may lie between, so this can only rule out;
 * an entry whose base the mirror does not know may be reached. */
static int may_reach(const ob_mirror_entry *e, uintptr_t ptr)
{
    if (e == NULL)
        return 0;
    if (e->begin <= ptr && ptr < e->end)
        return 1;
    if (!e->base_known)
        return 1;
    return e->begin <= ptr ? ptr < e->base : ptr >= e->base;
}

/* The entries a zero-size item at ptr may reach: of the mirrored entries on either side of
 * it, however far, those may_reach allows; 1 when one is `entry`. */
static int zero_size_reaches(int device, uintptr_t ptr, const ob_mirror_entry *entry)
{
    ob_mirror_entry *below = NULL, *above = NULL;
    ob_mirror_neighbours(device, ptr, &below, &above);
    return entry != NULL && ((entry == below && may_reach(below, ptr)) ||
                             (entry == above && may_reach(above, ptr)));
}

/* The base pointer libomptarget keeps with the entry item i creates: a pointer-based item's
 * object takes its pointer's value as base, any other item its own base. */
static void runtime_base(const ob_map_args *a, int32_t i, ob_mirror_entry *entry)
{
    entry->base_known = 0;
    if (!(a->types[i] & OB_MAP_PTR_AND_OBJ)) {
        entry->base = (uintptr_t)a->bases[i];
        entry->base_known = 1;
    } else if (a->bases[i] != NULL) {
        entry->base = (uintptr_t)*(void *const *)a->bases[i];
        entry->base_known = 1;
    }
}

/* A zero-size item inside a mirrored entry reaches exactly that entry: entries never overlap,
 * so none other begins between the entry's first byte and the item. Its reference is then
 * counted like any item's; a pointer-based one (its attachment) stays the runtime's alone. */
static int zero_size_inside(const ob_construct *c, int32_t i, ob_mirror_entry **entry)
{
    const ob_map_args *a = &c->args;
    uintptr_t at = (uintptr_t)a->begins[i];
    if (a->sizes[i] != 0 || (a->types[i] & OB_MAP_PTR_AND_OBJ) || at == UINTPTR_MAX)
        return 0;
    return ob_mirror_find(c->device, at, at + 1, entry) == OB_MIRROR_INSIDE;
}

/* The range an item is looked up by in the mirror: a zero-size one by its byte. */
static uintptr_t lookup_end(const ob_hook_item *it)
{
    return it->end > it->begin ? it->end : it->begin + 1;
}

static void forget_zero_size_reach(int device, uintptr_t ptr)
{
    ob_mirror_entry *below = NULL, *above = NULL;
    ob_mirror_neighbours(device, ptr, &below, &above);
    int above_reached = may_reach(above, ptr);
    uintptr_t above_begin = above != NULL ? above->begin : 0;
    uintptr_t above_end = above != NULL ? above->end : 0;
    if (may_reach(below, ptr))
        ob_foreign_forget_range(device, below->begin, below->end); /* invalidates above */
    if (above_reached && above_end > above_begin)
        ob_foreign_forget_range(device, above_begin, above_end);
}

/* Ranges whose entries an item may change in ways the mirror does not follow: the item's
 * own (from its base pointer on), the pointer of an attachment, and for a zero-size item the
 * entries it may reach (zero_size_reaches) and the byte it names, but not the stretch back
 * to its base: libomptarget looks it up by that byte alone, and creates nothing for it. */
static void drop_touched(int device, const ob_map_args *a, int32_t i)
{
    uintptr_t begin = (uintptr_t)a->begins[i];
    uintptr_t end = begin + (a->sizes[i] > 0 ? (uintptr_t)a->sizes[i] : 1);
    uintptr_t base = (uintptr_t)a->bases[i];
    if (a->sizes[i] <= 0) {
        forget_zero_size_reach(device, begin);
        if (!(a->types[i] & OB_MAP_PTR_AND_OBJ)) {
            ob_foreign_forget_range(device, begin, end);
            return;
        }
    }
    if (a->types[i] & OB_MAP_PTR_AND_OBJ)
        ob_foreign_forget_range(device, base, base + sizeof(void *));
    else if (base < begin)
        begin = base;
    else if (base >= end)
        end = base + 1;
    ob_foreign_forget_range(device, begin, end);
}

/* The begin attached the pointers of its pointer-based items (bases[i]): an entry holding one
 * now holds a device address the mirror's copies would overwrite, so it leaves the mirror.
 * The objects' own entries stay (a pointer inside its own object made that item forwarded). */
static void drop_attached(int device, const ob_map_args *a, const ob_hook_item *items)
{
    for (int32_t i = 0; i < a->count; i++) {
        if (!(a->types[i] & OB_MAP_PTR_AND_OBJ) || items[i].why == OB_REASON_SKIPPED ||
            items[i].why == OB_REASON_MAPPER)
            continue;
        uintptr_t p = (uintptr_t)a->bases[i];
        ob_foreign_forget_range(device, p, p + sizeof(void *));
    }
}

/* The construct goes to the runtime as the program made it, every item counted forwarded. */
static void forward_whole(const ob_construct *c)
{
    int32_t count = c->args.count > 0 ? c->args.count : 0;
    ob_hook_count_construct(c, count, &ob_hook_count.items_forwarded, 0);
    ob_hook_add(&ob_hook_count.by_reason[ob_hook_kind_of(c)][OB_REASON_WHOLE], (uint64_t)count);
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
static void give_back_to_copies(const ob_construct *c, ob_hook_scratch *s,
                                const ob_hook_item *items, int32_t count,
                                int (*selected)(const ob_hook_item *))
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
    if (ob_hook_kind_of(c) == OB_KIND_UPDATE)
        return;
    for (int32_t i = 0; i < a->count; i++)
        if (!(a->types[i] & (OB_MAP_PRIVATE | OB_MAP_LITERAL)) && !ob_hook_has_mapper(a, i))
            drop_touched(c->device, a, i);
}

/* Allocates the scratch and describes the items. When that fails, or when `mappers_whole` and
 * the construct has a mapper, forwards the construct whole and returns -1. */
static int prepare(const ob_construct *c, ob_hook_scratch *s, int mappers_whole)
{
    const ob_map_args *a = &c->args;
    int mapper = mappers_whole && a->count > 0 && ob_hook_any_mapper(a);
    if (a->count <= 0 || mapper || ob_hook_scratch_alloc(s, a->count) != 0) {
        /* A mapper's components reach the runtime through the hook's
         * __tgt_push_mapper_component: what they touch leaves the mirror. */
        /* A data begin's mapper components are probed as pushed, to learn what they create. */
        int learn = mapper && ob_hook_kind_of(c) == OB_KIND_BEGIN;
        if (mapper)
            ob_mapper_record_start(learn ? c->device : -1);
        forward_whole(c);
        if (mapper && ob_mapper_record_finish(c->device, 1) != 0)
            ob_foreign_forget_device(c->device);
        forget_items(c);
        if (learn)
            ob_mapper_learn_created(c->device, a);
        return -1;
    }
    if (ob_hook_describe_items(a, s->items, ob_hook_kind_of(c) == OB_KIND_UPDATE) != 0) {
        ob_hook_scratch_free(s);
        forward_whole(c);
        forget_items(c);
        return -1;
    }
    return 0;
}

/* ---- target update --------------------------------------------------------------------- */

/* Grows the copy list by two entries per piece of every non-contiguous item read. */
static int make_room_for_pieces(ob_hook_scratch *s)
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
static size_t strided_rect(const ob_mirror_entry *whole, ob_hook_item *it, ob_hook_copy *out)
{
    ob_rect rect;
    uint64_t first;
    if (!ob_hook_item_pieces_rect(it, &rect, &first) ||
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
static size_t strided_copies(const ob_construct *c, const ob_map_args *a, int32_t i,
                             ob_hook_item *it, ob_hook_copy *out)
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
 * the map types alone tell: such a construct is forwarded without the scratch and the ob_hook_item
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
    ob_hook_count_construct(c, a->count, &ob_hook_count.update_batched, 0);
    ob_hook_add(&ob_hook_count.by_reason[OB_KIND_UPDATE][OB_REASON_PRESENT], (uint64_t)present);
    ob_hook_add(&ob_hook_count.by_reason[OB_KIND_UPDATE][OB_REASON_WHOLE],
                (uint64_t)(a->count - present));
    ob_hook_forward(c, a, 1);
    return 1;
}

/* The mirror entry that holds the item whole, or NULL with the item's reason set: partly
 * mapped, or not a mapping the hook knows. */
static ob_mirror_entry *entry_holding(const ob_construct *c, ob_hook_item *it)
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
    ob_hook_scratch s;
    if (prepare(c, &s, 0) != 0)
        return;
    ob_hook_item *items = s.items;
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
        ob_hook_item *it = &items[i];
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
        /* An item is one or the other in practice, but keep the runtime's order for an ob_hook_item
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
    if (copies > 0 && ob_hook_copy_run(c->device, ob_hook_range_label(c, label, sizeof(label)),
                                       s.copies, copies) != OMPBATCH_OK) {
        /* Nothing is lost: the runtime repeats the copies (the ones that were made wrote the
         * same bytes it will write). */
        for (int32_t i = 0; i < a->count; i++)
            if (items[i].why == OB_REASON_NONE)
                items[i].why = OB_REASON_FAILED;
    }
    size_t done = ob_hook_batched_items(items, a->count);
    ob_hook_report_construct(c, items, a->count, &ob_hook_count.update_batched, done);
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
    ob_hook_scratch_free(&s);
}

/* ---- begin: target enter data, target data ---------------------------------------------- */

static int begin_should_copy_back(const ob_hook_item *it)
{
    return it->why == OB_REASON_FAILED || it->why == OB_REASON_DEVICE;
}

/* How the mirror follows a struct item through a begin it forwards, by libomptarget 16's
 * rules: a combined parent and a member pointer's object count like any item (the parent's
 * entry may start up to 7 bytes lower, padded to 8; the mirror keeps [begin, end) of it, which
 * only means it knows less); a plain member inside its parent changes no count. */
enum follow_kind { FOLLOW_NOT = 0, FOLLOW_NEW, FOLLOW_COUNTED, FOLLOW_MEMBER };

static void plan_struct_items(const ob_construct *c, ob_hook_item *items)
{
    const ob_map_args *a = &c->args;
    for (int32_t i = 0; i < a->count; i++) {
        ob_hook_item *it = &items[i];
        if (it->why != OB_REASON_STRUCT)
            continue;
        int pointer = (it->type & OB_MAP_PTR_AND_OBJ) != 0;
        unsigned parent = ob_hook_member_of(it->type);
        int counts = (parent == 0 && it->is_parent && !pointer) || (parent != 0 && pointer);
        if (!counts) {
            if (ob_hook_is_plain_member_inside(items, a->count, i))
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

/* Zero-size items inside mirrored entries: counted there once more (zero_size_inside). */
static void plan_zero_size_items(const ob_construct *c, ob_hook_item *items)
{
    for (int32_t i = 0; i < c->args.count; i++)
        if (items[i].why == OB_REASON_ZERO_SIZE && zero_size_inside(c, i, NULL))
            items[i].follow = FOLLOW_COUNTED;
}

/* After the runtime: the entries of followed items (struct items, zero-size items), new or
 * counted once more. */
static void learn_followed_items(const ob_construct *c, const ob_hook_item *items)
{
    for (int32_t i = 0; i < c->args.count; i++) {
        const ob_hook_item *it = &items[i];
        int hold = (it->type & OB_MAP_OMPX_HOLD) != 0;
        if (it->follow == FOLLOW_COUNTED) {
            ob_mirror_entry *entry = NULL;
            if (ob_mirror_find(c->device, it->begin, lookup_end(it), &entry) ==
                OB_MIRROR_INSIDE) {
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
            runtime_base(&c->args, i, &entry);
            ob_foreign_learn_entry(c->device, &entry);
        }
    }
}

/* Before the runtime runs: which items create their entry now, and which of those the hook
 * copies (`to` taken off what the runtime sees). */
static size_t plan_begin(const ob_construct *c, ob_hook_item *items, int64_t *types)
{
    const ob_map_args *a = &c->args;
    size_t candidates = 0;
    for (int32_t i = 0; i < a->count; i++) {
        ob_hook_item *it = &items[i];
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
    plan_zero_size_items(c, items);
    /* An attachment this construct makes writes a device pointer into its pointer's entry;
     * the hook's copy of that entry could land after the write and undo it. */
    for (int32_t i = 0; i < a->count && candidates > 0; i++) {
        if (!(items[i].type & OB_MAP_PTR_AND_OBJ))
            continue;
        uintptr_t p = (uintptr_t)a->bases[i];
        for (int32_t j = 0; j < a->count; j++) {
            ob_hook_item *it = &items[j];
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
    ob_hook_scratch s;
    if (prepare(c, &s, 1) != 0)
        return;
    ob_hook_item *items = s.items;
    size_t candidates = plan_begin(c, items, s.types);
    ob_map_args changed = *a;
    changed.types = s.types;
    ob_hook_forward(c, candidates > 0 ? &changed : a, candidates == 0);

    /* The runtime has created the new entries: learn them, then copy. */
    size_t n = 0;
    for (int32_t i = 0; i < a->count; i++) {
        ob_hook_item *it = &items[i];
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
        runtime_base(a, i, &entry);
        if (it->type & OB_MAP_OMPX_HOLD)
            entry.hold = 1;
        else
            entry.dyn = 1;
        ob_foreign_learn_entry(c->device, &entry);
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
    if (n > 0 && ob_hook_copy_run(c->device, ob_hook_range_label(c, label, sizeof(label)),
                                  s.copies, n) != OMPBATCH_OK) {
        for (int32_t i = 0; i < a->count; i++)
            if (items[i].why == OB_REASON_NONE)
                items[i].why = OB_REASON_FAILED;
    }
    give_back_to_copies(c, &s, items, a->count, begin_should_copy_back);
    /* Learnt before anything is dropped, so that a drop covering them still applies. */
    learn_followed_items(c, items);
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
            ob_foreign_forget_range(c->device, items[i].begin, items[i].end);
    }
    ob_hook_report_construct(c, items, a->count, &ob_hook_count.enter_batched,
                             ob_hook_batched_items(items, a->count));
    ob_hook_scratch_free(&s);
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

/* Whether a zero-size item of the end reaches the entry (zero_size_reaches): it takes a
 * reference of the entry it finds (the last one, perhaps, so that the item the hook would copy
 * is not the last and the runtime copies nothing). Unless it lies inside a mirrored entry
 * (counted there, in the runtime's order, by plan_end), the model cannot count it, so the
 * entry's items go to the runtime. */
static int reached_by_zero_size(const ob_construct *c, const ob_hook_item *items,
                                const ob_mirror_entry *entry)
{
    const ob_map_args *a = &c->args;
    for (int32_t i = 0; i < a->count; i++) {
        if (items[i].why != OB_REASON_ZERO_SIZE || items[i].was_mirrored)
            continue;
        uintptr_t at = (uintptr_t)a->begins[i], base = (uintptr_t)a->bases[i];
        if (zero_size_reaches(c->device, at, entry) ||
            ((a->types[i] & OB_MAP_PTR_AND_OBJ) && entry->begin < base + sizeof(void *) &&
             base < entry->end))
            return 1;
    }
    return 0;
}

static size_t plan_end(const ob_construct *c, ob_hook_item *items, int64_t *types,
                       size_t *staging_bytes)
{
    const ob_map_args *a = &c->args;
    size_t candidates = 0;
    *staging_bytes = 0;
    int zero_size = 0;
    for (int32_t i = 0; i < a->count; i++) {
        if (items[i].why != OB_REASON_ZERO_SIZE)
            continue;
        zero_size = 1;
        items[i].was_mirrored = zero_size_inside(c, i, NULL);
    }
    for (int32_t i = a->count - 1; i >= 0; i--) { /* the runtime's order: reverse */
        ob_hook_item *it = &items[i];
        types[i] = it->type;
        if (it->why == OB_REASON_ZERO_SIZE && it->was_mirrored) {
            /* Its reference goes here, between the items after it and those before. */
            ob_mirror_entry *entry = NULL;
            if (zero_size_inside(c, i, &entry) && model_end(entry, it->type) < 0)
                ob_foreign_forget_range(c->device, entry->begin, entry->end);
            continue;
        }
        if (it->why != OB_REASON_NONE)
            continue;
        ob_mirror_entry *entry = entry_holding(c, it);
        if (entry == NULL)
            continue;
        if (zero_size && reached_by_zero_size(c, items, entry)) {
            it->why = OB_REASON_ZERO_SIZE_REACHES;
            continue;
        }
        it->was_mirrored = 1;
        int last = model_end(entry, it->type);
        if (last < 0) {
            it->why = OB_REASON_UNKNOWN;
            ob_foreign_forget_range(c->device, entry->begin, entry->end);
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
static void settle_end(const ob_construct *c, const ob_hook_item *items)
{
    const ob_map_args *a = &c->args;
    for (int32_t i = 0; i < a->count; i++) {
        const ob_hook_item *it = &items[i];
        if (it->was_mirrored) {
            ob_mirror_entry *entry = NULL;
            if (ob_mirror_find(c->device, it->begin, lookup_end(it), &entry) ==
                    OB_MIRROR_INSIDE &&
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
    ob_hook_scratch s;
    if (prepare(c, &s, 1) != 0) {
        ob_hook_copy_forget_memory(); /* the runtime may have freed device memory */
        return;
    }
    ob_hook_item *items = s.items;
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
        ob_hook_item *it = &items[i];
        if (it->why == OB_REASON_NONE)
            s.copies[n++] = (ob_hook_copy){staging + it->staging, (const void *)it->device,
                                           (size_t)(it->end - it->begin), 0, NULL};
    }
    char label[160];
    if (candidates > 0 &&
        (staging == NULL ||
         ob_hook_copy_run(c->device, ob_hook_range_label(c, label, sizeof(label)), s.copies,
                          n) != OMPBATCH_OK)) {
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
        ob_hook_item *it = &items[i];
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
    ob_hook_report_construct(c, items, a->count, &ob_hook_count.exit_batched, done);
    ob_hook_scratch_free(&s);
}

void ob_hook_forget_touched(int device, const ob_map_args *a)
{
    for (int32_t i = 0; i < a->count; i++)
        if (!(a->types[i] & (OB_MAP_PRIVATE | OB_MAP_LITERAL)))
            drop_touched(device, a, i);
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
    /* One pass over the types first: most regions attach nothing and wait, and a region the
     * hook forwards on a busy host should cost it no more than this. */
    int attaches = 0, mappers = 0;
    for (int32_t i = 0; i < a.count; i++) {
        attaches |= (a.types[i] & OB_MAP_PTR_AND_OBJ) != 0;
        mappers |= ob_hook_has_mapper(&a, i);
    }
    int nowait = (k->flags & OB_KERNEL_NOWAIT) != 0;
    if (!attaches && !nowait)
        return mappers;
    /* A region's maps are balanced, so the counts of mirrored entries come back to what
     * they were; what can outlive it is an attachment inside a mirrored entry. */
    ob_mirror_kernel_lock();
    for (int32_t i = 0; i < a.count && attaches; i++) {
        if (!(a.types[i] & OB_MAP_PTR_AND_OBJ))
            continue;
        uintptr_t p = (uintptr_t)a.bases[i];
        ob_foreign_forget_range(device, p, p + sizeof(void *));
    }
    /* A nowait region's entries live on after the call returns, for as long as it runs. */
    if (nowait) {
        ob_foreign_note_async();
        for (int32_t i = 0; i < a.count; i++)
            if (!(a.types[i] & (OB_MAP_PRIVATE | OB_MAP_LITERAL)))
                drop_touched(device, &a, i);
    }
    ob_mirror_kernel_unlock();
    return mappers;
}

void ob_hook_kernel_mappers_done(int device)
{
    ob_mirror_kernel_lock();
    if (ob_mapper_record_finish(device, 0) != 0)
        ob_foreign_forget_device(device);
    ob_mirror_kernel_unlock();
}
