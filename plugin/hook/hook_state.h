/* The hook's state: whether an entry point has been called, whether batching is wanted,
 * whether the runtime is one the hook knows, whether the program requires unified shared
 * memory. The entry points set it (omp_hook.c); the statistics report it. */
#ifndef OMPBATCH_PLUGIN_HOOK_STATE_H
#define OMPBATCH_PLUGIN_HOOK_STATE_H

typedef enum ob_hook_flag {
    OB_HOOK_LOADED = 0,      /* a hooked entry point has been called */
    OB_HOOK_ENABLED,         /* batching wanted: !OMPBATCH_DISABLE, ompbatch_hook_set_enabled */
    OB_HOOK_RUNTIME_KNOWN,   /* the runtime is complete and one the hook knows */
    OB_HOOK_UNIFIED_MEMORY,  /* requires unified_shared_memory: maps are host memory */
    OB_HOOK_FLAG_COUNT
} ob_hook_flag;

/* Sets a flag; returns its previous value. */
int ob_hook_state_set(ob_hook_flag flag, int value);

/* Whether the hook batches: enabled, over a runtime it knows, without unified memory. */
int ob_hook_active(void);

/* Whether the hook is switched off (ompbatch_hook_set_enabled(0)) over a runtime it knows: it
 * forwards everything, but remembers where begins may have mapped memory, for when it is
 * switched on again (hook_foreign.h). */
int ob_hook_switched_off(void);

/* The public struct's state fields (ompbatch_hook_state, the runtime's LLVM major version). */
void ob_hook_state(int *state, int *runtime_major);

#endif
