/* What the hook's data constructs share (hook_update.c, hook_begin.c, hook_end.c decide per
 * map item whether the hook makes its copy or the runtime does), and what a target region the
 * hook forwards may change in the mirror. */
#ifndef OMPBATCH_PLUGIN_HOOK_CONSTRUCT_H
#define OMPBATCH_PLUGIN_HOOK_CONSTRUCT_H

#include <stdint.h>

#include "plugin/hook/hook_forward.h"
#include "plugin/hook/hook_items.h"
#include "plugin/hook/hook_mirror.h"
#include "plugin/hook/omp_abi.h"

/* Allocates the scratch and describes the construct's items. When that fails, or when
 * `mappers_whole` and the construct has a mapper, forwards the construct whole (what it
 * touches leaves the mirror) and returns -1. */
int ob_hook_prepare(const ob_construct *c, ob_hook_scratch *s, int mappers_whole);

/* The mirrored entry that holds the item whole, or NULL with the item's reason set (partly
 * mapped, or not a mapping the hook knows). */
ob_mirror_entry *ob_hook_entry_holding(const ob_construct *c, ob_hook_item *it);

/* The range an item is looked up by in the mirror: a zero-size one by its byte. */
uintptr_t ob_hook_lookup_end(const ob_hook_item *it);

/* Whether a zero-size item at ptr may reach `entry`, one of the mirrored entries on either
 * side of it, by libomptarget's lookup. */
int ob_hook_zero_size_reaches(int device, uintptr_t ptr, const ob_mirror_entry *entry);

/* Whether zero-size item i lies inside a mirrored entry (*entry), which is then the only one
 * it reaches. */
int ob_hook_zero_size_inside(const ob_construct *c, int32_t i, ob_mirror_entry **entry);

/* Sets the base pointer libomptarget keeps with the entry item i creates. */
void ob_hook_runtime_base(const ob_map_args *a, int32_t i, ob_mirror_entry *entry);

/* The ranges item i may change in ways the mirror does not follow leave it and become
 * foreign (hook_foreign.h). */
void ob_hook_drop_touched(int device, const ob_map_args *a, int32_t i);

/* The entries the begin's attachments (the pointers of its pointer-based items) land in leave
 * the mirror. */
void ob_hook_drop_attached(int device, const ob_map_args *a, const ob_hook_item *items);

/* Copies item i's argument into position n of a compacted list, with map type `type`. */
void ob_hook_compact_item(const ob_map_args *a, int32_t i, ob_map_args *out, int32_t n,
                          int64_t type);

/* Has the runtime make the `to` copies of the items `selected` picks (copies the hook meant to
 * make but could not) with a blocking target update. */
void ob_hook_give_back_to_copies(const ob_construct *c, ob_hook_scratch *s,
                                 const ob_hook_item *items, int32_t count,
                                 int (*selected)(const ob_hook_item *));

/* What a forwarded target region's maps may change in the mirror: drops the entries its
 * attachments land in. Returns 1 when the region has mapper items: the caller then records
 * their components while it forwards the region (hook_mapper.h) and calls
 * ob_hook_kernel_mappers_done after. */
int ob_hook_kernel_maps(int device, const ob_kernel_args *args);
void ob_hook_kernel_mappers_done(int device);

/* What a begin forwarded while the hook was switched off may have mapped or changed: the
 * items' ranges leave the mirror and become foreign (hook_foreign.h). The construct lock is
 * held exclusively. */
void ob_hook_forget_touched(int device, const ob_map_args *args);

#endif
