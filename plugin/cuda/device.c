#include "plugin/cuda/device.h"

#include <stdatomic.h>

#include "plugin/core/error.h"
#include "plugin/cuda/driver.h"
#include "plugin/cuda/omp_runtime.h"

static atomic_size_t resolutions;

size_t ob_device_resolutions_for_testing(void)
{
    return atomic_load(&resolutions);
}

int ob_device_resolve(int device_num, const char *what, ob_device *out)
{
    atomic_fetch_add_explicit(&resolutions, 1, memory_order_relaxed);
    const ob_driver *driver = ob_driver_get();
    const ob_omp_runtime *omp = ob_omp_runtime_get();
    int cuda_count = driver->loaded ? driver->device_count : 0;
    out->number = device_num;
    out->ordinal = -1;
    if (device_num == OMPBATCH_HOST_DEVICE ||
        (omp->available && device_num == omp->get_initial_device()) ||
        (!omp->available && device_num == cuda_count)) {
        out->kind = OB_DEVICE_HOST;
        return OMPBATCH_OK;
    }
    if (device_num >= 0 && device_num < cuda_count) {
        out->kind = OB_DEVICE_CUDA;
        out->ordinal = device_num;
        return OMPBATCH_OK;
    }
    int omp_count = omp->available ? omp->get_num_devices() : 0;
    if (device_num >= 0 && device_num < omp_count) {
        out->kind = OB_DEVICE_HOST_OFFLOAD;
        return OMPBATCH_OK;
    }
    return ob_fail(OMPBATCH_ERR_INVALID_DEVICE,
                   "%s %d is not a device: the host is %d or %d, and there are %d CUDA "
                   "device(s)%s",
                   what, device_num, OMPBATCH_HOST_DEVICE,
                   omp->available ? omp->get_initial_device() : cuda_count, cuda_count,
                   driver->loaded ? "" : " (no CUDA driver)");
}
