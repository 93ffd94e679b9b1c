/* Internal entry points of batch objects for other library files. */
#ifndef OMPBATCH_PLUGIN_BATCH_H
#define OMPBATCH_PLUGIN_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/cuda/device.h"
#include "plugin/plan/cost.h"
#include "plugin/plan/walk.h"
#include "ompbatch.h"

/* ompbatch_batch_destroy, for the library's own batches: their structs are freed at once, not
 * kept among the program's destroyed batches. */
int ob_batch_destroy(ompbatch_batch *batch);
/* The destroy after work that may have failed: returns status when it is already a failure
 * (the destroy's own failure is logged where it fails but leaves the first failure's
 * message), else the destroy's. */
int ob_batch_destroy_after(ompbatch_batch *batch, int status);

/* ompbatch_batch_create for a device already resolved (the hook knows better than the device
 * number which kind of device executes an OpenMP device's copies); options must be complete.
 * The batch has no cost model until ob_batch_set_cost_models gives it one. */
int ob_batch_create_on(ompbatch_batch **out, const ob_device *device, void *stream,
                       const ompbatch_batch_options *options);

/* The hook's batches: the sides it names the device are device memory of the batch's device
 * (the runtime mapped them there), so they are not classified; host memory is never accessed
 * in place by the copy kernel (pinned pieces are packed and unpacked like pageable ones), so
 * a host classification the program made stale by freeing memory costs speed, not bytes; and
 * the memory-kind cache keeps host entries when the hook forgets device memory. */
void ob_batch_set_hook_mode(ompbatch_batch *batch);

/* Where a batch gets its device's cost model when its automatic strategy needs one: the
 * batches of the API and the hook get cost_models.c's (ob_cost_model_for), the calibration's
 * own none (their strategy is forced). */
typedef const ob_cost_model *(*ob_cost_models_fn)(int ordinal);
void ob_batch_set_cost_models(ompbatch_batch *batch, ob_cost_models_fn models);

/* Copies that involve other GPUs than the batch's own go to a multi-device state (multi.h),
 * which the batch reaches through these operations, given by whoever creates a batch that may
 * take such copies (ompbatch_batch_create). The parts of a multi-device batch, the hook's
 * batches (one per device, each given copies of its device) and the calibration's have none,
 * and refuse copies of other GPUs. */
typedef struct ob_multi ob_multi;

/* One copy as the caller added it. */
typedef struct ob_multi_copy {
    uintptr_t dst, src;
    size_t bytes;
    uint64_t map_type;
    ob_device dst_device; /* kind OB_DEVICE_HOST for the host */
    ob_device src_device;
} ob_multi_copy;

typedef struct ob_multi_ops {
    /* The state for a batch on device `home` with options `options`, its parts planned with
     * cost_models. */
    int (*create)(ob_multi **out, const ob_device *home, const ompbatch_batch_options *options,
                  ob_cost_models_fn cost_models);
    /* Appends a copy (checked by the caller: pointers, map type, devices). */
    int (*add)(ob_multi *multi, const ob_multi_copy *copy);
    size_t (*count)(const ob_multi *multi);
    int (*submit)(ob_multi *multi);
    int (*wait)(ob_multi *multi);
    /* Waits, then forgets the copies; the parts' batches stay for the next submit. */
    int (*reset)(ob_multi *multi);
    /* The parts' statistics of the last submit, summed; copies_added is the caller's count. */
    void (*stats)(const ob_multi *multi, ompbatch_stats *out);
    /* Forgets what the parts learnt about memory, whatever their state. */
    void (*forget_memory)(ob_multi *multi);
    /* Waits and frees everything (NULL is nothing); returns the first failure. */
    int (*destroy)(ob_multi *multi);
} ob_multi_ops;

void ob_batch_set_multi(ompbatch_batch *batch, const ob_multi_ops *ops);

/* Names the batch's submissions in NVTX ranges ("update maps.c:42", "memcpy_batch"); label
 * must stay valid until the next call (NULL: "batch"). */
void ob_batch_set_label(ompbatch_batch *batch, const char *label);

/* The OpenMP device number the batch was created for. */
int ob_batch_device_number(const ompbatch_batch *batch);

/* OMPBATCH_OK for a live batch open for adds; otherwise the error ompbatch_batch_add gives. */
int ob_batch_check_open(const ompbatch_batch *batch);

/* How many copies were added since the batch was created or reset: the index the next one
 * takes. The batch must be alive. */
size_t ob_batch_added(const ompbatch_batch *batch);

/* Adds a rectangle as one copy (walk.h): dst and src are its sides' first bytes. With every
 * check of ompbatch_batch_add, on the bytes each side spans. *taken is 0 when the batch takes
 * no rectangle whole (it copies across GPUs): the caller adds its runs one by one. */
int ob_batch_add_rect_copy(ompbatch_batch *batch, void *dst, int dst_device_num, const void *src,
                           int src_device_num, const ob_rect *rect, uint64_t map_type,
                           int *taken);

/* Adds a rectangle whole where the batch takes it (ob_batch_add_rect_copy), else its runs one
 * by one, outermost index slowest, with ompbatch_batch_add. */
int ob_batch_add_rect_or_runs(ompbatch_batch *batch, void *dst, int dst_device_num,
                              const void *src, int src_device_num, const ob_rect *rect,
                              uint64_t map_type);

/* Drops what the batch learnt about memory and its plan, whatever its state. */
void ob_batch_forget_memory_now(ompbatch_batch *batch);

/* Drops what the batch learnt about device (and managed) memory, keeping host entries. */
void ob_batch_forget_device_memory(ompbatch_batch *batch);

#endif
