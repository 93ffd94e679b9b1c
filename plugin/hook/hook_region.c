/* Target regions: whether one is better split into data begin + kernel + data end, and the
 * kernel arguments the runtime gets then, or for any blocking region whose arrays the mirror
 * holds: each mapped array as the device address the runtime would have looked up. The
 * rules follow libomptarget 16's and 19's target() (docs/hook.md, "Target regions"). */
#include "plugin/hook/hook_region.h"

#include <stdint.h>

#include "plugin/core/workers.h"
#include "plugin/hook/hook_foreign.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/hook_runtime.h"

/* One mapped item of a region as ob_hook_region_splittable sees it. */
typedef enum region_item {
    REGION_ITEM_FINE = 0,   /* nothing the hook would batch, nothing that could go wrong */
    REGION_ITEM_NEW_TO,     /* a new entry whose `to` copy the begin half batches */
    REGION_ITEM_NEW_FROM,   /* a new entry whose `from` copy the end half batches */
    REGION_ITEM_NEW_TOFROM,
    REGION_ITEM_FROM,       /* `always, from` on a present entry: the end half batches it */
    REGION_ITEM_UNSAFE,     /* forward the region as it is */
    REGION_ITEM_UNKNOWN     /* not in the mirror: only the runtime can say whether it is new */
} region_item;

/* Items whose begin or end the runtime handles in ways whose failures or side effects the
 * split would word or order differently: their regions are forwarded as they are. A
 * pointer-based item is one: libomptarget's begin gives the entry holding its pointer a
 * reference that its end does not take back, so the split's two begins (its own half and the
 * kernel's) would leave that entry mapped one release longer than the region alone does. */
#define OB_REGION_UNSAFE_BITS                                                                   \
    (OB_MAP_RETURN_PARAM | OB_MAP_NON_CONTIG | OB_MAP_PRESENT | OB_MAP_MEMBER_OF |              \
     OB_MAP_DELETE | OB_MAP_PTR_AND_OBJ)

/* Item i as its map type and the mirror tell it, without a question to the runtime. */
static region_item classify_by_mirror(int device, const ob_kernel_args *k, uint32_t i)
{
    int64_t t = k->arg_types[i];
    if (t & OB_REGION_UNSAFE_BITS)
        return REGION_ITEM_UNSAFE;
    if (k->arg_mappers != NULL && k->arg_mappers[i] != NULL)
        return REGION_ITEM_UNSAFE;
    if (k->arg_sizes[i] <= 0)
        return REGION_ITEM_UNSAFE; /* looked up extended to its base: the runtime's business */
    uintptr_t begin = (uintptr_t)k->arg_ptrs[i];
    uintptr_t end = begin + (uintptr_t)k->arg_sizes[i];
    ob_mirror_entry *entry = NULL;
    switch (ob_mirror_find(device, begin, end, &entry)) {
    case OB_MIRROR_PARTIAL:
        return REGION_ITEM_UNSAFE; /* an explicit extension: the begin half would fail */
    case OB_MIRROR_INSIDE:
        return (t & OB_MAP_FROM) && (t & OB_MAP_ALWAYS) ? REGION_ITEM_FROM : REGION_ITEM_FINE;
    default:
        return REGION_ITEM_UNKNOWN;
    }
}

/* An item the mirror does not hold: one the runtime has (made by a construct the hook
 * forwarded, a global, an associated pointer) may be an extension; absent at both ends, the
 * begin creates it. */
static region_item classify_by_runtime(int device, const ob_kernel_args *k, uint32_t i)
{
    int64_t t = k->arg_types[i];
    uintptr_t begin = (uintptr_t)k->arg_ptrs[i];
    uintptr_t end = begin + (uintptr_t)k->arg_sizes[i];
    if (ob_globals_overlap(begin, end))
        return REGION_ITEM_UNSAFE;
    if (ob_hook_runtime_has((void *)begin, device) ||
        ob_hook_runtime_has((void *)(end - 1), device))
        return REGION_ITEM_UNSAFE;
    /* Nothing at either end, but an entry the hook did not see made may lie inside: the split's
     * begin half would fail as a data construct, not as the region. */
    if (ob_foreign_overlaps(device, begin, end))
        return REGION_ITEM_UNSAFE;
    int to = (t & OB_MAP_TO) != 0, from = (t & OB_MAP_FROM) != 0;
    return to && from ? REGION_ITEM_NEW_TOFROM
           : to       ? REGION_ITEM_NEW_TO
           : from     ? REGION_ITEM_NEW_FROM
                      : REGION_ITEM_FINE;
}

