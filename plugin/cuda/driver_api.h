/*
 * Every CUDA driver entry point ompbatch uses, in one list. The list expands into the typed
 * function table (driver.h), the loading loop (driver.c) and the fake driver's symbol table
 * (tests/fake_cuda). Each entry is resolved through cuGetProcAddress with the explicit ABI
 * version in its name, so the typedef from cudaTypedefs.h always matches what the driver
 * returns: PFN_<symbol>_v<version>.
 *
 * X(field, symbol, version, need)
 *   field    the member of the table
 *   symbol   the base name passed to cuGetProcAddress
 *   version  the ABI version asked for
 *   need     REQUIRED: without it the driver is unusable; OPTIONAL: tested at the call site
 */
#ifndef OMPBATCH_PLUGIN_DRIVER_API_H
#define OMPBATCH_PLUGIN_DRIVER_API_H

#include <cuda.h>
#include <cudaTypedefs.h>

#define OMPBATCH_DRIVER_ENTRY_POINTS(X)                                                         \
    X(cuInit, cuInit, 2000, REQUIRED)                                                           \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020, REQUIRED)                                   \
    X(cuGetErrorString, cuGetErrorString, 6000, REQUIRED)                                      \
    X(cuGetErrorName, cuGetErrorName, 6000, REQUIRED)                                          \
    X(cuDeviceGetCount, cuDeviceGetCount, 2000, REQUIRED)                                      \
    X(cuDeviceGet, cuDeviceGet, 2000, REQUIRED)                                                \
    X(cuDeviceGetName, cuDeviceGetName, 2000, OPTIONAL)                                        \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, REQUIRED)                      \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 11000, REQUIRED)                   \
    /* The primary context's scheduling flags name the calibration cache (cost.c). */         \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000, OPTIONAL)                  \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, REQUIRED)                                        \
    X(cuCtxPushCurrent, cuCtxPushCurrent, 4000, REQUIRED)                                      \
    X(cuCtxPopCurrent, cuCtxPopCurrent, 4000, REQUIRED)                                        \
    X(cuStreamCreate, cuStreamCreate, 2000, REQUIRED)                                          \
    X(cuStreamDestroy, cuStreamDestroy, 4000, REQUIRED)                                        \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, REQUIRED)                                \
    X(cuStreamQuery, cuStreamQuery, 2000, OPTIONAL)                                            \
    X(cuStreamGetCtx, cuStreamGetCtx, 9020, OPTIONAL)                                          \
    X(cuPointerGetAttributes, cuPointerGetAttributes, 7000, REQUIRED)                          \
    X(cuMemcpyAsync, cuMemcpyAsync, 4000, REQUIRED)                                            \
    X(cuMemcpyBatchAsync_v12080, cuMemcpyBatchAsync, 12080, OPTIONAL)                          \
    X(cuMemcpyBatchAsync_v13000, cuMemcpyBatchAsync, 13000, OPTIONAL)                          \
    /* The copy kernel of the staged strategy (plugin/cuda/kernels/copy_pieces.cu). */         \
    X(cuModuleLoadData, cuModuleLoadData, 2000, OPTIONAL)                                      \
    X(cuModuleGetFunction, cuModuleGetFunction, 2000, OPTIONAL)                                \
    X(cuModuleUnload, cuModuleUnload, 2000, OPTIONAL)                                          \
    X(cuLaunchKernel, cuLaunchKernel, 4000, OPTIONAL)                                          \
    /* Staging (plugin/cuda/staging.c) and the calibration allocate with these; tests, examples    \
     * and the benchmark use them through the same table. */                                  \
    X(cuMemAlloc, cuMemAlloc, 3020, OPTIONAL)                                                  \
    X(cuMemFree, cuMemFree, 3020, OPTIONAL)                                                    \
    X(cuMemAllocHost, cuMemAllocHost, 3020, OPTIONAL)                                          \
    X(cuMemFreeHost, cuMemFreeHost, 2000, OPTIONAL)                                            \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, OPTIONAL)                                    \
    X(cuMemsetD8, cuMemsetD8, 3020, OPTIONAL)                                                  \
    /* The hook's registration of long-lived mapped host ranges (plugin/hook/hook_register.c). */ \
    X(cuMemHostRegister, cuMemHostRegister, 6050, OPTIONAL)                                    \
    X(cuMemHostUnregister, cuMemHostUnregister, 4000, OPTIONAL)                                \
    /* The pipelined path for large pageable copies (plugin/exec/backend_pipelined.c) learns     \
     * from these when a chunk of its staging is free again. */                              \
    X(cuEventCreate, cuEventCreate, 2000, OPTIONAL)                                            \
    X(cuEventRecord, cuEventRecord, 2000, OPTIONAL)                                            \
    X(cuEventQuery, cuEventQuery, 2000, OPTIONAL)                                              \
    X(cuEventDestroy, cuEventDestroy, 4000, OPTIONAL)                                          \
    /* Copies between two GPUs of one batch (plugin/api/multi.c): peer access where the hardware  \
     * allows it; without, the driver stages such copies through the host itself. */          \
    X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 4000, OPTIONAL)                            \
    X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000, OPTIONAL)                            \
    /* A word the stream writes into pinned staging once the copies before it are done: the    \
     * staged wait sees a copy into pinned memory end sooner than a query tells it. */         \
    X(cuStreamWriteValue32, cuStreamWriteValue32, 11070, OPTIONAL)

#endif /* OMPBATCH_PLUGIN_DRIVER_API_H */
