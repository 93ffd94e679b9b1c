#include "plugin/hook/hook_forward.h"

#include <stdint.h>

#include "plugin/core/phase_time.h"
#include "plugin/hook/hook_runtime.h"

/* How deep the calling thread is in calls into the runtime; 0 outside them. */
static _Thread_local int depth;

void ob_hook_runtime_enter(void)
{
    depth++;
}

void ob_hook_runtime_leave(void)
{
    depth--;
}

int ob_hook_in_runtime(void)
{
    return depth > 0;
}

void ob_hook_call_runtime(const ob_construct *c, const ob_map_args *a, int whole)
{
    depth++;
    if (whole && c->nowait != NULL)
        c->nowait(c->loc, c->device_id, a->count, a->bases, a->begins, a->sizes, a->types,
                  a->names, a->mappers, c->dep_num, c->dep_list, c->noalias_dep_num,
                  c->noalias_dep_list);
    else
        c->blocking(c->loc, c->device_id, a->count, a->bases, a->begins, a->sizes, a->types,
                    a->names, a->mappers);
    depth--;
}

/* Timed: what the runtime costs a construct the hook took part in. */
void ob_hook_forward(const ob_construct *c, const ob_map_args *a, int whole)
{
    uint64_t started = ob_phase_start();
    ob_hook_call_runtime(c, a, whole);
    ob_phase_end(OB_PHASE_RUNTIME, started);
}

void ob_hook_forward_update(const ob_construct *c, const ob_map_args *a)
{
    uint64_t started = ob_phase_start();
    depth++;
    ob_hook_runtime_get()->update(c->loc, c->device_id, a->count, a->bases, a->begins, a->sizes,
                                  a->types, a->names, a->mappers);
    depth--;
    ob_phase_end(OB_PHASE_RUNTIME, started);
}