static void count_copies(region_item item, size_t *to, size_t *from)
{
    *to += item == REGION_ITEM_NEW_TO || item == REGION_ITEM_NEW_TOFROM;
    *from += item == REGION_ITEM_NEW_FROM || item == REGION_ITEM_NEW_TOFROM ||
             item == REGION_ITEM_FROM;
}

/* Whether the copies a split would batch pay for its two extra calls into the runtime and its
 * waits: two or more to the device (one batch instead of the runtime's copies one by one), or
 * any from it (the runtime's copy into pageable memory waits inside the driver, which in its
 * blocking-sync context costs tens of microseconds; the hook's goes through pinned staging).
 * Not one copy each way while the host is busy: with every processor taken the hook's own
 * work runs slower and the runtime's waits end sooner, and a region of one 4 KiB tofrom item
 * took 45-48 us split against the runtime's 39-45 (H100 host, 2026-12-06; idle, 43-47
 * against 49-56). */
static int worth_splitting(size_t to, size_t from)
{
    if (to < 2 && from == 1 && ob_host_saturated())
        return 0;
    return to >= 2 || from >= 1;
}

/* The runtime is asked about the items the mirror does not hold (a call each, at both ends)
 * only when they could still make the split pay: on a busy host most regions that come this
 * far, a reduction over present arrays among them, are decided by the mirror alone. */
int ob_hook_region_splittable(int device, const ob_kernel_args *k, int *all_mirrored)
{
    *all_mirrored = 0;
    if (k->num_args == 0 || (k->flags & OB_KERNEL_NOWAIT) || k->arg_base_ptrs == NULL ||
        k->arg_ptrs == NULL || k->arg_sizes == NULL || k->arg_types == NULL)
        return 0;
    /* Most regions map too little to move for a split to pay: a scan of the types answers
     * that without a look-up. */
    size_t to_items = 0, from_items = 0;
    for (uint32_t i = 0; i < k->num_args; i++) {
        int64_t t = k->arg_types[i];
        if (t & (OB_MAP_PRIVATE | OB_MAP_LITERAL))
            continue;
        to_items += (t & OB_MAP_TO) != 0;
        from_items += (t & OB_MAP_FROM) != 0;
    }
    if (!worth_splitting(to_items, from_items))
        return 0;
    size_t to = 0, from = 0, unknown_to = 0, unknown_from = 0;
    int unsafe = 0, worth = 0, unmirrored = 0;
    ob_mirror_kernel_lock();
    for (uint32_t i = 0; i < k->num_args && !unsafe; i++) {
        int64_t t = k->arg_types[i];
        if (t & (OB_MAP_PRIVATE | OB_MAP_LITERAL))
            continue;
        region_item item = classify_by_mirror(device, k, i);
        unsafe = item == REGION_ITEM_UNSAFE;
        unmirrored |= item != REGION_ITEM_FINE && item != REGION_ITEM_FROM;
        if (item == REGION_ITEM_UNKNOWN) {
            unknown_to += (t & OB_MAP_TO) != 0;
            unknown_from += (t & OB_MAP_FROM) != 0;
        } else {
            count_copies(item, &to, &from);
        }
    }
    if (!unsafe && worth_splitting(to + unknown_to, from + unknown_from)) {
        for (uint32_t i = 0; i < k->num_args && !unsafe; i++) {
            if (k->arg_types[i] & (OB_MAP_PRIVATE | OB_MAP_LITERAL) ||
                classify_by_mirror(device, k, i) != REGION_ITEM_UNKNOWN)
                continue;
            region_item item = classify_by_runtime(device, k, i);
            unsafe = item == REGION_ITEM_UNSAFE;
            count_copies(item, &to, &from);
        }
        worth = !unsafe && worth_splitting(to, from);
    }
    ob_mirror_kernel_unlock();
    /* Learning clears foreign ranges the runtime no longer holds after the region. An item
     * inside a mirrored entry now is held by the runtime throughout: its entry is there
     * already, data constructs (which alone remove entries) wait for the region's shared
     * lock, and the region's own maps come back to the counts they started from. */
    *all_mirrored = !unmirrored;
    return worth;
}

void ob_hook_region_kernel_types(const ob_kernel_args *k, int64_t *types)
{
    for (uint32_t i = 0; i < k->num_args; i++) {
        int64_t t = k->arg_types[i];
        types[i] = t & (OB_MAP_PRIVATE | OB_MAP_LITERAL)
                       ? t
                       : t & ~(int64_t)(OB_MAP_TO | OB_MAP_FROM | OB_MAP_ALWAYS);
    }
}

