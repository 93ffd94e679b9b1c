/* Where libomptarget may hold entries the mirror does not know (hook_foreign.h): per device, a
 * sorted array of disjoint, non-adjacent ranges. */
#include "plugin/hook/hook_foreign.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/hook/hook_mirror.h"

typedef struct span {
    uintptr_t begin, end;
} span;

typedef struct span_set {
    int all;  /* every range is foreign (the spans are then unused) */
    span *at;
    size_t count, capacity;
} span_set;

static span_set sets[OB_MIRROR_MAX_DEVICES];

static span_set *set_of(int device)
{
    return device >= 0 && device < OB_MIRROR_MAX_DEVICES ? &sets[device] : NULL;
}

/* The first span whose end is at or past ptr: the first that can meet or touch a range
 * starting at ptr. */
static size_t first_reaching(const span_set *set, uintptr_t ptr)
{
    size_t lo = 0, hi = set->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (set->at[mid].end < ptr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Room for one more span; 0, or -1 when there is none to be had. */
static int make_room(span_set *set)
{
    if (set->count < set->capacity)
        return 0;
    size_t grown = set->capacity ? 2 * set->capacity : 16;
    span *at = ob_realloc(set->at, grown * sizeof(span));
    if (at == NULL)
        return -1;
    set->at = at;
    set->capacity = grown;
    return 0;
}

static void insert_at(span_set *set, size_t i, span s)
{
    memmove(&set->at[i + 1], &set->at[i], (set->count - i) * sizeof(span));
    set->at[i] = s;
    set->count++;
}

void ob_foreign_add_device(int device)
{
    span_set *set = set_of(device);
    if (set != NULL) {
        set->all = 1;
        set->count = 0;
    }
}

void ob_foreign_add(int device, uintptr_t begin, uintptr_t end)
{
    span_set *set = set_of(device);
    if (set == NULL || set->all || end <= begin)
        return;
    /* Spans meeting or touching [begin, end) merge into it. */
    size_t first = first_reaching(set, begin), last = first;
    span merged = {begin, end};
    while (last < set->count && set->at[last].begin <= end) {
        if (set->at[last].begin < merged.begin)
            merged.begin = set->at[last].begin;
        if (set->at[last].end > merged.end)
            merged.end = set->at[last].end;
        last++;
    }
    if (last > first) {
        set->at[first] = merged;
        memmove(&set->at[first + 1], &set->at[last], (set->count - last) * sizeof(span));
        set->count -= last - first - 1;
    } else if (make_room(set) == 0) {
        insert_at(set, first, merged);
    } else {
        ob_foreign_add_device(device); /* unrecorded: anything may be foreign */
    }
}

void ob_foreign_clear(int device, uintptr_t begin, uintptr_t end)
{
    span_set *set = set_of(device);
    if (set == NULL || end <= begin)
        return;
    if (set->all) {
        /* Everything but [begin, end): two spans (room for 16 once any is made), or it all
         * stays foreign. */
        set->count = 0;
        if (make_room(set) != 0)
            return;
        set->all = 0;
        if (begin > 0)
            set->at[set->count++] = (span){0, begin};
        if (end < UINTPTR_MAX)
            set->at[set->count++] = (span){end, UINTPTR_MAX};
        return;
    }
    size_t i = first_reaching(set, begin + 1);
    while (i < set->count && set->at[i].begin < end) {
        span s = set->at[i];
        if (s.begin < begin && s.end > end) { /* the cleared range lies inside: split */
            if (make_room(set) != 0)
                return; /* it stays foreign: only a chance lost */
            set->at[i].end = begin;
            insert_at(set, i + 1, (span){end, s.end});
            return;
        }
        if (s.begin < begin) {
            set->at[i++].end = begin;
        } else if (s.end > end) {
            set->at[i].begin = end;
            return;
        } else {
            memmove(&set->at[i], &set->at[i + 1], (set->count - i - 1) * sizeof(span));
            set->count--;
        }
    }
}

int ob_foreign_overlaps(int device, uintptr_t begin, uintptr_t end)
{
    span_set *set = set_of(device);
    if (set == NULL || set->all)
        return 1;
    size_t i = first_reaching(set, begin + 1);
    return i < set->count && set->at[i].begin < end;
}

void ob_foreign_reset(int device)
{
    span_set *set = set_of(device);
    if (set != NULL)
        set->all = 0, set->count = 0;
}

void ob_foreign_forget_range(int device, uintptr_t begin, uintptr_t end)
{
    ob_mirror_drop_range(device, begin, end);
    ob_foreign_add(device, begin, end);
}

void ob_foreign_forget_device(int device)
{
    ob_mirror_drop_device(device);
    ob_foreign_add_device(device);
}

int ob_foreign_learn_entry(int device, const ob_mirror_entry *entry)
{
    ob_foreign_clear(device, entry->begin, entry->end);
    return ob_mirror_insert(device, entry);
}

static atomic_int async_seen;

void ob_foreign_note_async(void)
{
    atomic_store_explicit(&async_seen, 1, memory_order_relaxed);
}

int ob_foreign_async_seen(void)
{
    return atomic_load_explicit(&async_seen, memory_order_relaxed);
}

static void forget_entry(void *context, const ob_mirror_entry *entry)
{
    ob_foreign_add(*(const int *)context, entry->begin, entry->end);
}

void ob_foreign_forget_mirror(int device)
{
    ob_mirror_each(device, forget_entry, &device);
    ob_mirror_drop_device(device);
}
