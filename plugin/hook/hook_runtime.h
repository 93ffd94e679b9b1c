/* The real libomptarget behind the hook: its entry points (the definitions the hook's own
 * definitions hide, found with dlvsym(RTLD_NEXT, ..., "VERS1.0")), its version, and the
 * OpenMP query functions the hook calls. */
#ifndef OMPBATCH_PLUGIN_HOOK_RUNTIME_H
#define OMPBATCH_PLUGIN_HOOK_RUNTIME_H

#include "plugin/hook/hook_versions.h"
#include "plugin/hook/omp_abi.h"

typedef struct ob_hook_runtime {
    int complete;             /* every entry point below was found */
    int present;              /* any libomptarget entry point (__tgt_*) was found */
    int major;                /* LLVM major version of libomptarget; 0 if unknown */
    const ob_runtime_version *version; /* its row of the hook's table; NULL: not batched for */
    char path[256];           /* the library the entry points came from */
    char missing[128];        /* first entry point not found, when !complete */
    ob_tgt_data_fn begin;
    ob_tgt_data_fn end;
    ob_tgt_data_fn update;
    ob_tgt_data_nowait_fn begin_nowait;
    ob_tgt_data_nowait_fn end_nowait;
    ob_tgt_data_nowait_fn update_nowait;
    ob_tgt_kernel_fn kernel;
    ob_tgt_register_lib_fn register_lib;
    ob_tgt_register_requires_fn register_requires;
    ob_omp_associate_fn associate_ptr;
    ob_omp_disassociate_fn disassociate_ptr;
    int (*is_present)(const void *ptr, int device_num);
    void *(*get_mapped_ptr)(const void *ptr, int device_num);
    int (*get_num_devices)(void);
    int (*get_default_device)(void);
    /* Optional: without it, a construct with a mapper makes the hook forget the device's
     * whole mirror (hook_mapper.h). */
    void (*push_mapper_component)(void *handle, void *base, void *begin, int64_t size,
                                  int64_t type, void *name);
} ob_hook_runtime;

/* Looks the runtime up on first use (thread-safe) and returns it. Never NULL. */
const ob_hook_runtime *ob_hook_runtime_get(void);

/* The hook's questions to the runtime (omp_target_is_present, omp_get_mapped_ptr), timed as
 * the query phase (OMPBATCH_STATS=1): each takes the runtime's locks. */
int ob_hook_runtime_has(const void *ptr, int device);
void *ob_hook_runtime_mapped(const void *ptr, int device);

#endif
