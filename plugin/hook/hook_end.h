/* The hook's data end (hook_end.c). */
#ifndef OMPBATCH_PLUGIN_HOOK_END_H
#define OMPBATCH_PLUGIN_HOOK_END_H

#include "plugin/hook/hook_forward.h"

/* Copies the `from` items whose last reference the end takes into staging, forwards the end
 * with `from` taken off them (the runtime frees their device memory), then writes them where
 * the runtime would have; the construct lock is held exclusively. */
void ob_hook_end(const ob_construct *c);

#endif
