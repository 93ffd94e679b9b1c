/* The library's copy kernels on each CUDA device: its PTX module (kernels.h), loaded once per
 * device into the device's slot (driver.h). */
#ifndef OMPBATCH_PLUGIN_KERNEL_MODULE_H
#define OMPBATCH_PLUGIN_KERNEL_MODULE_H

#include "plugin/cuda/driver.h"

/* The functions of the module (kernels.h). */
typedef struct ob_kernels {
    CUfunction copy;        /* descriptors read from a table */
    CUfunction copy_inline; /* up to OB_INLINE_PIECES descriptors as the parameter */
    CUfunction rect;        /* one rectangle as the parameter */
} ob_kernels;

/* The kernels of CUDA device `ordinal`, whose context is current, loaded on first use. When
 * they cannot be loaded the first call says why at OMPBATCH_VERBOSE=1, and it and every later
 * call fail with OMPBATCH_ERR_UNSUPPORTED; the later calls record and log nothing. */
int ob_kernels_get(const ob_driver *driver, int ordinal, ob_kernels *out);

/* Forgets every device's kernels, so the next use loads them again (tests that inject load
 * failures). */
void ob_kernels_forget_for_testing(void);

#endif
