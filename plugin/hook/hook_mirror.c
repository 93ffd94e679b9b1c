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
typedef struct range_table {
    ob_mirror_entry *entries; /* sorted by begin, disjoint */
    size_t count;
    size_t capacity;
    atomic_size_t last;
} range_table;

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
    if (at == table->count || table->entries[at].begin >= end)
        return OB_MIRROR_ABSENT;
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
    size_t last = first;
    while (last < table->count && table->entries[last].begin < end)
        last++;
    if (last == first)
        return;
    memmove(&table->entries[first], &table->entries[last],
            (table->count - last) * sizeof(table->entries[0]));
    table->count -= last - first;
}

static int insert_in(range_table *table, const ob_mirror_entry *entry)
{
    drop_in(table, entry->begin, entry->end);
    if (ob_grow((void **)&table->entries, &table->capacity, table->count + 1,
                sizeof(*table->entries)) != 0)
        return -1;
    size_t at = first_ending_after(table, entry->begin);
    memmove(&table->entries[at + 1], &table->entries[at],
            (table->count - at) * sizeof(table->entries[0]));
    table->entries[at] = *entry;
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
    if (table != NULL)
        table->count = 0;
}

size_t ob_mirror_count(int device)
{
    range_table *table = table_of(device);
    return table != NULL ? table->count : 0;
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
