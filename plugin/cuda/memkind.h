/* Classifies pointers by memory kind with cuPointerGetAttributes, through a cache owned by
 * the caller (one per batch: memory may be freed and reused between batches). */
#ifndef OMPBATCH_PLUGIN_MEMKIND_H
#define OMPBATCH_PLUGIN_MEMKIND_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/cuda/driver.h"

typedef enum ob_mem_kind {
    OB_MEM_PAGEABLE = 0, /* host memory the driver does not know (malloc, stack, globals) */
    OB_MEM_PINNED,       /* page-locked host memory (cuMemAllocHost, cuMemHostRegister) */
    OB_MEM_DEVICE,       /* device memory of one GPU */
    OB_MEM_MANAGED,      /* managed (unified) memory */
    OB_MEM_KIND_COUNT
} ob_mem_kind;

typedef struct ob_mem_info {
    ob_mem_kind kind;
    int ordinal;          /* CUDA device of device memory; -1 for other kinds */
    uintptr_t range_start; /* the allocation holding the pointer, when range_size > 0 */
    size_t range_size;    /* 0 when the extent is unknown (pageable memory) */
    int mapped;           /* pinned memory the GPU can reach: at address + device_offset */
    intptr_t device_offset;
} ob_mem_info;

typedef struct ob_mem_range {
    uintptr_t start;
    uintptr_t end; /* exclusive */
    ob_mem_info info;
} ob_mem_range;

typedef struct ob_mem_cache {
    ob_mem_range *ranges; /* sorted by start, disjoint */
    size_t count;
    size_t capacity;
    size_t last;          /* index of the last range found: neighbouring copies share one */
    size_t other;         /* the one before it: copies alternate between a source and a
                             destination allocation */
    size_t device_ranges; /* device and managed ranges among them: forgetting those is free
                             when there are none (a hook batch caches host pages only) */
    unsigned long host_generation; /* ob_mem_host_generation when the ranges were learnt */
} ob_mem_cache;

/* Counts the library's own registrations and unregistrations of host memory (the hook's,
 * OMPBATCH_REGISTER_MB): a cache learnt before the latest forgets everything at its next
 * classification, and a plan made before it is made anew (batch_plan.c), in every batch of
 * every thread. Registrations the program makes itself are its to announce
 * (ompbatch_batch_forget_memory). */
unsigned long ob_mem_host_generation(void);
void ob_mem_host_changed(void);

/* Fills *out for ptr. Allocations the driver knows are cached by their whole range; pageable
 * memory by its page. Without a driver (driver == NULL) everything is pageable. A cache older
 * than ob_mem_host_generation is emptied first. */
int ob_mem_classify(const ob_driver *driver, ob_mem_cache *cache, uintptr_t ptr,
                    ob_mem_info *out);

void ob_mem_cache_clear(ob_mem_cache *cache);

/* Drops device and managed ranges, keeping host ones (pageable pages, pinned allocations). */
void ob_mem_cache_forget_device(ob_mem_cache *cache);
void ob_mem_cache_free(ob_mem_cache *cache);

const char *ob_mem_kind_name(ob_mem_kind kind);

#endif
