/* The hook's target update: the items it copies in one batch (contiguous ones and the pieces
 * of strided ones, lying in mirrored entries), the rest forwarded in their order. Callers hold
 * the construct lock exclusively. */
#include "plugin/hook/hook_update.h"

#include <stdint.h>
#include <stdlib.h>

#include "plugin/api/rect.h"
#include "plugin/core/alloc.h"
#include "plugin/core/clock.h"
#include "plugin/core/log.h"
#include "plugin/core/workers.h"
#include "plugin/hook/hook_construct.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_items.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_register.h"
#include "plugin/hook/hook_report.h"
#include "plugin/hook/hook_runtime.h"
#include "plugin/hook/hook_stats.h"
#include "plugin/hook/noncontig.h"
#include "plugin/plan/plan.h"
#include "ompbatch.h"

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

/* Whether a contiguous item is left to the runtime because the host is busy. A copy this large
 * is pipelined through staging by the pack threads (plan.c); on a host whose processors are
 * all taken they get none, and the copy becomes the driver's own, the call the runtime makes,
 * with the hook's pass added: measured under contention on an H100, 64 MiB updates came out
 * 0.94-1.01x of the runtime alone. Kept unless the hook may register the range: its update
 * times are what earn a registration, and a registered range needs no processor to move.
 * Busy as OMPBATCH_HOST_BUSY says, not while pack threads merely came late once: what the hook
 * hands the runtime must not depend on a moment's scheduling. */
static int left_to_busy_runtime(const ob_hook_item *it)
{
    return (size_t)(it->end - it->begin) >= OB_PIPELINE_MIN_BYTES &&
           !ob_hook_register_wanted() && ob_host_saturated();
}

/* Shares the update's copy time among the entries of its contiguous items by their bytes, for
 * the registration of long-lived ranges (hook_register.h). */
static void note_copy_time(const ob_construct *c, const ob_hook_item *items, int32_t count,
                           const ob_hook_copy *copies, size_t n, uint64_t ns)
{
    size_t total = 0;
    for (size_t k = 0; k < n; k++)
        total += copies[k].bytes;
    for (int32_t i = 0; i < count && total > 0; i++) {
        const ob_hook_item *it = &items[i];
        ob_mirror_entry *entry = NULL;
        if (it->why != OB_REASON_NONE || it->strided ||
            ob_mirror_find(c->device, it->begin, it->end, &entry) != OB_MIRROR_INSIDE ||
            entry->end - entry->begin < OB_REGISTER_MIN_BYTES)
            continue;
        size_t bytes = (size_t)(it->end - it->begin);
        ob_hook_register_note_time(entry, bytes, (uint64_t)((double)ns * bytes / total));
    }
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

void ob_hook_update(const ob_construct *c)
{
    const ob_map_args *a = &c->args;
    if (forwarded_for_present(c))
        return;
    ob_hook_scratch s;
    if (ob_hook_prepare(c, &s, 0) != 0)
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
        ob_mirror_entry *entry = ob_hook_entry_holding(c, it);
        if (entry == NULL)
            continue;
        if (!ob_hook_device_usable(c->device, entry->device)) {
            it->why = OB_REASON_DEVICE;
            continue;
        }
        if (left_to_busy_runtime(it)) {
            it->why = OB_REASON_BUSY_LARGE;
            continue;
        }
        ob_hook_register_note_update(c->device, entry);
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
    uint64_t copy_started = copies > 0 && ob_hook_register_wanted() ? ob_clock_ns() : 0;
    if (copies > 0 && ob_hook_copy_run(c->device, ob_hook_range_label(c, label, sizeof(label)),
                                       s.copies, copies) != OMPBATCH_OK) {
        /* Nothing is lost: the runtime repeats the copies (the ones that were made wrote the
         * same bytes it will write). */
        for (int32_t i = 0; i < a->count; i++)
            if (items[i].why == OB_REASON_NONE)
                items[i].why = OB_REASON_FAILED;
    } else if (copy_started != 0) {
        note_copy_time(c, items, a->count, s.copies, copies, ob_clock_ns() - copy_started);
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
                ob_hook_compact_item(a, i, &s.fwd, n++, a->types[i]);
        s.fwd.count = n;
        if (n > 0)
            ob_hook_forward(c, &s.fwd, 0);
    }
    ob_hook_scratch_free(&s);
}
