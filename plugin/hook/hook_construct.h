/* What the hook does with one data construct: decide per map item whether the hook makes its
 * copy or the runtime does, keep the mapping mirror in step, and forward the rest. */
#ifndef OMPBATCH_PLUGIN_HOOK_CONSTRUCT_H
#define OMPBATCH_PLUGIN_HOOK_CONSTRUCT_H

#include "plugin/hook/hook_forward.h"
#include "plugin/hook/omp_abi.h"


void ob_hook_update(const ob_construct *c);
void ob_hook_begin(const ob_construct *c);
void ob_hook_end(const ob_construct *c);

/* What a forwarded target region's maps may change in the mirror: drops the entries its
 * attachments land in. Returns 1 when the region has mapper items: the caller then records
 * their components while it forwards the region (hook_mapper.h) and calls
 * ob_hook_kernel_mappers_done after. */
int ob_hook_kernel_maps(int device, const ob_kernel_args *args);

/* What a begin forwarded while the hook was switched off may have mapped or changed: the
 * items' ranges leave the mirror and become foreign (hook_foreign.h). The construct lock is
 * held exclusively. */
void ob_hook_forget_touched(int device, const ob_map_args *args);
void ob_hook_kernel_mappers_done(int device);

#endif
