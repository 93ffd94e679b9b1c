#include "plugin/core/alloc.h"
#include "plugin/cuda/memkind.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/error.h"

#define OB_PAGE_SIZE ((uintptr_t)4096)

const char *ob_mem_kind_name(ob_mem_kind kind)
{
    switch (kind) {
    case OB_MEM_PAGEABLE:
        return "pageable host";
    case OB_MEM_PINNED:
        return "pinned host";
    case OB_MEM_DEVICE:
        return "device";
    case OB_MEM_MANAGED:
        return "managed";
    case OB_MEM_KIND_COUNT:
        break;
    }
    return "unknown";
}

/* Index of the first range whose end is above ptr. */
static size_t lower_bound(const ob_mem_cache *cache, uintptr_t ptr)
{
    size_t lo = 0, hi = cache->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cache->ranges[mid].end <= ptr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int insert(ob_mem_cache *cache, size_t at, const ob_mem_range *range)
{
    if (ob_grow((void **)&cache->ranges, &cache->capacity, cache->count + 1,
                sizeof(*cache->ranges)) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot grow the memory-kind cache");
    memmove(cache->ranges + at + 1, cache->ranges + at,
            (cache->count - at) * sizeof(*cache->ranges));
    cache->ranges[at] = *range;
    cache->count++;
    if (range->info.kind == OB_MEM_DEVICE || range->info.kind == OB_MEM_MANAGED)
        cache->device_ranges++;
    return OMPBATCH_OK;
}

static int query_driver(const ob_driver *driver, uintptr_t ptr, ob_mem_range *range)
{
    unsigned int memory_type = 0;
    unsigned int is_managed = 0;
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    CUdeviceptr mapped_at = 0;
    CUpointer_attribute attributes[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    void *values[] = {&memory_type, &is_managed, &ordinal, &start, &size, &mapped_at};
    int status = OB_CU(driver, cuPointerGetAttributes, 6, attributes, values, (CUdeviceptr)ptr);
    if (status != OMPBATCH_OK)
        return status;

    ob_mem_info *info = &range->info;
    info->ordinal = -1;
    if (is_managed)
        info->kind = OB_MEM_MANAGED;
    else if (memory_type == CU_MEMORYTYPE_DEVICE)
        info->kind = OB_MEM_DEVICE;
    else if (memory_type == CU_MEMORYTYPE_HOST)
        info->kind = OB_MEM_PINNED;
    else
        info->kind = OB_MEM_PAGEABLE;
    if (info->kind == OB_MEM_DEVICE)
        info->ordinal = ordinal;
    /* The copy kernel reads and writes pinned memory in place where the GPU maps it (at the
     * same address under unified addressing; registered memory may differ). */
    if (info->kind == OB_MEM_PINNED && mapped_at != 0) {
        info->mapped = 1;
        info->device_offset = (intptr_t)(mapped_at - (CUdeviceptr)ptr);
    }

    if (info->kind != OB_MEM_PAGEABLE && size > 0 && (uintptr_t)start <= ptr &&
        ptr - (uintptr_t)start < size) {
        range->start = (uintptr_t)start;
        range->end = (uintptr_t)start + size;
        info->range_start = range->start;
        info->range_size = size;
    } else {
        /* Pageable memory has no extent the driver knows: cache its page, merge freely. */
        range->start = ptr & ~(OB_PAGE_SIZE - 1);
        range->end = range->start + OB_PAGE_SIZE;
        info->range_start = 0;
        info->range_size = 0;
    }
    return OMPBATCH_OK;
}

static atomic_ulong host_generation;

unsigned long ob_mem_host_generation(void)
{
    return atomic_load_explicit(&host_generation, memory_order_acquire);
}

void ob_mem_host_changed(void)
{
    atomic_fetch_add_explicit(&host_generation, 1, memory_order_acq_rel);
}

int ob_mem_classify(const ob_driver *driver, ob_mem_cache *cache, uintptr_t ptr,
                    ob_mem_info *out)
{
    if (driver == NULL) {
        memset(out, 0, sizeof(*out));
        out->kind = OB_MEM_PAGEABLE;
        out->ordinal = -1;
        return OMPBATCH_OK;
    }
    unsigned long generation = ob_mem_host_generation();
    if (cache->host_generation != generation) {
        ob_mem_cache_clear(cache);
        cache->host_generation = generation;
    }
    if (cache->last < cache->count && cache->ranges[cache->last].start <= ptr &&
        ptr < cache->ranges[cache->last].end) {
        *out = cache->ranges[cache->last].info;
        return OMPBATCH_OK;
    }
    if (cache->other < cache->count && cache->ranges[cache->other].start <= ptr &&
        ptr < cache->ranges[cache->other].end) {
        size_t hit = cache->other;
        cache->other = cache->last;
        cache->last = hit;
        *out = cache->ranges[hit].info;
        return OMPBATCH_OK;
    }
    /* Copies of a strided item come in address order, each on a page of its own. */
    size_t next = cache->last + 1;
    if (next < cache->count && cache->ranges[next].start <= ptr && ptr < cache->ranges[next].end) {
        cache->other = cache->last;
        cache->last = next;
        *out = cache->ranges[next].info;
        return OMPBATCH_OK;
    }
    size_t at = lower_bound(cache, ptr);
    if (at < cache->count && cache->ranges[at].start <= ptr) {
        cache->other = cache->last;
        cache->last = at;
        *out = cache->ranges[at].info;
        return OMPBATCH_OK;
    }
    ob_mem_range range;
    memset(&range, 0, sizeof(range));
    int status = query_driver(driver, ptr, &range);
    if (status != OMPBATCH_OK)
        return status;
    *out = range.info;
    /* A pageable page may border a cached allocation: keep the cache disjoint by clipping. */
    if (at < cache->count && range.end > cache->ranges[at].start)
        range.end = cache->ranges[at].start;
    if (at > 0 && range.start < cache->ranges[at - 1].end)
        range.start = cache->ranges[at - 1].end;
    if (range.start > ptr || range.end <= ptr)
        return OMPBATCH_OK; /* clipped away; answer without caching */
    return insert(cache, at, &range);
}

void ob_mem_cache_clear(ob_mem_cache *cache)
{
    cache->count = 0;
    cache->last = 0;
    cache->other = 0;
    cache->device_ranges = 0;
}

void ob_mem_cache_forget_device(ob_mem_cache *cache)
{
    if (cache->device_ranges == 0)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < cache->count; i++) {
        ob_mem_kind kind = cache->ranges[i].info.kind;
        if (kind != OB_MEM_DEVICE && kind != OB_MEM_MANAGED)
            cache->ranges[kept++] = cache->ranges[i];
    }
    cache->count = kept;
    cache->last = cache->other = 0;
    cache->device_ranges = 0;
}

void ob_mem_cache_free(ob_mem_cache *cache)
{
    free(cache->ranges);
    memset(cache, 0, sizeof(*cache));
}
