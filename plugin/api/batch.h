/* Internal entry points of batch objects for other library files: their life (batch.c);
 * adding copies is batch_add.h's. */
#ifndef OMPBATCH_PLUGIN_BATCH_H
#define OMPBATCH_PLUGIN_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/api/batch_types.h"
#include "plugin/cuda/device.h"
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

/* Gives the batch where it gets its device's cost model (batch_types.h). */
void ob_batch_set_cost_models(ompbatch_batch *batch, ob_cost_models_fn models);

/* The operations of a multi-device state for copies that involve other GPUs (batch_types.h). */
void ob_batch_set_multi(ompbatch_batch *batch, const ob_multi_ops *ops);

/* Names the batch's submissions in NVTX ranges ("update maps.c:42", "memcpy_batch"); label
 * must stay valid until the next call (NULL: "batch"). */
void ob_batch_set_label(ompbatch_batch *batch, const char *label);

/* The OpenMP device number the batch was created for. */
int ob_batch_device_number(const ompbatch_batch *batch);

/* Drops what the batch learnt about memory and its plan, whatever its state. */
void ob_batch_forget_memory_now(ompbatch_batch *batch);

/* Drops what the batch learnt about device (and managed) memory, keeping host entries. */
void ob_batch_forget_device_memory(ompbatch_batch *batch);

#endif
