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

/* Like push, but a no-op when the device's primary context is already current (as it is in
 * an OpenMP program, where libomptarget made it so): *pushed says whether to pop in leave. */
int ob_driver_enter_context(int ordinal, int *pushed);
int ob_driver_leave_context(int pushed);

/* The library's own non-blocking stream for a device, created once on its primary context. */
int ob_driver_own_stream(int ordinal, CUstream *out);

/* Releases streams and contexts, closes the library and reads the configuration again; the
 * next ob_driver_get() loads anew. For tests that switch fake drivers; not thread-safe with
 * respect to other library calls. */
void ob_driver_reload_for_testing(void);

#endif
