/* Where libomptarget may hold entries the mirror does not know: the ranges of items the hook
 * forwarded to a begin or a mapper, of associations, of entries dropped from the mirror while
 * the runtime kept them, of nowait regions, and when the hook is switched back on, the
 * mirror's entries and the items of the begins it forwarded while off. A target region's item the
 * mirror does not hold is only taken for absent when the runtime has nothing at its ends and
 * no foreign range meets it: an entry strictly inside the item, which the one-byte public
 * look-ups cannot see, would make a split region fail in its begin half with the data
 * construct's abort, not the region's.
 *
 * A range stops being foreign when the runtime is known to hold nothing there but what the
 * mirror has: where the mirror takes in an entry the runtime made (the runtime's entries are
 * disjoint), and where a region the hook forwarded mapped an item and nothing is left at its
 * ends after it (the runtime refuses an item enclosing an entry, so there was none inside).
 *
 * Locking: as the mirror's (hook_mirror.h). */
#ifndef OMPBATCH_PLUGIN_HOOK_FOREIGN_H
#define OMPBATCH_PLUGIN_HOOK_FOREIGN_H

#include <stdint.h>

#include "plugin/hook/hook_mirror.h"

/* [begin, end) may hold entries of the runtime's the mirror does not. A range that cannot be
 * recorded makes the whole device foreign. */
void ob_foreign_add(int device, uintptr_t begin, uintptr_t end);

/* Every range of the device is foreign. */
void ob_foreign_add_device(int device);

/* The runtime holds nothing in [begin, end) that the mirror does not know. */
void ob_foreign_clear(int device, uintptr_t begin, uintptr_t end);

/* Whether [begin, end) meets a foreign range. */
int ob_foreign_overlaps(int device, uintptr_t begin, uintptr_t end);

/* What the hook calls where it loses track or learns (the mirror's change and the foreign
 * ranges' together): drops [begin, end) from the mirror and makes it foreign; drops every
 * entry of the device and makes it all foreign; takes in an entry the runtime made (returns
 * ob_mirror_insert's result), its range no longer foreign. */
void ob_foreign_forget_range(int device, uintptr_t begin, uintptr_t end);
void ob_foreign_forget_device(int device);
int ob_foreign_learn_entry(int device, const ob_mirror_entry *entry);
/* Drops every entry of the device, each range made foreign (the runtime may still hold it). */
void ob_foreign_forget_mirror(int device);

/* A nowait region was forwarded: its entries outlive the call for as long as it runs, so from
 * now on no range stops being foreign after a region (ob_foreign_async_seen). */
void ob_foreign_note_async(void);
int ob_foreign_async_seen(void);

/* Forgets every foreign range (tests starting over). */
void ob_foreign_reset(int device);

#endif
