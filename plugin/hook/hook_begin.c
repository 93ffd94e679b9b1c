/* The hook's data begin (target enter data, the begin of target data and of a split region):
 * which items create their entry now and get their `to` copy from the hook after the runtime
 * allocated them, and what the mirror learns. Callers hold the construct lock exclusively. */
#include "plugin/hook/hook_begin.h"

#include <stdint.h>
#include <stdlib.h>

#include "plugin/hook/hook_construct.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_items.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_report.h"
#include "plugin/hook/hook_runtime.h"
#include "plugin/hook/hook_stats.h"
#include "ompbatch.h"

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

/* Zero-size items inside mirrored entries: counted there once more (ob_hook_zero_size_inside). */
static void plan_zero_size_items(const ob_construct *c, ob_hook_item *items)
{
    for (int32_t i = 0; i < c->args.count; i++)
        if (items[i].why == OB_REASON_ZERO_SIZE && ob_hook_zero_size_inside(c, i, NULL))
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
            if (ob_mirror_find(c->device, it->begin, ob_hook_lookup_end(it), &entry) ==
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
            ob_hook_runtime_base(&c->args, i, &entry);
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
    if (ob_hook_prepare(c, &s, 1) != 0)
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
        ob_hook_runtime_base(a, i, &entry);
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
    ob_hook_give_back_to_copies(c, &s, items, a->count, begin_should_copy_back);
    /* Learnt before anything is dropped, so that a drop covering them still applies. */
    learn_followed_items(c, items);
    ob_hook_drop_attached(c->device, a, items);
    /* Entries changed in ways the mirror does not follow. */
    for (int32_t i = 0; i < a->count; i++) {
        ob_hook_reason why = items[i].why;
        if (items[i].follow != FOLLOW_NOT)
            continue;
        if (why == OB_REASON_ATTACH || why == OB_REASON_STRUCT || why == OB_REASON_ZERO_SIZE ||
            why == OB_REASON_RETURN_PARAM || why == OB_REASON_PARTIAL ||
            why == OB_REASON_OVERLAP)
            ob_hook_drop_touched(c->device, a, i);
        else if (why == OB_REASON_PRESENT || why == OB_REASON_GLOBAL)
            ob_foreign_forget_range(c->device, items[i].begin, items[i].end);
    }
    ob_hook_report_construct(c, items, a->count, &ob_hook_count.enter_batched,
                             ob_hook_batched_items(items, a->count));
    ob_hook_scratch_free(&s);
}
