/* What the hook's data constructs share (hook_construct.h): the scratch and descriptions of a
 * construct's items, the ranges a zero-size item may reach, what leaves the mirror when the
 * runtime changed entries the mirror does not follow, the items handed back to the runtime;
 * and what a forwarded target region may change in the mirror. The decisions themselves are
 * hook_update.c's, hook_begin.c's and hook_end.c's, following libomptarget 16's rules item by
 * item (docs/hook.md says which). The hook copies only what it can account for exactly:
 * contiguous items (or the objects of pointer-based ones) lying in mappings it saw created or
 * learnt, with no attached pointers, no struct begins or ends, no mappers. Everything else
 * goes to the runtime unchanged.
 *
 * Callers hold the construct lock exclusively (omp_hook.c), so nothing else changes the
 * mirror or libomptarget's table between a decision and the forwarded call. */
#include "plugin/hook/hook_construct.h"

#include <stdint.h>
#include <stdlib.h>

#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_items.h"
#include "plugin/hook/hook_mapper.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_report.h"
#include "plugin/hook/hook_stats.h"

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
int ob_hook_zero_size_reaches(int device, uintptr_t ptr, const ob_mirror_entry *entry)
{
    ob_mirror_entry *below = NULL, *above = NULL;
    ob_mirror_neighbours(device, ptr, &below, &above);
    return entry != NULL && ((entry == below && may_reach(below, ptr)) ||
                             (entry == above && may_reach(above, ptr)));
}

/* The base pointer libomptarget keeps with the entry item i creates: a pointer-based item's
 * object takes its pointer's value as base, any other item its own base. */
void ob_hook_runtime_base(const ob_map_args *a, int32_t i, ob_mirror_entry *entry)
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
int ob_hook_zero_size_inside(const ob_construct *c, int32_t i, ob_mirror_entry **entry)
{
    const ob_map_args *a = &c->args;
    uintptr_t at = (uintptr_t)a->begins[i];
    if (a->sizes[i] != 0 || (a->types[i] & OB_MAP_PTR_AND_OBJ) || at == UINTPTR_MAX)
        return 0;
    return ob_mirror_find(c->device, at, at + 1, entry) == OB_MIRROR_INSIDE;
}

/* The range an item is looked up by in the mirror: a zero-size one by its byte. */
uintptr_t ob_hook_lookup_end(const ob_hook_item *it)
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
 * entries it may reach (ob_hook_zero_size_reaches) and the byte it names, but not the stretch back
 * to its base: libomptarget looks it up by that byte alone, and creates nothing for it. */
void ob_hook_drop_touched(int device, const ob_map_args *a, int32_t i)
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
void ob_hook_drop_attached(int device, const ob_map_args *a, const ob_hook_item *items)
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
void ob_hook_compact_item(const ob_map_args *a, int32_t i, ob_map_args *out, int32_t n,
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
void ob_hook_give_back_to_copies(const ob_construct *c, ob_hook_scratch *s,
                                const ob_hook_item *items, int32_t count,
                                int (*selected)(const ob_hook_item *))
{
    int32_t n = 0;
    for (int32_t i = 0; i < count; i++)
        if (selected(&items[i]))
            ob_hook_compact_item(&c->args, i, &s->fwd, n++, OB_MAP_TO);
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
            ob_hook_drop_touched(c->device, a, i);
}

/* Allocates the scratch and describes the items. When that fails, or when `mappers_whole` and
 * the construct has a mapper, forwards the construct whole and returns -1. */
int ob_hook_prepare(const ob_construct *c, ob_hook_scratch *s, int mappers_whole)
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

/* The mirror entry that holds the item whole, or NULL with the item's reason set: partly
 * mapped, or not a mapping the hook knows. */
ob_mirror_entry *ob_hook_entry_holding(const ob_construct *c, ob_hook_item *it)
{
    ob_mirror_entry *entry = NULL;
    ob_mirror_found found = ob_mirror_find(c->device, it->begin, it->end, &entry);
    if (found == OB_MIRROR_INSIDE)
        return entry;
    it->why = found == OB_MIRROR_PARTIAL ? OB_REASON_PARTIAL : OB_REASON_UNKNOWN;
    return NULL;
}

void ob_hook_forget_touched(int device, const ob_map_args *a)
{
    for (int32_t i = 0; i < a->count; i++)
        if (!(a->types[i] & (OB_MAP_PRIVATE | OB_MAP_LITERAL)))
            ob_hook_drop_touched(device, a, i);
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
                ob_hook_drop_touched(device, &a, i);
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
