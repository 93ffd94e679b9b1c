#include "example_gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EX_PAGE ((size_t)4096)

const char *ex_host_kind_name(ex_host_kind kind)
{
    switch (kind) {
    case EX_HOST_PINNED:
        return "pinned";
    case EX_HOST_PAGEABLE:
        return "pageable";
    case EX_HOST_MANAGED:
        return "managed";
    }
    return "unknown";
}

/* The allocation entry points are OPTIONAL in the library's table (its copy paths do not need
 * them), so each is checked once here instead of at every call. */
static int check_entry_points(const ob_driver *driver)
{
    const char *missing = driver->fn.cuMemAlloc == NULL       ? "cuMemAlloc"
                          : driver->fn.cuMemFree == NULL      ? "cuMemFree"
                          : driver->fn.cuMemAllocHost == NULL ? "cuMemAllocHost"
                          : driver->fn.cuMemFreeHost == NULL  ? "cuMemFreeHost"
                                                              : NULL;
    if (missing == NULL)
        return OMPBATCH_OK;
    fprintf(stderr, "the CUDA driver (%s, version %d) lacks %s, which the examples allocate with\n",
            driver->library, driver->version, missing);
    return OMPBATCH_ERR_UNSUPPORTED;
}

int ex_gpu_open(int ordinal, ex_gpu *gpu)
{
    memset(gpu, 0, sizeof(*gpu));
    gpu->ordinal = ordinal;
    gpu->driver = ob_driver_get();
    snprintf(gpu->name, sizeof(gpu->name), "device %d", ordinal);
    int status = check_entry_points(gpu->driver);
    if (status != OMPBATCH_OK)
        return status;
    if ((status = ob_driver_push_context(ordinal)) != OMPBATCH_OK)
        return status;
    gpu->context_pushed = 1;
    if ((status = ob_driver_own_stream(ordinal, &gpu->stream)) != OMPBATCH_OK)
        return status;
    CUdevice device;
    if (gpu->driver->fn.cuDeviceGetName != NULL &&
        gpu->driver->fn.cuDeviceGet(&device, ordinal) == CUDA_SUCCESS &&
        gpu->driver->fn.cuDeviceGetName(gpu->name, (int)sizeof(gpu->name), device) !=
            CUDA_SUCCESS)
        snprintf(gpu->name, sizeof(gpu->name), "device %d", ordinal);
    return OMPBATCH_OK;
}

void ex_gpu_close(ex_gpu *gpu)
{
    if (gpu->context_pushed)
        (void)ob_driver_pop_context();
    gpu->context_pushed = 0;
}

int ex_gpu_alloc_device(ex_gpu *gpu, size_t bytes, CUdeviceptr *out)
{
    *out = 0;
    return OB_CU(gpu->driver, cuMemAlloc, out, bytes);
}

void ex_gpu_free_device(ex_gpu *gpu, CUdeviceptr ptr)
{
    if (ptr != 0)
        (void)gpu->driver->fn.cuMemFree(ptr);
}

int ex_gpu_alloc_host(ex_gpu *gpu, ex_host_kind kind, size_t bytes, unsigned char **out)
{
    *out = NULL;
    switch (kind) {
    case EX_HOST_PINNED: {
        void *p = NULL;
        int status = OB_CU(gpu->driver, cuMemAllocHost, &p, bytes);
        *out = p;
        return status;
    }
    case EX_HOST_PAGEABLE: {
        size_t rounded = (bytes + EX_PAGE - 1) / EX_PAGE * EX_PAGE;
        unsigned char *p = aligned_alloc(EX_PAGE, rounded ? rounded : EX_PAGE);
        if (p == NULL) {
            fprintf(stderr, "cannot allocate %zu bytes of pageable host memory\n", bytes);
            return OMPBATCH_ERR_NO_MEMORY;
        }
        /* Touch every page now, so that no timed copy pays for first-touch faults. */
        memset(p, 0, rounded);
        *out = p;
        return OMPBATCH_OK;
    }
    case EX_HOST_MANAGED: {
        if (gpu->driver->fn.cuMemAllocManaged == NULL) {
            fprintf(stderr, "the CUDA driver lacks cuMemAllocManaged\n");
            return OMPBATCH_ERR_UNSUPPORTED;
        }
        CUdeviceptr d = 0;
        int status = OB_CU(gpu->driver, cuMemAllocManaged, &d, bytes, CU_MEM_ATTACH_GLOBAL);
        *out = EX_HPTR(d);
        return status;
    }
    }
    return OMPBATCH_ERR_INVALID_ARGUMENT;
}

void ex_gpu_free_host(ex_gpu *gpu, ex_host_kind kind, unsigned char *ptr)
{
    if (ptr == NULL)
        return;
    switch (kind) {
    case EX_HOST_PINNED:
        (void)gpu->driver->fn.cuMemFreeHost(ptr);
        return;
    case EX_HOST_PAGEABLE:
        free(ptr);
        return;
    case EX_HOST_MANAGED:
        (void)gpu->driver->fn.cuMemFree(EX_DPTR(ptr));
        return;
    }
}

int ex_gpu_copy(ex_gpu *gpu, CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    int status = OB_CU(gpu->driver, cuMemcpyAsync, dst, src, bytes, gpu->stream);
    if (status == OMPBATCH_OK)
        status = OB_CU(gpu->driver, cuStreamSynchronize, gpu->stream);
    return status;
}
