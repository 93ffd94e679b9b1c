#include "plugin/hook/hook_mapper.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "plugin/core/alloc.h"
#include "plugin/core/log.h"
#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_runtime.h"
#include "plugin/hook/omp_abi.h"

typedef struct component {
    uintptr_t base;
    uintptr_t begin;
    int64_t size;
    int64_t type;
    int absent;       /* probed: the runtime had nothing at either end when it was pushed */
} component;

/* One thread records at a time what its own forwarded construct pushes; the buffer is kept
 * for the thread's next construct. */
static _Thread_local struct {
    int active;
    int incomplete;
    int probe_device; /* -1: no probing */
    component *items;
    size_t count, capacity;
} record;

void ob_mapper_record_start(int probe_device)
{
    record.active = 1;
    record.incomplete = 0;
    record.count = 0;
    record.probe_device = probe_device;
}

/* Whether the runtime has anything at either end of [begin, begin + size): asked while the
 * runtime expands the mapper, before it maps the component (it takes no lock around the
 * mapper function). */
static int runtime_has_either_end(int device, uintptr_t begin, int64_t size)
{
    return ob_hook_runtime_has((void *)begin, device) ||
           ob_hook_runtime_has((void *)(begin + (uintptr_t)size - 1), device);
}

void ob_mapper_record(void *base, void *begin, int64_t size, int64_t type)
{
    ob_log(3, "hook:   mapper component: base %p begin %p size %" PRId64 " type 0x%" PRIx64,
           base, begin, size, (uint64_t)type);
    if (!record.active)
        return;
    if (ob_grow((void **)&record.items, &record.capacity, record.count + 1,
                sizeof(*record.items)) != 0) {
        record.incomplete = 1;
        return;
    }
    int absent = record.probe_device >= 0 && size > 0 &&
                 !(type & (OB_MAP_PRIVATE | OB_MAP_LITERAL)) &&
                 !runtime_has_either_end(record.probe_device, (uintptr_t)begin, size);
    record.items[record.count++] =
        (component){(uintptr_t)base, (uintptr_t)begin, size, type, absent};
}

int ob_mapper_record_finish(int device, int all)
{
    record.active = 0;
    if (record.incomplete)
        return -1;
    for (size_t i = 0; i < record.count; i++) {
        const component *c = &record.items[i];
        if (c->type & OB_MAP_PTR_AND_OBJ)
            ob_foreign_forget_range(device, c->base, c->base + sizeof(void *));
        if (!all)
            continue;
        uintptr_t begin = c->begin, end = begin + (c->size > 0 ? (uintptr_t)c->size : 1);
        if (!(c->type & OB_MAP_PTR_AND_OBJ) && c->base < begin)
            begin = c->base;
        else if (!(c->type & OB_MAP_PTR_AND_OBJ) && c->base >= end)
            end = c->base + 1;
        ob_foreign_forget_range(device, begin, end);
    }
    return 0;
}

/* Component j's MEMBER_OF names component i (a mapper's numbering counts its whole list). */
static int is_parent(size_t i)
{
    for (size_t j = i + 1; j < record.count; j++)
        if ((uint64_t)(record.items[j].type & OB_MAP_MEMBER_OF) >> 48 == i + 1)
            return 1;
    return 0;
}

static int overlaps(uintptr_t begin, uintptr_t end, uintptr_t other, uintptr_t other_end)
{
    return begin < other_end && other < end;
}

/* Whether [begin, end) meets another component (its range, or the pointer it attaches) or an
 * item of the construct other than a mapper's (a mapper item's range is its components'). */
static int shared(size_t i, uintptr_t begin, uintptr_t end, const ob_map_args *args)
{
    for (size_t j = 0; j < record.count; j++) {
        const component *c = &record.items[j];
        if (c->type & OB_MAP_PTR_AND_OBJ &&
            overlaps(begin, end, c->base, c->base + sizeof(void *)))
            return 1;
        uintptr_t other = c->begin, other_end = other + (c->size > 0 ? (uintptr_t)c->size : 1);
        if (j != i && overlaps(begin, end, other, other_end))
            return 1;
    }
    for (int32_t k = 0; k < args->count; k++) {
        if (args->mappers != NULL && args->mappers[k] != NULL)
            continue;
        uintptr_t other = (uintptr_t)args->begins[k];
        uintptr_t other_end = other + (args->sizes[k] > 0 ? (uintptr_t)args->sizes[k] : 1);
        if (overlaps(begin, end, other, other_end) ||
            overlaps(begin, end, (uintptr_t)args->bases[k], (uintptr_t)args->bases[k] + 1))
            return 1;
    }
    return 0;
}

void ob_mapper_learn_created(int device, const ob_map_args *args)
{
    if (record.incomplete || record.probe_device != device)
        return;
    for (size_t i = 0; i < record.count; i++) {
        const component *c = &record.items[i];
        int pointer = (c->type & OB_MAP_PTR_AND_OBJ) != 0;
        if (!c->absent || ((c->type & OB_MAP_MEMBER_OF) && !pointer) || is_parent(i))
            continue;
        uintptr_t begin = c->begin, end = begin + (uintptr_t)c->size;
        if (end <= begin || shared(i, begin, end, args) || ob_globals_overlap(begin, end) ||
            ob_mirror_find(device, begin, end, NULL) != OB_MIRROR_ABSENT)
            continue;
        char *first = ob_hook_runtime_mapped((void *)begin, device);
        char *last = ob_hook_runtime_mapped((void *)(end - 1), device);
        if (first == NULL || last != first + (c->size - 1))
            continue;
        int hold = (c->type & OB_MAP_OMPX_HOLD) != 0;
        ob_mirror_entry entry = {.begin = begin, .end = end, .device = (uintptr_t)first,
                                 .dyn = !hold, .hold = hold};
        if (ob_foreign_learn_entry(device, &entry) == 0)
            ob_log(2, "hook: learnt %#lx+%" PRId64 " from a mapper's component %zu",
                   (unsigned long)begin, c->size, i);
    }
}
