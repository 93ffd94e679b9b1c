#include "plugin/plan/plan_cache.h"

#include <stdlib.h>
#include <string.h>

int ob_plan_cache_fits(size_t count)
{
    return count >= OB_PLAN_CACHE_MIN_COPIES && count <= OB_PLAN_CACHE_MAX_COPIES;
}

ob_cached_plan *ob_plan_cache_find(ob_plan_cache *cache, const ob_copy_key *keys, size_t count,
                                   unsigned long config)
{
    for (int i = 0; i < OB_PLAN_CACHE_SLOTS; i++) {
        ob_cached_plan *slot = &cache->slots[i];
        if (slot->valid && slot->count == count && slot->config == config &&
            memcmp(slot->keys, keys, count * sizeof(*keys)) == 0)
            return slot;
    }
    return NULL;
}

ob_cached_plan *ob_plan_cache_victim(ob_plan_cache *cache)
{
    ob_cached_plan *victim = &cache->slots[0];
    for (int i = 0; i < OB_PLAN_CACHE_SLOTS; i++) {
        ob_cached_plan *slot = &cache->slots[i];
        if (!slot->valid)
            return slot;
        if (slot->used < victim->used)
            victim = slot;
    }
    return victim;
}

void ob_plan_cache_touch(ob_plan_cache *cache, ob_cached_plan *slot)
{
    slot->used = ++cache->clock;
}

void ob_plan_cache_invalidate(ob_plan_cache *cache)
{
    for (int i = 0; i < OB_PLAN_CACHE_SLOTS; i++)
        cache->slots[i].valid = 0;
}

void ob_plan_cache_free(ob_plan_cache *cache)
{
    for (int i = 0; i < OB_PLAN_CACHE_SLOTS; i++) {
        ob_plan_free(&cache->slots[i].plan);
        free(cache->slots[i].keys);
    }
    memset(cache, 0, sizeof(*cache));
}
