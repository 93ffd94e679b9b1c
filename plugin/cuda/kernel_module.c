#include "plugin/cuda/kernel_module.h"

#include <pthread.h>

#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/cuda/kernels.h"
#include "plugin/cuda/resources.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Loads the module and finds its functions, into the slot; a module without them is
 * unloaded again. */
static int load(const ob_driver *driver, ob_device_slot *slot)
{
    if (driver->fn.cuModuleLoadData == NULL || driver->fn.cuModuleGetFunction == NULL ||
        driver->fn.cuModuleUnload == NULL || driver->fn.cuLaunchKernel == NULL)
        return ob_fail(OMPBATCH_ERR_UNSUPPORTED, "the driver cannot load kernels");
    CUmodule module = NULL;
    int status = OB_CU(driver, cuModuleLoadData, &module, ob_copy_pieces_ptx);
    if (status != OMPBATCH_OK)
        return status;
    status = OB_CU(driver, cuModuleGetFunction, &slot->copy_kernel, module,
                   OB_COPY_PIECES_KERNEL);
    if (status == OMPBATCH_OK)
        status = OB_CU(driver, cuModuleGetFunction, &slot->copy_inline_kernel, module,
                       OB_COPY_INLINE_KERNEL);
    if (status == OMPBATCH_OK)
        status = OB_CU(driver, cuModuleGetFunction, &slot->rect_kernel, module,
                       OB_COPY_RECT_KERNEL);
    if (status == OMPBATCH_OK) {
        ob_resources_module_loaded();
        return OMPBATCH_OK;
    }
    ob_error_saved failure;
    ob_error_save(&failure);
    (void)OB_CU(driver, cuModuleUnload, module); /* logged; the lookup's failure is reported */
    return ob_error_restore(status, &failure);
}

int ob_kernels_get(const ob_driver *driver, int ordinal, ob_kernels *out)
{
    ob_device_slot *slot = ob_driver_slot(ordinal);
    if (slot == NULL)
        return ob_fail(OMPBATCH_ERR_UNSUPPORTED, "device %d: no such CUDA device for the kernel",
                       ordinal);
    pthread_mutex_lock(&lock);
    int status = OMPBATCH_OK;
    if (slot->kernels == OB_KERNELS_UNKNOWN) {
        status = load(driver, slot);
        slot->kernels = status == OMPBATCH_OK ? OB_KERNELS_READY : OB_KERNELS_UNAVAILABLE;
        if (status != OMPBATCH_OK)
            ob_log(1, "device %d: no copy kernel (%s); staged copies go direct", ordinal,
                   ompbatch_last_error());
    } else if (slot->kernels == OB_KERNELS_UNAVAILABLE) {
        status = OMPBATCH_ERR_UNSUPPORTED; /* said at the failed load; callers copy directly */
    }
    out->copy = slot->copy_kernel;
    out->copy_inline = slot->copy_inline_kernel;
    out->rect = slot->rect_kernel;
    pthread_mutex_unlock(&lock);
    return status;
}

void ob_kernels_forget_for_testing(void)
{
    const ob_driver *driver = ob_driver_get();
    pthread_mutex_lock(&lock);
    for (int i = 0; driver->loaded && i < driver->device_count; i++)
        ob_driver_slot(i)->kernels = OB_KERNELS_UNKNOWN;
    pthread_mutex_unlock(&lock);
}
