/* Types a batch shares with what creates it: where it gets its cost model, and the
 * operations of the multi-device state that takes its copies of other GPUs. */
#ifndef OMPBATCH_PLUGIN_API_BATCH_TYPES_H
#define OMPBATCH_PLUGIN_API_BATCH_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/cuda/device.h"
#include "plugin/plan/cost.h"
#include "ompbatch.h"

/* Where a batch gets its device's cost model when its automatic strategy needs one: the
 * batches of the API and the hook get cost_models.c's (ob_cost_model_for), the calibration's
 * own none (their strategy is forced); ob_batch_set_cost_models (batch.h) gives it. */
typedef const ob_cost_model *(*ob_cost_models_fn)(int ordinal);

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

#endif
