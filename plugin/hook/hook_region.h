/* Target regions the hook does more with than forward: split into data begin + kernel + data
 * end (its halves batch the copies), or given their mapped arrays as device addresses. */
#ifndef OMPBATCH_PLUGIN_HOOK_REGION_H
#define OMPBATCH_PLUGIN_HOOK_REGION_H

#include "plugin/hook/omp_abi.h"

/* Whether a blocking target region is better done as data begin (its arrays as they are) +
 * the kernel (TO, FROM and ALWAYS taken off its mapped items) + data end (its arrays as they
 * are): libomptarget 16's own target() is that sequence, so the results are the same, and
 * the begin and end halves batch what they can. 1 when the hook would then make two copies
 * or more to the device or one from it, and every mapped item is one whose begin cannot fail
 * differently (docs/hook.md, "Target regions"); 0 to forward the region as it is. Sets
 * *all_mirrored to 1 when it found every mapped item inside an entry the mirror holds (the
 * region then has nothing for ob_hook_region_learn), else to 0. Callers hold the construct
 * lock (shared is enough). */
int ob_hook_region_splittable(int device, const ob_kernel_args *args, int *all_mirrored);

/* The map types of a split region's kernel: types[i] is args' with TO, FROM and ALWAYS
 * cleared on every mapped item (not PRIVATE or LITERAL: PRIVATE|TO is a firstprivate). */
void ob_hook_region_kernel_types(const ob_kernel_args *args, int64_t *types);

/* A blocking region's kernel arguments with each mapped item as the device address the runtime
 * would look up for it, passed as a LITERAL argument (what is_device_ptr passes), so that the
 * runtime maps, counts and looks up nothing: libomptarget's target() skips LITERAL items in its
 * data begin and end and hands their base to the kernel as it is. Only when every mapped item
 * is a kernel parameter lying in an entry the mirror holds, present, with no attachment,
 * member, mapper or strided layout, and asks for no copy -- its reference counts then come
 * back to where they were, and nothing else would happen to it. With copies_done (the kernel
 * of a split region, whose halves make the copies) TO, FROM and ALWAYS are no reason to leave
 * an item to the runtime. Fills bases[] and types[] (num_args each; PRIVATE and LITERAL items
 * as they were) and returns 1, or returns 0 to leave the region's arguments as they are.
 * Callers hold the construct lock, shared at least, until the kernel has returned: data
 * constructs, which alone can delete entries, wait for it. */
int ob_hook_region_direct_args(int device, const ob_kernel_args *args, int copies_done,
                               void **bases, int64_t *types);

/* After a blocking region the hook forwarded and the runtime ran (it succeeded): an item that
 * meets a foreign range (hook_foreign.h), is not in the mirror, and has nothing of the
 * runtime's at either end now was mapped afresh and unmapped by the region, which the runtime
 * refuses if an entry lay inside it; its range stops being foreign. Skipped once a nowait
 * region was forwarded. Callers hold the construct lock, shared at least. */
void ob_hook_region_learn(int device, const ob_kernel_args *args);

#endif
