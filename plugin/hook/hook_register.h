/* Registration of long-lived mapped host ranges with the driver (OMPBATCH_REGISTER_MB): a
 * mapped range the program updates again and again is registered (page-locked) while it stays
 * mapped, so that its copies go straight between its pages and the device instead of through
 * pinned staging, and unregistered when the mapping dies. Off unless the variable is set:
 * registering memory the program later frees while still mapped, or registers itself, changes
 * what the program sees (docs/configuration.md).
 *
 * When: rent or buy. Each update of a range pays its copies' time; a registration costs about
 * what register_probe measured (benchmarks/probes), and afterwards its copies would take about
 * the registered pace. The range is registered once the time its updates took beyond that pace
 * reaches the registration's cost: never more than about twice the better choice's time, and
 * on a busy host, where staged copies are slow, after two or three updates (a 64 MiB range on an
 * idle H100 host, where the staging pipeline is nearly as fast, after about twenty). */
#ifndef OMPBATCH_PLUGIN_HOOK_REGISTER_H
#define OMPBATCH_PLUGIN_HOOK_REGISTER_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/hook/hook_mirror.h"

/* Mapped ranges smaller than this are never registered: below it a registration and its
 * undoing take more than many staged updates save. */
#define OB_REGISTER_MIN_BYTES ((size_t)1 << 20)

/* Whether OMPBATCH_REGISTER_MB allows registrations at all. */
int ob_hook_register_wanted(void);

/* Before a target update's copies, for each contiguous item inside `entry` of OpenMP device
 * `device`: registers the entry's host range when its updates have earned it (above) and the
 * cap allows. A range the driver or the cap refused is not tried again. Called under the
 * construct lock. */
void ob_hook_register_note_update(int device, ob_mirror_entry *entry);

/* After the update's copies: `ns` of their time went to `bytes` of the entry. */
void ob_hook_register_note_time(ob_mirror_entry *entry, size_t bytes, uint64_t ns);

/* What registering and unregistering a range of `bytes` is reckoned to cost, and what a copy
 * of `bytes` from or to a registered range is reckoned to take (ns). */
uint64_t ob_hook_register_cost_ns(size_t bytes);
uint64_t ob_hook_registered_copy_ns(size_t bytes);

/* Undoes every registration, keeping the entries (never registered again): the hook is going
 * from active to pass-through, after which it cannot see the mappings die. Called with the
 * construct lock held exclusively. */
void ob_hook_register_release_all(void);

/* Bytes registered now, for tests and the verbose log. */
size_t ob_hook_registered_bytes(void);

#endif
