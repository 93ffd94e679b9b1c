#include "plugin/plan/plan_cache.h"

#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"

/* Arrays of more copies than this in a small slot are freed when a plan is put there. */
#define OB_PLAN_CACHE_SMALL_ARRAYS (2 * OB_PLAN_CACHE_SMALL_BELOW)

static int is_small(size_t count)
{
    return count < OB_PLAN_CACHE_SMALL_BELOW;
}

/* The slots of the class of plans of `count` copies: [*first, *end). */
static void class_of(size_t count, size_t *first, size_t *end)
{
    *first = is_small(count) ? OB_PLAN_CACHE_LARGE_SLOTS : 0;
    *end = is_small(count) ? OB_PLAN_CACHE_SLOTS : OB_PLAN_CACHE_LARGE_SLOTS;
}

static uint64_t mix_key(uint64_t h, const ob_copy_key *k)
{
    uint64_t words[4] = {k->dst, k->src, k->bytes,
                         k->map_type ^ ((uint64_t)k->dst_side << 56) ^
                             ((uint64_t)k->src_side << 48) ^ ((uint64_t)k->rect << 16)};
    for (int w = 0; w < 4; w++) {
        h ^= words[w];
        h *= 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    return h;
}

/* Large sets are sampled (their first and last 64 keys and every 64th between): a hash only
 * narrows the search, the keys themselves are compared, and hashing 65 536 keys would cost as
 * much as the comparison it is there to spare. */
#define OB_HASH_EVERY_KEY 128

uint64_t ob_plan_keys_hash(const ob_copy_key *keys, size_t count)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ count;
    size_t edge = OB_HASH_EVERY_KEY / 2;
    if (count <= OB_HASH_EVERY_KEY) {
        for (size_t i = 0; i < count; i++)
            h = mix_key(h, &keys[i]);
    } else {
        for (size_t i = 0; i < edge; i++)
            h = mix_key(h, &keys[i]);
        for (size_t i = edge; i < count - edge; i += 64)
            h = mix_key(h, &keys[i]);
        for (size_t i = count - edge; i < count; i++)
            h = mix_key(h, &keys[i]);
    }
    return h != 0 ? h : 1;
}

int ob_plan_cache_fits(size_t count)
{
    return count >= OB_PLAN_CACHE_MIN_COPIES && count <= OB_PLAN_CACHE_MAX_COPIES;
}

ob_plan_cache *ob_plan_cache_get(ob_plan_cache **cache)
{
    /* 119 KiB: a batch that never keeps a plan (and the structs kept of destroyed batches)
     * holds none of it. */
    if (*cache == NULL)
        *cache = ob_calloc(1, sizeof(**cache));
    return *cache;
}

int ob_plan_cache_worth_keeping(const ob_plan_cache *cache, size_t count)
{
    if (!ob_plan_cache_fits(count))
        return 0;
    return cache == NULL || !is_small(count) || cache->small_misses < OB_PLAN_CACHE_GIVE_UP ||
           cache->small_misses % OB_PLAN_CACHE_SPARSE_KEEP == 0;
}

_Static_assert(OB_PLAN_CACHE_SLOTS <= UINT16_MAX, "slot numbers fit found_after");

/* Whether slot i holds a valid plan of exactly keys[0, count) built under config. */
static int holds(const ob_plan_cache *cache, size_t i, const ob_copy_key *keys, size_t count,
                 uint64_t hash, unsigned long config)
{
    const ob_cached_plan *slot = &cache->slots[i];
    return cache->hashes[i] == hash && slot->valid && slot->hash == hash &&
           slot->count == count && slot->config == config &&
           memcmp(slot->keys, keys, count * sizeof(*keys)) == 0;
}

ob_cached_plan *ob_plan_cache_find(ob_plan_cache *cache, const ob_copy_key *keys, size_t count,
                                   uint64_t hash, unsigned long config)
{
    if (cache == NULL)
        return NULL;
    size_t first, end;
    class_of(count, &first, &end);
    size_t found = cache->found_after[cache->last_found];
    if (found < first || found >= end || !holds(cache, found, keys, count, hash, config)) {
        for (found = first; found < end; found++)
            if (holds(cache, found, keys, count, hash, config))
                break;
    }
    if (found == end) {
        if (is_small(count))
            cache->small_misses++;
        return NULL;
    }
    if (is_small(count))
        cache->small_misses = 0;
    cache->found_after[cache->last_found] = (uint16_t)found;
    cache->last_found = (uint16_t)found;
    return &cache->slots[found];
}

ob_cached_plan *ob_plan_cache_victim(ob_plan_cache *cache, size_t count)
{
    size_t first, end;
    class_of(count, &first, &end);
    size_t victim = first;
    for (size_t i = first; i < end; i++) {
        if (cache->hashes[i] == 0 || !cache->slots[i].valid)
            return &cache->slots[i];
        if (cache->used[i] < cache->used[victim])
            victim = i;
    }
    return &cache->slots[victim];
}

int ob_plan_cache_slot_takes(const ob_plan_cache *cache, const ob_cached_plan *slot,
                             size_t count)
{
    size_t first, end, i = (size_t)(slot - cache->slots);
    class_of(count, &first, &end);
    return ob_plan_cache_fits(count) && i >= first && i < end;
}

void ob_plan_cache_placed(ob_plan_cache *cache, ob_cached_plan *slot)
{
    size_t i = (size_t)(slot - cache->slots);
    if (i >= OB_PLAN_CACHE_LARGE_SLOTS && (slot->plan.capacity > OB_PLAN_CACHE_SMALL_ARRAYS ||
                                           slot->capacity > OB_PLAN_CACHE_SMALL_ARRAYS)) {
        ob_plan_free(&slot->plan);
        free(slot->keys);
        memset(slot, 0, sizeof(*slot));
    }
    cache->used[i] = ++cache->clock;
    cache->hashes[i] = slot->valid ? slot->hash : 0;
}

void ob_plan_cache_invalidate(ob_plan_cache *cache)
{
    for (int i = 0; cache != NULL && i < OB_PLAN_CACHE_SLOTS; i++) {
        cache->slots[i].valid = 0;
        cache->hashes[i] = 0;
    }
}

void ob_plan_cache_free(ob_plan_cache **cache)
{
    for (int i = 0; *cache != NULL && i < OB_PLAN_CACHE_SLOTS; i++) {
        ob_plan_free(&(*cache)->slots[i].plan);
        free((*cache)->slots[i].keys);
    }
    free(*cache);
    *cache = NULL;
}
