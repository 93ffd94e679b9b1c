/* What the hook does with one data construct: decide per map item whether the hook makes its
 * copy or the runtime does, keep the mapping mirror in step, and forward the rest. */
#ifndef OMPBATCH_PLUGIN_HOOK_CONSTRUCT_H
#define OMPBATCH_PLUGIN_HOOK_CONSTRUCT_H

#include "omp_abi.h"

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

/* Call the runtime (omp_hook.c; the calls run with the hook's re-entry guard set). `whole`
 * says args are the program's own, unchanged: a nowait construct then stays nowait. */
void ob_hook_forward(const ob_construct *c, const ob_map_args *args, int whole);
/* The runtime's blocking target update, for copies the hook hands back to it. */
void ob_hook_forward_update(const ob_construct *c, const ob_map_args *args);

void ob_hook_update(const ob_construct *c);
void ob_hook_begin(const ob_construct *c);
void ob_hook_end(const ob_construct *c);

/* What a forwarded target region's maps may change in the mirror: drops the entries its
 * attachments land in. Returns 1 when the region has mapper items: the caller then records
 * their components while it forwards the region (hook_mapper.h) and calls
 * ob_hook_kernel_mappers_done after. */
int ob_hook_kernel_maps(int device, const ob_kernel_args *args);
void ob_hook_kernel_mappers_done(int device);

#endif
