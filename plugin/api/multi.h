/* A batch's copies that involve other GPUs than its own.
 *
 * A batch is created for one device. Its copies may also name other CUDA devices: host <->
 * device E, and device A <-> device B between GPUs. Once one does, the batch keeps all its
 * copies here, in the order added, and a submit splits them by the device that runs each:
 * host <-> E and E <-> E copies go to a batch of E's own (on E's library stream, planned and
 * staged like any batch), A -> B copies to A's library stream as peer copies (peer access is
 * enabled where the hardware allows; elsewhere the driver stages them through the host). The
 * parts run concurrently and complete as one unit: wait returns when all have.
 *
 * Because the parts run concurrently, copies of different parts must not touch the same memory
 * where one of them writes it: submit refuses such a batch, naming both copies. Batches on a
 * caller's stream take no copies of other devices (their parts could not follow that stream's
 * order). */
#ifndef OMPBATCH_PLUGIN_MULTI_H
#define OMPBATCH_PLUGIN_MULTI_H

#include <stddef.h>

#include "plugin/api/batch.h"
#include "plugin/cuda/device.h"
#include "ompbatch.h"

/* Creates the state for a batch on device `home` with options `options`. */
int ob_multi_create(ob_multi **out, const ob_device *home, const ompbatch_batch_options *options,
                    ob_cost_models_fn cost_models);

/* Appends a copy (checked by the caller: pointers, map type, devices). */
int ob_multi_add(ob_multi *multi, const ob_multi_copy *copy);
size_t ob_multi_count(const ob_multi *multi);

int ob_multi_submit(ob_multi *multi);
int ob_multi_wait(ob_multi *multi);
/* Waits, then forgets the copies; the parts' batches stay for the next submit. */
int ob_multi_reset(ob_multi *multi);
/* The parts' statistics of the last submit, summed; copies_added is the caller's count. */
void ob_multi_stats(const ob_multi *multi, ompbatch_stats *out);
/* Forgets what the parts learnt about memory, whatever their state (a part a failed submit
 * never reached still holds its copies: the next submit refills it). */
void ob_multi_forget_memory(ob_multi *multi);
/* Waits and frees everything; returns the first failure. */
int ob_multi_destroy(ob_multi *multi);

/* The operations above as a batch calls them (batch.h). */
extern const ob_multi_ops ob_multi_spread;

#endif
