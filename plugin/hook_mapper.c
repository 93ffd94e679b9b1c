#include "hook_mapper.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "alloc.h"
#include "hook_mirror.h"
#include "log.h"
#include "omp_abi.h"

typedef struct component {
    uintptr_t base;
    uintptr_t begin;
    int64_t size;
    int64_t type;
} component;

/* One thread records at a time what its own forwarded construct pushes; the buffer is kept
 * for the thread's next construct. */
static _Thread_local struct {
    int active;
    int incomplete;
    component *items;
    size_t count, capacity;
} record;

void ob_mapper_record_start(void)
{
    record.active = 1;
    record.incomplete = 0;
    record.count = 0;
}

void ob_mapper_record(void *base, void *begin, int64_t size, int64_t type)
{
    ob_log(3, "hook:   mapper component: base %p begin %p size %" PRId64 " type 0x%" PRIx64,
           base, begin, size, (uint64_t)type);
    if (!record.active)
        return;
    if (record.count == record.capacity) {
        size_t grown = record.capacity ? 2 * record.capacity : 64;
        component *p = ob_realloc(record.items, grown * sizeof(*p));
        if (p == NULL) {
            record.incomplete = 1;
            return;
        }
        record.items = p;
        record.capacity = grown;
    }
    record.items[record.count++] =
        (component){(uintptr_t)base, (uintptr_t)begin, size, type};
}

int ob_mapper_record_finish(int device, int all)
{
    record.active = 0;
    if (record.incomplete)
        return -1;
    for (size_t i = 0; i < record.count; i++) {
        const component *c = &record.items[i];
        if (c->type & OB_MAP_PTR_AND_OBJ)
            ob_mirror_drop_range(device, c->base, c->base + sizeof(void *));
        if (!all)
            continue;
        uintptr_t begin = c->begin, end = begin + (c->size > 0 ? (uintptr_t)c->size : 1);
        if (!(c->type & OB_MAP_PTR_AND_OBJ) && c->base < begin)
            begin = c->base;
        else if (!(c->type & OB_MAP_PTR_AND_OBJ) && c->base >= end)
            end = c->base + 1;
        ob_mirror_drop_range(device, begin, end);
    }
    return 0;
}
