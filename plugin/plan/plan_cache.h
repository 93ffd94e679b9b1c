/* Plans a batch built for earlier sets of copies, kept so that a submit coming back to one of
 * them reuses it instead of planning again: one thread's hook batch serves every construct of
 * a loop in turn (a halo's columns from and to, a kernel's checks between them, the 64
 * updates of a time step), and a plan of a thousand strided pieces costs tens of microseconds
 * to build, one of 16 pieces a few.
 *
 * Two classes of slots, each given up least recently used first: a few for large plans,
 * which hold much memory each, and many for small ones (fewer than OB_PLAN_CACHE_SMALL_BELOW
 * copies), so that a loop of many small constructs finds each of them again. A plan is looked
 * for by the hash of its copies' keys, kept beside the slots in an array of its own, first in
 * the slot found after the last one found the time before: a loop comes back to its plans in
 * the same order, and a lookup then costs one comparison instead of a pass over the hashes.
 *
 * The small class is sized for a loop whose constructs alternate between two sets of device
 * addresses: libomptarget's memory manager hands freed blocks of up to 8 KiB out again oldest
 * first, and an exit frees an array's items in reverse order, so a time step's enter data of
 * 16 arrays gets them back permuted, and the same permutation again every other step. 64
 * enters and 64 exits a step are then 256 plans; with 128 slots none was ever found (shape e
 * of hook_bench planned 4251 of its 4608 batches on the GPU, 2 us a construct). */
#ifndef OMPBATCH_PLUGIN_PLAN_CACHE_H
#define OMPBATCH_PLUGIN_PLAN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/plan/copy.h"
#include "plugin/plan/plan.h"

#define OB_PLAN_CACHE_LARGE_SLOTS 8
#define OB_PLAN_CACHE_SMALL_SLOTS 512
#define OB_PLAN_CACHE_SLOTS (OB_PLAN_CACHE_LARGE_SLOTS + OB_PLAN_CACHE_SMALL_SLOTS)
/* Plans of fewer copies are small (a construct updating two members of each of 16 structs
 * makes 32: planned anew, 4-6 us of its 15 under host offload); two or three copies are
 * planned about as fast as they are looked up and kept (a construct of two items, 0.25 us on
 * the build machine). */
#define OB_PLAN_CACHE_SMALL_BELOW 64
#define OB_PLAN_CACHE_MIN_COPIES 4
/* After this many small plans in a row were not found, only every OB_PLAN_CACHE_SPARSE_KEEP-th
 * is kept until one is found again: a program whose small constructs never come back (new
 * memory every time, or more of them than slots) would otherwise pay for keeping each plan,
 * and plan the next one into the cold arrays of the slot it gave up. Twice the slots: a loop
 * that fills every slot in its first pass has them all kept. */
#define OB_PLAN_CACHE_GIVE_UP (2 * OB_PLAN_CACHE_SMALL_SLOTS)
#define OB_PLAN_CACHE_SPARSE_KEEP 16
#define OB_PLAN_CACHE_MAX_COPIES 65536

typedef struct ob_cached_plan {
    ob_plan plan;
    ob_copy_key *keys;     /* the copies the plan was built from */
    size_t count;
    size_t capacity;       /* of keys */
    uint64_t hash;         /* ob_plan_keys_hash of keys[0, count) */
    unsigned long config;  /* the planning generation when it was built (batch_plan.c: the
                              configuration's reading and the library's host registrations) */
    int valid;             /* a plan of keys[0, count) nothing has made stale */
} ob_cached_plan;

typedef struct ob_plan_cache {
    ob_cached_plan slots[OB_PLAN_CACHE_SLOTS]; /* the large class first */
    unsigned long small_misses; /* small plans looked for and not found since one was */
    /* Of each slot as last placed: its plan's hash (0 when not valid) and when it was used,
     * side by side so that a search reads little memory. */
    uint64_t hashes[OB_PLAN_CACHE_SLOTS];
    unsigned long used[OB_PLAN_CACHE_SLOTS];
    unsigned long clock;
    /* The slot found after each slot the last time (a guess, checked like any slot), and the
     * slot found last. */
    uint16_t found_after[OB_PLAN_CACHE_SLOTS];
    uint16_t last_found;
} ob_plan_cache;

/* A batch's cache, allocated when it first keeps a plan (*cache stays NULL until then, and
 * when the allocation fails: the batch then keeps no plans). */
ob_plan_cache *ob_plan_cache_get(ob_plan_cache **cache);

/* The hash of a set of copies (never 0). */
uint64_t ob_plan_keys_hash(const ob_copy_key *keys, size_t count);

/* Whether a plan of `count` copies is worth looking for. */
int ob_plan_cache_fits(size_t count);

/* Whether the batch's plan of `count` copies, about to be replaced, is worth a slot: it fits,
 * and small plans have been found lately (or it is a sparse one's turn). cache may be NULL. */
int ob_plan_cache_worth_keeping(const ob_plan_cache *cache, size_t count);

/* The slot holding a valid plan of exactly keys[0, count) (whose hash is `hash`) built under
 * `config`, or NULL (always with a NULL cache). */
ob_cached_plan *ob_plan_cache_find(ob_plan_cache *cache, const ob_copy_key *keys, size_t count,
                                   uint64_t hash, unsigned long config);

/* The slot a plan of `count` copies being kept goes to: an empty or stale one of its class,
 * else the class's least recently used. Its contents are the caller's to overwrite (their
 * arrays are reused). */
ob_cached_plan *ob_plan_cache_victim(ob_plan_cache *cache, size_t count);

/* Whether a plan of `count` copies may stay valid in the slot (the slot is of its class). */
int ob_plan_cache_slot_takes(const ob_plan_cache *cache, const ob_cached_plan *slot,
                             size_t count);

/* After the caller put a plan (valid or not) into the slot, or found it there: marks it just
 * used, and frees the arrays of a small slot sized for a large plan, so that the small slots
 * hold little memory whatever passed through them (the slot is then empty). */
void ob_plan_cache_placed(ob_plan_cache *cache, ob_cached_plan *slot);

/* Every kept plan becomes stale: the memory they were planned for may be gone. cache may be
 * NULL. */
void ob_plan_cache_invalidate(ob_plan_cache *cache);

/* Frees the cache and its plans; *cache becomes NULL. */
void ob_plan_cache_free(ob_plan_cache **cache);

#endif
