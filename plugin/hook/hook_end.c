/* The hook's data end (target exit data, the end of target data and of a split region): which
 * items' last references it can count, whose `from` copies it then makes before the runtime
 * frees them, and what the mirror forgets. Callers hold the construct lock exclusively. */
#include "plugin/hook/hook_end.h"

#include <stdint.h>
#include <stdlib.h>

#include "plugin/core/phase_time.h"
#include "plugin/exec/host_moves.h"
#include "plugin/hook/hook_construct.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_items.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_report.h"
#include "plugin/hook/hook_runtime.h"
#include "plugin/hook/hook_stats.h"
#include "ompbatch.h"

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

/* Whether a zero-size item of the end reaches the entry (ob_hook_zero_size_reaches): it takes a
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
        if (ob_hook_zero_size_reaches(c->device, at, entry) ||
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
        items[i].was_mirrored = ob_hook_zero_size_inside(c, i, NULL);
    }
    for (int32_t i = a->count - 1; i >= 0; i--) { /* the runtime's order: reverse */
        ob_hook_item *it = &items[i];
        types[i] = it->type;
        if (it->why == OB_REASON_ZERO_SIZE && it->was_mirrored) {
            /* Its reference goes here, between the items after it and those before. */
            ob_mirror_entry *entry = NULL;
            if (ob_hook_zero_size_inside(c, i, &entry) && model_end(entry, it->type) < 0)
                ob_foreign_forget_range(c->device, entry->begin, entry->end);
            continue;
        }
        if (it->why != OB_REASON_NONE)
            continue;
        ob_mirror_entry *entry = ob_hook_entry_holding(c, it);
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
            if (ob_mirror_find(c->device, it->begin, ob_hook_lookup_end(it), &entry) ==
                    OB_MIRROR_INSIDE &&
                (entry->dyn + entry->hold == 0 ||
                 !ob_hook_runtime_has((void *)entry->begin, c->device)))
                ob_mirror_drop_range(c->device, entry->begin, entry->end);
        } else if (it->why != OB_REASON_NONE && it->why != OB_REASON_SKIPPED &&
                   it->why != OB_REASON_UNKNOWN) {
            ob_hook_drop_touched(c->device, a, i);
        }
    }
}

void ob_hook_end(const ob_construct *c)
{
    const ob_map_args *a = &c->args;
    ob_hook_scratch s;
    if (ob_hook_prepare(c, &s, 1) != 0) {
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
