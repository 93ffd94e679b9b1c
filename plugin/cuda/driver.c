#define _GNU_SOURCE
#include "plugin/core/alloc.h"
#include "plugin/cuda/driver.h"
#include "plugin/cuda/resources.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/config.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"

/* The device slots (driver.h); contexts and streams are made under `lock`. The driver keeps
 * primary contexts alive once retained, and a stream lives until the process ends (or a test
 * reloads the driver). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int attempted;
static ob_driver state;
static void *library_handle;
static ob_device_slot *slots;

typedef CUresult (*lookup_fn)(const char *symbol, void **pfn, int version);

static PFN_cuGetProcAddress_v12000 get_proc_v2;
static PFN_cuGetProcAddress_v11030 get_proc_v1;

static CUresult lookup(const char *symbol, void **pfn, int version)
{
    if (get_proc_v2 != NULL) {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult r = get_proc_v2(symbol, pfn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
        if (r == CUDA_SUCCESS && found != CU_GET_PROC_ADDRESS_SUCCESS)
            r = CUDA_ERROR_NOT_FOUND;
        return r;
    }
    return get_proc_v1(symbol, pfn, version, CU_GET_PROC_ADDRESS_DEFAULT);
}

static void set_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void set_reason(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(state.reason, sizeof(state.reason), fmt, ap);
    va_end(ap);
}

/* Resolves every entry of the list. A missing REQUIRED entry makes the driver unusable; a
 * missing OPTIONAL one stays NULL and is tested where it is called. */
