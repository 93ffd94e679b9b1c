#include "plugin/hook/hook_mirror.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"

/* The entry a range was last found in: a construct's items are often the program's arrays
 * in the order it allocated them, so the next item's entry is that one or the one after it,
 * found in one or two looks instead of a binary search of a thousand entries (tens of
 * nanoseconds, cold). The index is never trusted: the entry it names is checked to hold the
 * range, and entries are disjoint, so one that does is the right entry whatever changed since.
 * Relaxed atomics: regions look up concurrently under the shared construct lock. */
/* A dropped entry stays in place as a tombstone, an empty range at its old end, until
 * tombstones outnumber live entries: an exit construct drops its arrays from the front of a
 * table of thousands, and closing each gap at once moved the whole tail every time (45% of the
 * hook's instructions under callgrind for 64 enter and exit constructs of 16 arrays with 1024
 * mapped, though little of the wall time on the build machine). Order
 * and disjointness hold for tombstones too, so the binary search needs no change; a range is
 * never inside one, and an insert reuses a tombstone where it falls. */
typedef struct range_table {
    ob_mirror_entry *entries; /* sorted by begin, disjoint */
    size_t count;             /* entries, tombstones included */
    size_t dead;              /* tombstones among them */
    size_t capacity;
    atomic_size_t last;
} range_table;

/* Tombstones are swept out when there are more than this many and more than live entries. */
#define OB_MIRROR_SWEEP_AT 64

static range_table devices[OB_MIRROR_MAX_DEVICES];
static range_table globals;
static pthread_mutex_t kernel_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t globals_mutex = PTHREAD_MUTEX_INITIALIZER;

static range_table *table_of(int device)
{
    return device >= 0 && device < OB_MIRROR_MAX_DEVICES ? &devices[device] : NULL;
}

/* First entry whose end lies above ptr: the only candidate to contain it, and where the
 * entries overlapping a range starting at ptr begin. */