/* Bits of a mapped item that ask the runtime for more than looking its array up: a copy
 * (unless the split's halves make it), a struct member, an attachment, a mapper's
 * components, a return value, a strided item, a deletion. */
#define OB_DIRECT_REFUSED_BITS                                                                  \
    (OB_MAP_RETURN_PARAM | OB_MAP_NON_CONTIG | OB_MAP_MEMBER_OF | OB_MAP_DELETE |              \
     OB_MAP_PTR_AND_OBJ)

/* The device address the runtime passes the kernel for item i (its target() adds the item's
 * base offset to the device address of its begin), or 0 when the item must be left to it. */
static uintptr_t direct_address(int device, const ob_kernel_args *k, uint32_t i,
                                int copies_done)
{
    int64_t t = k->arg_types[i];
    if (!(t & OB_MAP_TARGET_PARAM) || (t & OB_DIRECT_REFUSED_BITS))
        return 0;
    if (!copies_done && (t & OB_MAP_ALWAYS) && (t & (OB_MAP_TO | OB_MAP_FROM)))
        return 0;
    if (k->arg_mappers != NULL && k->arg_mappers[i] != NULL)
        return 0;
    if (k->arg_sizes[i] <= 0)
        return 0;
    uintptr_t begin = (uintptr_t)k->arg_ptrs[i];
    uintptr_t end = begin + (uintptr_t)k->arg_sizes[i];
    if (end < begin)
        return 0;
    ob_mirror_entry *entry = NULL;
    if (ob_mirror_find(device, begin, end, &entry) != OB_MIRROR_INSIDE ||
        (entry->dyn == 0 && entry->hold == 0) || entry->device == 0)
        return 0;
    /* Without ALWAYS a present entry copies nothing either way: the region's own reference
     * counts come back to where they were. */
    uintptr_t device_begin = entry->device + (begin - entry->begin);
    return device_begin + ((uintptr_t)k->arg_base_ptrs[i] - begin);
}

int ob_hook_region_direct_args(int device, const ob_kernel_args *k, int copies_done,
                               void **bases, int64_t *types)
{
    if (k->num_args == 0 || (k->flags & OB_KERNEL_NOWAIT) || k->arg_base_ptrs == NULL ||
        k->arg_ptrs == NULL || k->arg_sizes == NULL || k->arg_types == NULL)
        return 0;
    int direct = 0, refused = 0;
    ob_mirror_kernel_lock();
    for (uint32_t i = 0; i < k->num_args && !refused; i++) {
        int64_t t = k->arg_types[i];
        bases[i] = k->arg_base_ptrs[i];
        types[i] = t;
        if (t & (OB_MAP_PRIVATE | OB_MAP_LITERAL))
            continue;
        uintptr_t address = direct_address(device, k, i, copies_done);
        if (address == 0) {
            refused = 1;
            break;
        }
        bases[i] = (void *)address;
        types[i] = OB_MAP_TARGET_PARAM | OB_MAP_LITERAL | (t & OB_MAP_IMPLICIT);
        direct++;
    }
    ob_mirror_kernel_unlock();
    return !refused && direct > 0;
}

void ob_hook_region_learn(int device, const ob_kernel_args *k)
{
    if (k->num_args == 0 || (k->flags & OB_KERNEL_NOWAIT) || k->arg_ptrs == NULL ||
        k->arg_sizes == NULL || k->arg_types == NULL || ob_foreign_async_seen())
        return;
    ob_mirror_kernel_lock();
    for (uint32_t i = 0; i < k->num_args; i++) {
        int64_t t = k->arg_types[i];
        /* Kernel parameters only: clang 19 ends a region's list with an item of type 0 (the
         * kernel's implicit argument) whose pointer and size it leaves unset. Learning is
         * only a chance taken, so nothing else is looked at. */
        if (!(t & OB_MAP_TARGET_PARAM) || (t & (OB_MAP_PRIVATE | OB_MAP_LITERAL)) ||
            k->arg_sizes[i] <= 0)
            continue;
        uintptr_t begin = (uintptr_t)k->arg_ptrs[i];
        uintptr_t end = begin + (uintptr_t)k->arg_sizes[i];
        if (end <= begin || !ob_foreign_overlaps(device, begin, end) ||
            ob_mirror_find(device, begin, end, NULL) != OB_MIRROR_ABSENT)
            continue;
        if (!ob_hook_runtime_has((void *)begin, device) &&
            !ob_hook_runtime_has((void *)(end - 1), device))
            ob_foreign_clear(device, begin, end);
    }
    ob_mirror_kernel_unlock();
}
