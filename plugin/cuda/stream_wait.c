#include "plugin/cuda/stream_wait.h"

#include <stdint.h>

#include "plugin/core/clock.h"
#include "plugin/core/config.h"
#include "plugin/core/phase_time.h"

/* Polls the stream for OMPBATCH_WAIT_POLL_US (config.c says why). Returns 1 when it
 * finished, 0 when it is still busy (or the driver has no cuStreamQuery), and a negative
 * status on an error. */
static int poll_stream(const ob_driver *driver, CUstream stream)
{
    uint64_t budget = (uint64_t)ob_config_get()->wait_poll_us * 1000u;
    if (driver->fn.cuStreamQuery == NULL || budget == 0)
        return 0;
    uint64_t start = ob_clock_ns();
    do {
        CUresult r = driver->fn.cuStreamQuery(stream);
        if (r == CUDA_SUCCESS)
            return 1;
        if (r != CUDA_ERROR_NOT_READY)
            return ob_cu_check(driver, r, "cuStreamQuery");
    } while (ob_clock_ns() - start < budget);
    return 0;
}

int ob_stream_wait(const ob_driver *driver, CUstream stream)
{
    uint64_t started = ob_phase_start();
    int polled = poll_stream(driver, stream);
    ob_phase_end(OB_PHASE_POLL, started);
    if (polled != 0)
        return polled < 0 ? polled : OMPBATCH_OK;
    started = ob_phase_start();
    int status = OB_CU(driver, cuStreamSynchronize, stream);
    ob_phase_end(OB_PHASE_BLOCK, started);
    return status;
}
