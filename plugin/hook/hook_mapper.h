/* What a `declare mapper` maps: the runtime expands a mapper by calling the compiler's mapper
 * function, which pushes its components one by one through __tgt_push_mapper_component (the
 * hook interposes it). While a construct with mapper items is forwarded, the components this
 * thread pushes are recorded, so that the mirror afterwards drops only what they may have
 * changed, instead of the device's whole mirror. */
#ifndef OMPBATCH_PLUGIN_HOOK_MAPPER_H
#define OMPBATCH_PLUGIN_HOOK_MAPPER_H

#include <stdint.h>

#include "plugin/hook/omp_abi.h"

/* Starts recording this thread's components (one forwarded construct or region). With
 * probe_device >= 0 (a data begin on that device), each component is also asked about as it is
 * pushed, before the runtime maps it: whether the runtime has anything at its ends yet. */
void ob_mapper_record_start(int probe_device);

/* Records one component, when this thread is recording (called for every push). */
void ob_mapper_record(void *base, void *begin, int64_t size, int64_t type);

/* Stops recording and drops from device's mirror what the recorded components may have
 * changed: with `all`, every component's range (zero-size ones with their base, as the runtime
 * looks them up) and the pointers they attach; otherwise only the attached pointers (a target
 * region's maps are balanced: only attachments outlive it). Returns 0, or -1 when the record
 * is incomplete (out of memory): the caller then drops the device's whole mirror. The caller
 * holds what guards the mirror. */
int ob_mapper_record_finish(int device, int all);

/* After a data begin recorded with probing and finished: the entries its components created
 * that the hook can account for exactly become mirror entries with a count of 1 (the hold
 * count with ompx_hold), so that later updates and exits of them are batched. A component
 * qualifies when it is a range of its own (not a struct member, not a parent of members; the
 * object of a pointer, not its attachment), the runtime had nothing at either end when it was
 * pushed and has the whole range now, and no other component, item of the construct (`args`),
 * global or mirrored entry overlaps it: anything else may have counted it twice. */
void ob_mapper_learn_created(int device, const ob_map_args *args);

#endif
