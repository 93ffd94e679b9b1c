/* The hook's picture of libomptarget's mapping tables: the entries it saw created, with their
 * reference counts as libomptarget keeps them, and whether a pointer may be attached inside
 * them. It only ever holds entries the hook can account for; when a call may have changed an
 * entry in a way the hook cannot follow, the entry is dropped and the hook forwards whatever
 * touches that memory from then on.
 *
 * Locking: callers serialise. Data constructs hold the hook's construct lock exclusively;
 * target regions (which only mark or drop) hold it shared and take ob_mirror_kernel_lock. */
#ifndef OMPBATCH_PLUGIN_HOOK_MIRROR_H
#define OMPBATCH_PLUGIN_HOOK_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#define OB_MIRROR_MAX_DEVICES 64
#define OB_COUNT_INF UINT64_MAX

typedef struct ob_mirror_entry {
    uintptr_t begin;     /* host range [begin, end) */
    uintptr_t end;
    uintptr_t device;    /* device address of begin */
    uint64_t dyn;        /* dynamic reference count */
    uint64_t hold;       /* ompx_hold reference count */
    uintptr_t base;      /* the base pointer libomptarget keeps with it, where base_known */
    int base_known;
    uint32_t updates;    /* target updates that copied inside it (hook_register.h) */
    uint64_t excess_ns;  /* what those copies took beyond registered copies' estimate */
    int pinned;          /* OB_PIN_*: whether its host range is registered with the driver */
} ob_mirror_entry;

/* An entry's host range and the driver (hook_register.h). */
enum { OB_PIN_NONE = 0, OB_PIN_REGISTERED, OB_PIN_REFUSED };

typedef enum ob_mirror_found {
    OB_MIRROR_ABSENT = 0,   /* no entry overlaps the range */
    OB_MIRROR_INSIDE,       /* the range lies inside one entry */
    OB_MIRROR_PARTIAL       /* entries overlap the range but none contains it */
} ob_mirror_found;

/* Looks [begin, end) up on device (end > begin); with OB_MIRROR_INSIDE, *entry points at the
 * entry until the next change to the mirror. */
ob_mirror_found ob_mirror_find(int device, uintptr_t begin, uintptr_t end,
                               ob_mirror_entry **entry);

/* Adds an entry; returns 0, or -1 when out of memory or the device number is not tracked (the
 * hook then simply knows less). Entries overlapping it are dropped first. */
int ob_mirror_insert(int device, const ob_mirror_entry *entry);

/* Drops every entry overlapping [begin, end). */
void ob_mirror_drop_range(int device, uintptr_t begin, uintptr_t end);

/* Drops every entry of device. */
void ob_mirror_drop_device(int device);

/* The entries around ptr: *below the last whose begin is at or before ptr (it may hold ptr),
 * *above the first that begins after it; NULL where there is none. Valid until the next
 * change to the mirror. */
void ob_mirror_neighbours(int device, uintptr_t ptr, ob_mirror_entry **below,
                          ob_mirror_entry **above);

/* Has fn called with each entry whose host range is registered (OB_PIN_REGISTERED) as it
 * leaves the mirror: dropped, replaced by an overlapping insert, or with its device's table.
 * The mapping it stood for is gone, or the hook can no longer follow it. */
void ob_mirror_on_release(void (*fn)(int device, const ob_mirror_entry *entry));

/* Releases (as above) every registered entry of device and marks it OB_PIN_REFUSED, keeping
 * the entries: for when the hook stops seeing the runtime's calls and so could no longer tell
 * when their mappings die. */
void ob_mirror_release_pins(int device);

/* Calls fn with each live entry of device, in order. */
void ob_mirror_each(int device, void (*fn)(void *context, const ob_mirror_entry *entry),
                    void *context);

/* Entries of device, for tests and the verbose log. */
size_t ob_mirror_count(int device);

/* Serialises target regions among themselves while they drop entries. */
void ob_mirror_kernel_lock(void);
void ob_mirror_kernel_unlock(void);

/* Host ranges of `declare target` globals (from __tgt_register_lib): never batched. */
void ob_globals_add(uintptr_t begin, uintptr_t end);
int ob_globals_overlap(uintptr_t begin, uintptr_t end);

#endif
