/* The CUDA driver, loaded at run time: the typed entry-point table, what was found, the
 * checked-call macro, and per-device primary contexts and library-owned streams. */
#ifndef OMPBATCH_PLUGIN_DRIVER_H
#define OMPBATCH_PLUGIN_DRIVER_H

#include "plugin/cuda/driver_api.h"
#include "ompbatch.h"

typedef struct ob_driver_table {
#define OB_TABLE_FIELD_(field, symbol, version, need) PFN_##symbol##_v##version field;
    OMPBATCH_DRIVER_ENTRY_POINTS(OB_TABLE_FIELD_)
#undef OB_TABLE_FIELD_
} ob_driver_table;

typedef struct ob_driver {
    int loaded;                  /* entry points resolved and cuInit succeeded */
    int version;                 /* cuDriverGetVersion */
    int device_count;
    ompbatch_batch_form form;    /* how device copies are submitted */
    int forced;                  /* OMPBATCH_BATCH_FORM chose form */
    char library[512];
    char reason[256];            /* why loaded == 0 */
    ob_driver_table fn;
} ob_driver;

/* Everything the library keeps per CUDA device, in one place: one slot per device the driver
 * reports, made when it loads and released when a test reloads it. Each field is set once, on
 * first use, under the lock of the file that owns it (driver.c: context and stream;
 * kernel_module.c: the kernels; peers.c: peer access; api/cost_models.c: the cost model). */
typedef enum ob_kernels_state {
    OB_KERNELS_UNKNOWN = 0,
    OB_KERNELS_READY,
    OB_KERNELS_UNAVAILABLE
} ob_kernels_state;

typedef struct ob_device_slot {
    CUcontext context;            /* its primary context, retained on first use */
    CUstream stream;              /* the library's own non-blocking stream */
    ob_kernels_state kernels;     /* the copy module, loaded on first use */
    CUfunction copy_kernel;
    CUfunction copy_inline_kernel;
    CUfunction rect_kernel;
    unsigned char *peers;         /* per device: 0 not asked yet, 1 enabled, 2 not available */
    /* The device's cost model; the layer that builds it (it knows the type) frees it through
     * release_model when the slot is released. */
    void *model;
    void (*release_model)(void *model);
} ob_device_slot;

/* The slot of CUDA device `ordinal`, or NULL when the driver is not loaded or has no such
 * device (nothing is logged or recorded). */
ob_device_slot *ob_driver_slot(int ordinal);

/* The driver state, loading it on first use (thread-safe). Never NULL; check ->loaded. */
const ob_driver *ob_driver_get(void);

/* OMPBATCH_OK if the driver is usable, else OMPBATCH_ERR_NO_DRIVER with a message saying why. */
int ob_driver_require(const ob_driver **out);

/* Converts a CUresult into a status; on failure records "<call> failed: NAME (text)". */
int ob_cu_check(const ob_driver *driver, CUresult result, const char *call);

/* Calls a driver entry point and checks its result: OB_CU(driver, cuStreamSynchronize, s). */
#define OB_CU(driver, entry, ...) ob_cu_check((driver), (driver)->fn.entry(__VA_ARGS__), #entry)

/* Makes the primary context of CUDA device `ordinal` current on this thread (retaining it
 * once per process, as libomptarget does). Pair with ob_driver_pop_context. */
int ob_driver_push_context(int ordinal);
/* The retained primary context of CUDA device `ordinal` (retained on first use). */
int ob_driver_primary_context(int ordinal, CUcontext *out);
int ob_driver_pop_context(void);
/* The pop after work that may have failed: returns status when it is already a failure (a
 * failed pop is logged where it fails but leaves the first failure's message), else the
 * pop's. */
int ob_driver_pop_context_after(int status);

/* Like push, but a no-op when the device's primary context is already current (as it is in
 * an OpenMP program, where libomptarget made it so): *pushed says whether leave pops, which it
 * does as ob_driver_pop_context_after(status). */
int ob_driver_enter_context(int ordinal, int *pushed);
int ob_driver_leave_context(int pushed, int status);

/* The library's own non-blocking stream for a device, created once on its primary context. */
int ob_driver_own_stream(int ordinal, CUstream *out);

/* Releases every device slot (streams, contexts, peers, cost models), closes the library and
 * reads the configuration again; the next ob_driver_get() loads anew. For tests that switch
 * fake drivers; not thread-safe with respect to other library calls. */
void ob_driver_reload_for_testing(void);

#endif
