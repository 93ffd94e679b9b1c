/* Plans a batch built for earlier sets of copies, kept so that a submit coming back to one of
 * them reuses it instead of planning again: one thread's hook batch serves every construct of
 * a loop in turn (a halo's columns from and to, a kernel's checks between them), and a plan of
 * a thousand strided pieces costs tens of microseconds to build. */
#ifndef OMPBATCH_PLUGIN_PLAN_CACHE_H
#define OMPBATCH_PLUGIN_PLAN_CACHE_H

#include <stddef.h>

#include "plugin/plan/copy.h"
#include "plugin/plan/plan.h"

#define OB_PLAN_CACHE_SLOTS 8
/* Smaller plans are built faster than their keys are compared; larger ones would hold too
 * much memory eight times over. */
#define OB_PLAN_CACHE_MIN_COPIES 32
#define OB_PLAN_CACHE_MAX_COPIES 65536

typedef struct ob_cached_plan {
    ob_plan plan;
    ob_copy_key *keys;     /* the copies the plan was built from */
    size_t count;
    size_t capacity;       /* of keys */
    unsigned long config;  /* ob_config_generation when it was built */
    unsigned long used;    /* the cache's clock when it was last kept or found */
    int valid;             /* a plan of keys[0, count) nothing has made stale */
} ob_cached_plan;

typedef struct ob_plan_cache {
    ob_cached_plan slots[OB_PLAN_CACHE_SLOTS];
    unsigned long clock;
} ob_plan_cache;

/* Whether a plan of `count` copies is worth a slot. */
int ob_plan_cache_fits(size_t count);

/* The slot holding a valid plan of exactly keys[0, count) built under `config`, or NULL. */
ob_cached_plan *ob_plan_cache_find(ob_plan_cache *cache, const ob_copy_key *keys, size_t count,
                                   unsigned long config);

/* The slot a plan being kept goes to: an empty or stale one, else the least recently used.
 * Its contents are the caller's to overwrite (their arrays are reused). */
ob_cached_plan *ob_plan_cache_victim(ob_plan_cache *cache);

/* Marks the slot as just used. */
void ob_plan_cache_touch(ob_plan_cache *cache, ob_cached_plan *slot);

/* Every kept plan becomes stale: the memory they were planned for may be gone. */
void ob_plan_cache_invalidate(ob_plan_cache *cache);

void ob_plan_cache_free(ob_plan_cache *cache);

#endif
