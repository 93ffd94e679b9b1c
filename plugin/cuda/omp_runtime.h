/* The OpenMP runtime functions the library calls, looked up at run time so that the library
 * needs no link against libomp/libomptarget and works in processes without them. */
#ifndef OMPBATCH_PLUGIN_OMP_RUNTIME_H
#define OMPBATCH_PLUGIN_OMP_RUNTIME_H

#include <stddef.h>

typedef struct ob_omp_runtime {
    int available;  /* omp_get_mapped_ptr, omp_get_initial_device, omp_get_num_devices found */
    void *(*get_mapped_ptr)(const void *ptr, int device_num);
    int (*get_initial_device)(void);
    int (*get_num_devices)(void);
} ob_omp_runtime;

/* The runtime's functions, looked up in the process (RTLD_DEFAULT) on first use. */
const ob_omp_runtime *ob_omp_runtime_get(void);

/* Looks the functions up again if they were missing: the runtime may have been loaded with
 * dlopen since. dlsym is slow, so only paths about to fail for want of a runtime call this. */
const ob_omp_runtime *ob_omp_runtime_refresh(void);

/* Replaces the runtime for tests (NULL restores the real look-up). */
void ob_omp_runtime_set_for_testing(const ob_omp_runtime *runtime);

#endif
