/* The hook's target update (hook_update.c). */
#ifndef OMPBATCH_PLUGIN_HOOK_UPDATE_H
#define OMPBATCH_PLUGIN_HOOK_UPDATE_H

#include "plugin/hook/hook_forward.h"

/* Copies what the hook can of the update in one batch and forwards the rest; the construct
 * lock is held exclusively. */
void ob_hook_update(const ob_construct *c);

#endif