static int resolve_entry_points(void)
{
    void *pfn;
#define OB_RESOLVE_(field, symbol, version, need)                                                \
    pfn = NULL;                                                                                  \
    if (lookup(#symbol, &pfn, version) != CUDA_SUCCESS || pfn == NULL) {                         \
        pfn = NULL;                                                                              \
        if (strcmp(#need, "REQUIRED") == 0) {                                                    \
            set_reason("the driver lacks %s (version %ld)", #symbol, (long)(version));           \
            return -1;                                                                           \
        }                                                                                        \
    }                                                                                            \
    state.fn.field = (PFN_##symbol##_v##version)pfn;
    OMPBATCH_DRIVER_ENTRY_POINTS(OB_RESOLVE_)
#undef OB_RESOLVE_
    return 0;
}

static ompbatch_batch_form form_for_version(int version)
{
    if (version >= 13000 && state.fn.cuMemcpyBatchAsync_v13000 != NULL)
        return OMPBATCH_FORM_V13000;
    if (version >= 12080 && state.fn.cuMemcpyBatchAsync_v12080 != NULL)
        return OMPBATCH_FORM_V12080;
    return OMPBATCH_FORM_PER_COPY;
}

/* OMPBATCH_BATCH_FORM may force a form; one the driver does not serve falls back to the
 * automatic choice, with a warning since the user asked for something else. */
static void choose_form(void)
{
    state.form = form_for_version(state.version);
    ompbatch_batch_form wanted;
    int served;
    switch (ob_config_get()->form) {
    case OB_FORM_FORCE_PER_COPY:
        wanted = OMPBATCH_FORM_PER_COPY;
        served = 1;
        break;
    case OB_FORM_FORCE_13000:
        wanted = OMPBATCH_FORM_V13000;
        served = state.fn.cuMemcpyBatchAsync_v13000 != NULL;
        break;
    case OB_FORM_FORCE_12080:
        wanted = OMPBATCH_FORM_V12080;
        served = state.fn.cuMemcpyBatchAsync_v12080 != NULL;
        break;
    case OB_FORM_AUTO:
    default:
        return;
    }
    if (served) {
        state.form = wanted;
        state.forced = 1;
        return;
    }
    fprintf(stderr, "ompbatch: OMPBATCH_BATCH_FORM asks for a form driver %d does not serve; "
                    "using the automatic choice\n", state.version);
}

static void load_locked(void)
{
    memset(&state, 0, sizeof(state));
    snprintf(state.library, sizeof(state.library), "%s", ob_config_get()->cuda_library);
    library_handle = dlopen(state.library, RTLD_NOW | RTLD_LOCAL);
    if (library_handle == NULL) {
        const char *why = dlerror();
        set_reason("cannot open the CUDA driver: %s", why ? why : "dlopen failed");
        return;
    }
    get_proc_v2 = (PFN_cuGetProcAddress_v12000)dlsym(library_handle, "cuGetProcAddress_v2");
    get_proc_v1 = (PFN_cuGetProcAddress_v11030)dlsym(library_handle, "cuGetProcAddress");
    if (get_proc_v2 == NULL && get_proc_v1 == NULL) {
        set_reason("%s has no cuGetProcAddress (driver older than 11.3)", state.library);
        return;
    }
    if (resolve_entry_points() != 0)
        return;
    CUresult r = state.fn.cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        if (state.fn.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
            name = "unknown error";
        set_reason("cuInit failed: %s (%ld)", name, (long)r);
        return;
    }
    if (state.fn.cuDriverGetVersion(&state.version) != CUDA_SUCCESS ||
        state.fn.cuDeviceGetCount(&state.device_count) != CUDA_SUCCESS) {
        set_reason("cannot query the driver's version and devices");
        return;
    }
    if (state.device_count > 0) {
        slots = ob_calloc((size_t)state.device_count, sizeof(*slots));
        if (slots == NULL) {
            set_reason("out of memory");
            return;
        }
    }
    choose_form();
    state.loaded = 1;
}

const ob_driver *ob_driver_get(void)
{
    if (atomic_load_explicit(&attempted, memory_order_acquire))
        return &state;
    pthread_mutex_lock(&lock);
    if (!atomic_load_explicit(&attempted, memory_order_relaxed)) {
        load_locked();
        if (!state.loaded && library_handle != NULL) {
            dlclose(library_handle);
            library_handle = NULL;
        }
        if (state.loaded)
            ob_log(1, "driver %s: version %d, %d device(s), %s%s", state.library, state.version,
                   state.device_count,
                   state.form == OMPBATCH_FORM_V13000   ? "cuMemcpyBatchAsync v13000"
                   : state.form == OMPBATCH_FORM_V12080 ? "cuMemcpyBatchAsync v12080"
                                                        : "per-copy cuMemcpyAsync",
                   state.forced ? " (forced)" : "");
        else
            ob_log(1, "no CUDA driver: %s", state.reason);
        atomic_store_explicit(&attempted, 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    return &state;
}

ob_device_slot *ob_driver_slot(int ordinal)
{
    const ob_driver *driver = ob_driver_get();
    if (!driver->loaded || ordinal < 0 || ordinal >= driver->device_count)
        return NULL;
    return &slots[ordinal];
}

int ob_driver_require(const ob_driver **out)
{
    const ob_driver *driver = ob_driver_get();
    if (!driver->loaded)
        return ob_fail(OMPBATCH_ERR_NO_DRIVER, "no CUDA driver: %s", driver->reason);
    *out = driver;
    return OMPBATCH_OK;
}

int ob_cu_check(const ob_driver *driver, CUresult result, const char *call)
{
    if (result == CUDA_SUCCESS)
        return OMPBATCH_OK;
    const char *name = NULL;
    const char *text = NULL;
    if (driver->fn.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL)
        name = "unknown CUresult";
    if (driver->fn.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == NULL)
        text = "no description";
    return ob_fail(OMPBATCH_ERR_DRIVER, "%s failed: %s (%d: %s)", call, name, (int)result, text);
}

static int check_ordinal(int ordinal)
{
    if (ordinal < 0 || ordinal >= state.device_count)
        return ob_fail(OMPBATCH_ERR_INVALID_DEVICE,
                       "device %d is not a CUDA device (the driver reports %d)", ordinal,
                       state.device_count);
    return OMPBATCH_OK;
}

/* Retains the primary context of a device once; libomptarget uses the same context, so copies
 * of both land in one address space and stream namespace. */
static int slot_context(int ordinal, CUcontext *out)
{
    /* Set once and never changed until a test reloads the driver: read without the lock. */
    *out = __atomic_load_n(&slots[ordinal].context, __ATOMIC_ACQUIRE);
    if (*out != NULL)
        return OMPBATCH_OK;
    int status = OMPBATCH_OK;
    pthread_mutex_lock(&lock);
    if (slots[ordinal].context == NULL) {
        CUdevice device;
        CUcontext context = NULL;
        status = OB_CU(&state, cuDeviceGet, &device, ordinal);
        if (status == OMPBATCH_OK)
            status = OB_CU(&state, cuDevicePrimaryCtxRetain, &context, device);
        if (status == OMPBATCH_OK)
            __atomic_store_n(&slots[ordinal].context, context, __ATOMIC_RELEASE);
    }
    *out = slots[ordinal].context;
    pthread_mutex_unlock(&lock);
    return status;
}

/* The loaded driver and the retained primary context of a CUDA device. */
static int device_context(int ordinal, const ob_driver **driver, CUcontext *context)
{
    int status = ob_driver_require(driver);
    if (status == OMPBATCH_OK)
        status = check_ordinal(ordinal);
    if (status == OMPBATCH_OK)
        status = slot_context(ordinal, context);
    return status;
}

int ob_driver_primary_context(int ordinal, CUcontext *out)
{
    const ob_driver *driver;
    return device_context(ordinal, &driver, out);
}

int ob_driver_push_context(int ordinal)
{
    const ob_driver *driver;
    CUcontext context;
    int status = device_context(ordinal, &driver, &context);
    if (status != OMPBATCH_OK)
        return status;
    return OB_CU(driver, cuCtxPushCurrent, context);
}

int ob_driver_enter_context(int ordinal, int *pushed)
{
    *pushed = 0;
    const ob_driver *driver;
    CUcontext wanted, current = NULL;
    int status = device_context(ordinal, &driver, &wanted);
    if (status == OMPBATCH_OK)
        status = OB_CU(driver, cuCtxGetCurrent, &current);
    if (status != OMPBATCH_OK || current == wanted)
        return status;
    if ((status = OB_CU(driver, cuCtxPushCurrent, wanted)) != OMPBATCH_OK)
        return status;
    *pushed = 1;
    return OMPBATCH_OK;
}

int ob_driver_leave_context(int pushed, int status)
{
    return pushed ? ob_driver_pop_context_after(status) : status;
}

int ob_driver_pop_context(void)
{
    CUcontext popped;
    return OB_CU(&state, cuCtxPopCurrent, &popped);
}

int ob_driver_pop_context_after(int status)
{
    if (status == OMPBATCH_OK)
        return ob_driver_pop_context();
    ob_error_saved failure;
    ob_error_save(&failure);
    (void)ob_driver_pop_context(); /* logged; the first failure is the one reported */
    return ob_error_restore(status, &failure);
}

int ob_driver_own_stream(int ordinal, CUstream *out)
{
    int status = ob_driver_push_context(ordinal);
    if (status != OMPBATCH_OK)
        return status;
    pthread_mutex_lock(&lock);
    if (slots[ordinal].stream == NULL) {
        status = OB_CU(&state, cuStreamCreate, &slots[ordinal].stream, CU_STREAM_NON_BLOCKING);
        if (status == OMPBATCH_OK)
            ob_resources_stream_created();
    }
    *out = slots[ordinal].stream;
    pthread_mutex_unlock(&lock);
    return ob_driver_pop_context_after(status);
}

void ob_driver_reload_for_testing(void)
{
    pthread_mutex_lock(&lock);
    if (state.loaded && slots != NULL) {
        /* Best effort, for tests: a failed call here leaves a stream or a context reference to
         * a driver the test is about to unload. */
        for (int i = 0; i < state.device_count; i++) {
            if (slots[i].stream != NULL && state.fn.cuCtxPushCurrent(slots[i].context) ==
                                               CUDA_SUCCESS) {
                (void)state.fn.cuStreamDestroy(slots[i].stream);
                CUcontext popped;
                (void)state.fn.cuCtxPopCurrent(&popped);
            }
            if (slots[i].context != NULL) {
                CUdevice device;
                if (state.fn.cuDeviceGet(&device, i) == CUDA_SUCCESS)
                    (void)state.fn.cuDevicePrimaryCtxRelease(device);
            }
            free(slots[i].peers);
            if (slots[i].model != NULL && slots[i].release_model != NULL)
                slots[i].release_model(slots[i].model);
        }
    }
    free(slots);
    slots = NULL;
    /* The handle stays open: tests hold their own handle to the same fake and dlclose of a
     * library with thread-local state is not worth the risk. */
    library_handle = NULL;
    get_proc_v1 = NULL;
    get_proc_v2 = NULL;
    memset(&state, 0, sizeof(state));
    ob_config_reload();
    atomic_store_explicit(&attempted, 0, memory_order_release);
    pthread_mutex_unlock(&lock);
}

int ompbatch_get_driver_info(ompbatch_driver_info *info)
{
    if (info == NULL)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "info is NULL");
    if (info->struct_size < offsetof(ompbatch_driver_info, reason) + sizeof(info->reason))
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "info->struct_size is %zu; set it to sizeof(ompbatch_driver_info)",
                       info->struct_size);
    const ob_driver *driver = ob_driver_get();
    info->driver_loaded = driver->loaded;
    info->driver_version = driver->loaded ? driver->version : 0;
    info->device_count = driver->loaded ? driver->device_count : 0;
    info->batch_form = driver->loaded ? (int)driver->form : OMPBATCH_FORM_NONE;
    info->forced = driver->forced;
    info->library = driver->library;
    info->reason = driver->reason;
    return OMPBATCH_OK;
}