static size_t first_ending_after(const range_table *table, uintptr_t ptr)
{
    size_t lo = 0, hi = table->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table->entries[mid].end <= ptr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int is_dead(const ob_mirror_entry *entry)
{
    return entry->begin == entry->end;
}

static void (*release_fn)(int device, const ob_mirror_entry *entry);

/* A live entry leaves the table: its registration, if any, goes with it. */
static void release(const range_table *table, const ob_mirror_entry *entry)
{
    if (entry->pinned == OB_PIN_REGISTERED && release_fn != NULL && !is_dead(entry))
        release_fn((int)(table - devices), entry);
}

static void bury(range_table *table, ob_mirror_entry *entry)
{
    release(table, entry);
    entry->begin = entry->end;
    entry->pinned = OB_PIN_NONE;
    table->dead++;
}

/* Removes every tombstone, keeping the live entries' order. */
static void sweep(range_table *table)
{
    size_t kept = 0;
    for (size_t i = 0; i < table->count; i++)
        if (!is_dead(&table->entries[i]))
            table->entries[kept++] = table->entries[i];
    table->count = kept;
    table->dead = 0;
}

/* Entries from `first` on that overlap [begin, end), tombstones included: [first, *last). */
static size_t overlap_end(const range_table *table, size_t first, uintptr_t end)
{
    size_t last = first;
    while (last < table->count && table->entries[last].begin < end)
        last++;
    return last;
}

static int holds(const range_table *table, size_t at, uintptr_t begin, uintptr_t end)
{
    return at < table->count && table->entries[at].begin <= begin && end <= table->entries[at].end;
}

static ob_mirror_found find_in(range_table *table, uintptr_t begin, uintptr_t end,
                               ob_mirror_entry **entry)
{
    size_t at = atomic_load_explicit(&table->last, memory_order_relaxed);
    if (!holds(table, at, begin, end) && !holds(table, ++at, begin, end))
        at = first_ending_after(table, begin);
    /* Tombstones inside the range stand for nothing; a live entry after one cannot hold the
     * whole range. */
    size_t first = at;
    while (at < table->count && table->entries[at].begin < end && is_dead(&table->entries[at]))
        at++;
    if (at == table->count || table->entries[at].begin >= end)
        return OB_MIRROR_ABSENT;
    if (at != first)
        return OB_MIRROR_PARTIAL;
    ob_mirror_entry *candidate = &table->entries[at];
    if (candidate->begin <= begin && end <= candidate->end) {
        atomic_store_explicit(&table->last, at, memory_order_relaxed);
        if (entry != NULL)
            *entry = candidate;
        return OB_MIRROR_INSIDE;
    }
    return OB_MIRROR_PARTIAL;
}

static void drop_in(range_table *table, uintptr_t begin, uintptr_t end)
{
    size_t first = first_ending_after(table, begin);
    size_t last = overlap_end(table, first, end);
    for (size_t i = first; i < last; i++)
        if (!is_dead(&table->entries[i]))
            bury(table, &table->entries[i]);
    if (table->dead > OB_MIRROR_SWEEP_AT && table->dead * 2 > table->count)
        sweep(table);
}

/* Puts the entry where entries overlapping it were, or into a tombstone next to where it
 * belongs, or opens a slot. */
static int insert_in(range_table *table, const ob_mirror_entry *entry)
{
    size_t first = first_ending_after(table, entry->begin);
    size_t last = overlap_end(table, first, entry->end);
    ob_mirror_entry *entries = table->entries;
    if (last > first) {
        for (size_t i = first; i < last; i++) {
            release(table, &entries[i]);
            table->dead -= is_dead(&entries[i]);
        }
        entries[first] = *entry;
        memmove(&entries[first + 1], &entries[last], (table->count - last) * sizeof(entries[0]));
        table->count -= last - first - 1;
        return 0;
    }
    /* A tombstone just before ends at or before the entry's begin, one just after begins at
     * or after its end: either slot keeps the order. */
    size_t slot = first > 0 && is_dead(&entries[first - 1]) ? first - 1
                  : first < table->count && is_dead(&entries[first]) ? first
                                                                      : table->count;
    if (slot < table->count) {
        entries[slot] = *entry;
        table->dead--;
        return 0;
    }
    if (ob_grow((void **)&table->entries, &table->capacity, table->count + 1,
                sizeof(*table->entries)) != 0)
        return -1;
    entries = table->entries;
    memmove(&entries[first + 1], &entries[first], (table->count - first) * sizeof(entries[0]));
    entries[first] = *entry;
    table->count++;
    return 0;
}

ob_mirror_found ob_mirror_find(int device, uintptr_t begin, uintptr_t end,
                               ob_mirror_entry **entry)
{
    range_table *table = table_of(device);
    return table != NULL ? find_in(table, begin, end, entry) : OB_MIRROR_ABSENT;
}

int ob_mirror_insert(int device, const ob_mirror_entry *entry)
{
    range_table *table = table_of(device);
    return table != NULL ? insert_in(table, entry) : -1;
}

void ob_mirror_drop_range(int device, uintptr_t begin, uintptr_t end)
{
    range_table *table = table_of(device);
    if (table != NULL)
        drop_in(table, begin, end);
}

void ob_mirror_drop_device(int device)
{
    range_table *table = table_of(device);
    if (table == NULL)
        return;
    for (size_t i = 0; i < table->count; i++)
        release(table, &table->entries[i]);
    table->count = table->dead = 0;
}

void ob_mirror_release_pins(int device)
{
    range_table *table = table_of(device);
    for (size_t i = 0; table != NULL && i < table->count; i++) {
        ob_mirror_entry *entry = &table->entries[i];
        if (entry->pinned == OB_PIN_REGISTERED && !is_dead(entry)) {
            release(table, entry);
            entry->pinned = OB_PIN_REFUSED;
        }
    }
}

void ob_mirror_on_release(void (*fn)(int device, const ob_mirror_entry *entry))
{
    release_fn = fn;
}

void ob_mirror_neighbours(int device, uintptr_t ptr, ob_mirror_entry **below,
                          ob_mirror_entry **above)
{
    *below = *above = NULL;
    range_table *table = table_of(device);
    if (table == NULL)
        return;
    size_t at = first_ending_after(table, ptr), next = at;
    while (next < table->count && is_dead(&table->entries[next]))
        next++;
    if (next < table->count && table->entries[next].begin <= ptr) {
        *below = &table->entries[next]; /* it holds ptr */
        for (next++; next < table->count && is_dead(&table->entries[next]); next++)
            ;
    } else {
        for (size_t back = at; back > 0; back--) {
            if (!is_dead(&table->entries[back - 1])) {
                *below = &table->entries[back - 1];
                break;
            }
        }
    }
    if (next < table->count)
        *above = &table->entries[next];
}

void ob_mirror_each(int device, void (*fn)(void *context, const ob_mirror_entry *entry),
                    void *context)
{
    range_table *table = table_of(device);
    for (size_t i = 0; table != NULL && i < table->count; i++)
        if (!is_dead(&table->entries[i]))
            fn(context, &table->entries[i]);
}

size_t ob_mirror_count(int device)
{
    range_table *table = table_of(device);
    return table != NULL ? table->count - table->dead : 0;
}

void ob_mirror_kernel_lock(void)
{
    pthread_mutex_lock(&kernel_mutex);
}

void ob_mirror_kernel_unlock(void)
{
    pthread_mutex_unlock(&kernel_mutex);
}

static int globals_unknown; /* a global could not be recorded: treat every range as one */

void ob_globals_add(uintptr_t begin, uintptr_t end)
{
    pthread_mutex_lock(&globals_mutex);
    /* Overlapping ranges are merged so that an overlap test stays one look-up. */
    ob_mirror_entry merged = {.begin = begin, .end = end};
    size_t at = first_ending_after(&globals, begin);
    while (at < globals.count && globals.entries[at].begin < end) {
        if (globals.entries[at].begin < merged.begin)
            merged.begin = globals.entries[at].begin;
        if (globals.entries[at].end > merged.end)
            merged.end = globals.entries[at].end;
        at++;
    }
    if (insert_in(&globals, &merged) != 0)
        globals_unknown = 1;
    pthread_mutex_unlock(&globals_mutex);
}

int ob_globals_overlap(uintptr_t begin, uintptr_t end)
{
    pthread_mutex_lock(&globals_mutex);
    int found = globals_unknown || find_in(&globals, begin, end, NULL) != OB_MIRROR_ABSENT;
    pthread_mutex_unlock(&globals_mutex);
    return found;
}
