/* Registration of long-lived mapped host ranges with the driver (OMPBATCH_REGISTER_MB): a
 * mapped range the program updates again and again is registered (page-locked) while it stays
 * mapped, so that its copies go straight between its pages and the device instead of through
 * pinned staging, and unregistered when the mapping dies. Off unless the variable is set:
 * registering memory the program later frees while still mapped, or registers itself, changes
 * what the program sees (docs/configuration.md). */
#ifndef OMPBATCH_PLUGIN_HOOK_REGISTER_H
#define OMPBATCH_PLUGIN_HOOK_REGISTER_H

#include <stddef.h>

#include "plugin/hook/hook_mirror.h"

/* Mapped ranges smaller than this are never registered: below it a registration and its
 * undoing (70-110 us and 40-100 us on an H100's host) take more than many staged updates. */
#define OB_REGISTER_MIN_BYTES ((size_t)1 << 20)
/* A range is registered at this update of it: the ones before show it is long-lived. */
#define OB_REGISTER_AT_UPDATE 3

/* Counts a target update that copies inside `entry` of OpenMP device `device`, and registers
 * the entry's host range when it is large and updated often enough and the cap allows; a
 * range the driver or the cap refused is not tried again. Called under the construct lock,
 * before the update's copies are planned. */
void ob_hook_register_note_update(int device, ob_mirror_entry *entry);

/* Bytes registered now, for tests and the verbose log. */
size_t ob_hook_registered_bytes(void);

#endif
