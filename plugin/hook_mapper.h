/* What a `declare mapper` maps: the runtime expands a mapper by calling the compiler's mapper
 * function, which pushes its components one by one through __tgt_push_mapper_component (the
 * hook interposes it). While a construct with mapper items is forwarded, the components this
 * thread pushes are recorded, so that the mirror afterwards drops only what they may have
 * changed, instead of the device's whole mirror. */
#ifndef OMPBATCH_PLUGIN_HOOK_MAPPER_H
#define OMPBATCH_PLUGIN_HOOK_MAPPER_H

#include <stdint.h>

/* Starts recording this thread's components (one forwarded construct or region). */
void ob_mapper_record_start(void);

/* Records one component, when this thread is recording (called for every push). */
void ob_mapper_record(void *base, void *begin, int64_t size, int64_t type);

/* Stops recording and drops from device's mirror what the recorded components may have
 * changed: with `all`, every component's range (zero-size ones with their base, as the runtime
 * looks them up) and the pointers they attach; otherwise only the attached pointers (a target
 * region's maps are balanced: only attachments outlive it). Returns 0, or -1 when the record
 * is incomplete (out of memory): the caller then drops the device's whole mirror. The caller
 * holds what guards the mirror. */
int ob_mapper_record_finish(int device, int all);

#endif
