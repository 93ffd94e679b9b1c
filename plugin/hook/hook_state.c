#include "plugin/hook/hook_state.h"

#include <stdatomic.h>

#include "plugin/hook/hook_runtime.h"
#include "ompbatch.h"

static atomic_int flags[OB_HOOK_FLAG_COUNT];

int ob_hook_state_set(ob_hook_flag flag, int value)
{
    return atomic_exchange(&flags[flag], value);
}

static int get(ob_hook_flag flag)
{
    return atomic_load_explicit(&flags[flag], memory_order_relaxed);
}

int ob_hook_switched_off(void)
{
    return !get(OB_HOOK_ENABLED) && get(OB_HOOK_RUNTIME_KNOWN) && !get(OB_HOOK_UNIFIED_MEMORY);
}

int ob_hook_active(void)
{
    return get(OB_HOOK_ENABLED) && get(OB_HOOK_RUNTIME_KNOWN) && !get(OB_HOOK_UNIFIED_MEMORY);
}

void ob_hook_state(int *state, int *runtime_major)
{
    if (!get(OB_HOOK_LOADED)) {
        *state = OMPBATCH_HOOK_NOT_LOADED;
        *runtime_major = 0;
        return;
    }
    *state = ob_hook_active() ? OMPBATCH_HOOK_ACTIVE : OMPBATCH_HOOK_PASS_THROUGH;
    *runtime_major = ob_hook_runtime_get()->major;
}
