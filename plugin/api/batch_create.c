/* ompbatch_batch_create: the options read and checked, the device resolved, and the batch
 * given its device's cost model (cost_models.c) and the multi-device state for copies of
 * other GPUs (multi.c). */
#include <string.h>

#include "plugin/api/batch.h"
#include "plugin/api/cost_models.h"
#include "plugin/api/multi.h"
#include "plugin/core/error.h"
#include "plugin/cuda/device.h"
#include "ompbatch.h"

static int read_options(const ompbatch_batch_options *given, ompbatch_batch_options *out)
{
    memset(out, 0, sizeof(*out));
    out->struct_size = sizeof(*out);
    if (given == NULL)
        return OMPBATCH_OK;
    if (given->struct_size < sizeof(given->struct_size) + sizeof(given->max_copies))
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "options->struct_size is %zu; set it to sizeof(ompbatch_batch_options)",
                       given->struct_size);
    /* A newer header's larger struct is fine as long as the options this library does not
     * know are left at zero (their defaults); otherwise they would be ignored silently. */
    const unsigned char *bytes = (const unsigned char *)given;
    for (size_t i = sizeof(*out); i < given->struct_size; i++) {
        if (bytes[i] != 0)
            return ob_fail(OMPBATCH_ERR_UNSUPPORTED,
                           "options byte %zu is set, but this library (version %d) knows only "
                           "the first %zu bytes of ompbatch_batch_options",
                           i, OMPBATCH_VERSION, sizeof(*out));
    }
    memcpy(out, given, given->struct_size < sizeof(*out) ? given->struct_size : sizeof(*out));
    out->struct_size = sizeof(*out);
    if (out->prefer_overlap != 0 && out->prefer_overlap != 1)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "options->prefer_overlap is %d; use 0 or 1",
                       out->prefer_overlap);
    if (out->synchronous != 0 && out->synchronous != 1)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT, "options->synchronous is %d; use 0 or 1",
                       out->synchronous);
    if (out->strategy < OMPBATCH_STRATEGY_DEFAULT || out->strategy > OMPBATCH_STRATEGY_STAGED)
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "options->strategy is %d; use an ompbatch_strategy value (0 to 3)",
                       out->strategy);
    return OMPBATCH_OK;
}

int ompbatch_batch_create(ompbatch_batch **out, int device_num, void *stream,
                          const ompbatch_batch_options *options)
{
    if (out == NULL)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "out is NULL");
    *out = NULL;
    ompbatch_batch_options opts;
    int status = read_options(options, &opts);
    if (status != OMPBATCH_OK)
        return status;
    ob_device device;
    if ((status = ob_device_resolve(device_num, "device_num", &device)) != OMPBATCH_OK)
        return status;
    if ((status = ob_batch_create_on(out, &device, stream, &opts)) != OMPBATCH_OK)
        return status;
    ob_batch_set_cost_models(*out, ob_cost_model_for);
    ob_batch_set_multi(*out, &ob_multi_spread);
    return OMPBATCH_OK;
}
