/* The hook's data begin (hook_begin.c). */
#ifndef OMPBATCH_PLUGIN_HOOK_BEGIN_H
#define OMPBATCH_PLUGIN_HOOK_BEGIN_H

#include "plugin/hook/hook_forward.h"

/* Forwards the begin with `to` taken off the items it creates that the hook copies, then
 * copies them and learns the new entries; the construct lock is held exclusively. */
void ob_hook_begin(const ob_construct *c);

#endif
