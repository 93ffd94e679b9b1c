/* The hook's calls into the runtime: a construct as the program made it, and the re-entry guard.
 * Every call into libomptarget runs with the calling thread's guard raised, so that the
 * runtime's own calls back into the interposed entry points (its legacy and nowait wrappers call
 * the mapper forms) go straight through. */
#ifndef OMPBATCH_PLUGIN_HOOK_FORWARD_H
#define OMPBATCH_PLUGIN_HOOK_FORWARD_H

#include "plugin/hook/omp_abi.h"

typedef struct ob_construct {
    const char *what;               /* "update", "begin", "end": for the log */
    ob_ident *loc;
    int64_t device_id;              /* as the program passed it (the runtime gets it back) */
    int device;                     /* the OpenMP device it resolves to */
    ob_map_args args;               /* the program's arguments */
    ob_tgt_data_fn blocking;        /* the runtime's entry point for the construct */
    ob_tgt_data_nowait_fn nowait;   /* its nowait form when the program called that, or NULL */
    int32_t dep_num;                /* the nowait form's dependency arguments, passed back */
    void *dep_list;                 /* untouched (clang 16 leaves them undefined) */
    int32_t noalias_dep_num;
    void *noalias_dep_list;
    int region;                     /* the begin or end half of a split target region */
} ob_construct;

/* Raises and lowers the calling thread's re-entry guard around a call into the runtime. */
void ob_hook_runtime_enter(void);
void ob_hook_runtime_leave(void);
/* Whether the calling thread is inside a call into the runtime. */
int ob_hook_in_runtime(void);

/* Calls the construct's entry point with args, untimed: for constructs the hook does not look
 * into. */
void ob_hook_call_runtime(const ob_construct *c, const ob_map_args *args, int whole);

/* Calls the construct's entry point with args (the calls run with the re-entry guard raised,
 * timed as the runtime's phase). `whole` says args are the program's own, unchanged: a nowait
 * construct then stays nowait. */
void ob_hook_forward(const ob_construct *c, const ob_map_args *args, int whole);
/* The runtime's blocking target update, for copies the hook hands back to it. */
void ob_hook_forward_update(const ob_construct *c, const ob_map_args *args);

#endif
