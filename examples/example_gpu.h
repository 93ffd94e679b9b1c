/* The examples' access to a GPU: memory and bulk copies through the library's own driver table
 * (plugin/cuda/driver.h), so that no example links against libcuda; what fails leaves its message in
 * ompbatch_last_error(), as the library's calls do. */
#ifndef OMPBATCH_EXAMPLES_EXAMPLE_GPU_H
#define OMPBATCH_EXAMPLES_EXAMPLE_GPU_H

#include <stddef.h>

#include "plugin/cuda/driver.h"

typedef struct ex_gpu {
    const ob_driver *driver;
    int ordinal;          /* CUDA device ordinal, also its OpenMP device number here */
    CUstream stream;      /* the library's own non-blocking stream of the device */
    char name[128];       /* "NVIDIA H200", or "device N" when the driver cannot say */
    int context_pushed;
} ex_gpu;

/* Host memory kinds the examples move data from and to. */
typedef enum ex_host_kind { EX_HOST_PINNED = 0, EX_HOST_PAGEABLE, EX_HOST_MANAGED } ex_host_kind;

const char *ex_host_kind_name(ex_host_kind kind);

/* Makes device `ordinal`'s primary context current on this thread (until ex_gpu_close) and finds
 * the library's stream for it. Fails with OMPBATCH_ERR_UNSUPPORTED, after saying which on stderr,
 * when the driver lacks an allocation entry point the examples need. */
int ex_gpu_open(int ordinal, ex_gpu *gpu);
void ex_gpu_close(ex_gpu *gpu);

/* Device memory of the open device. */
int ex_gpu_alloc_device(ex_gpu *gpu, size_t bytes, CUdeviceptr *out);
void ex_gpu_free_device(ex_gpu *gpu, CUdeviceptr ptr);

/* Host memory of a kind: pinned (cuMemAllocHost), pageable (aligned_alloc, pages touched) or
 * managed (cuMemAllocManaged, attached globally). Managed memory is a CUdeviceptr the host may
 * use as a pointer. */
int ex_gpu_alloc_host(ex_gpu *gpu, ex_host_kind kind, size_t bytes, unsigned char **out);
void ex_gpu_free_host(ex_gpu *gpu, ex_host_kind kind, unsigned char *ptr);

/* One bulk copy on the device's stream, then waits for the stream: for setting up and reading
 * back data outside the timed parts. Pointers are unified addresses (host or device). */
int ex_gpu_copy(ex_gpu *gpu, CUdeviceptr dst, CUdeviceptr src, size_t bytes);

/* A host pointer as the driver's unified address, and back. */
#define EX_DPTR(p) ((CUdeviceptr)(uintptr_t)(p))
#define EX_HPTR(d) ((void *)(uintptr_t)(d))

#endif
