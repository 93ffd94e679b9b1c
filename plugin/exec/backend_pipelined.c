/* Large copies between pageable host memory and a device, through pinned staging in chunks
 * that overlap: to the device, the pack threads fill chunk k+1 while the copy engine moves
 * chunk k; from it, the copy engine fills chunk k+1 while the threads empty chunk k into the
 * destination. On the H200 the driver's own staging of one pageable copy runs at 6-11 GB/s,
 * while eight threads pack at about 40 GB/s and the link moves 50 GB/s from pinned memory
 * (BENCHMARKS.md); one chunk of each in flight keeps both busy.
 *
 * A step's copies run one after another and are complete when run returns: the staging is
 * given back at once, and a copy from the device has written its destination (nothing is owed
 * at the wait). */
#include <stdint.h>
#include <string.h>

#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/cuda/staging.h"
#include "plugin/cuda/stream_wait.h"
#include "plugin/exec/backend.h"
#include "plugin/exec/host_moves.h"

/* 4 MiB chunks: the pack of one (about 100 us on eight threads, its source not cached) and
 * its copy (80 us) are long against a launch or an event query, and three of them take 12 MiB
 * of the staging cap. */
#define OB_PIPE_CHUNK ((size_t)4 << 20)
#define OB_PIPE_SLOTS 3

typedef struct pipe {
    ob_exec *exec;
    ob_staging *region;
    CUevent done[OB_PIPE_SLOTS]; /* the last copy through each slot has finished */
    size_t events;               /* created */
    int in_flight[OB_PIPE_SLOTS];
} pipe;

static unsigned char *slot_host(const pipe *p, size_t slot)
{
    return p->region->host + slot * OB_PIPE_CHUNK;
}

/* Spins on the slot's event: a chunk takes tens of microseconds, and a blocking wait in
 * libomptarget's blocking-sync context would sleep past it. (Not a phase of its own: the
 * whole pipeline is the submit's.) */
static int slot_wait(pipe *p, size_t slot)
{
    if (!p->in_flight[slot])
        return OMPBATCH_OK;
    const ob_driver *driver = p->exec->driver;
    CUresult r;
    while ((r = driver->fn.cuEventQuery(p->done[slot])) == CUDA_ERROR_NOT_READY)
        ;
    p->in_flight[slot] = 0;
    return ob_cu_check(driver, r, "cuEventQuery");
}

/* Enqueues one chunk's copy through the slot and marks the slot busy until it finished. */
static int slot_copy(pipe *p, size_t slot, CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    ob_exec *exec = p->exec;
    exec->driver_calls += 2;
    int status = OB_CU(exec->driver, cuMemcpyAsync, dst, src, bytes, exec->stream);
    if (status == OMPBATCH_OK)
        status = OB_CU(exec->driver, cuEventRecord, p->done[slot], exec->stream);
    if (status == OMPBATCH_OK) {
        ob_exec_enqueued(exec);
        p->in_flight[slot] = 1;
    }
    return status;
}

static int pipe_open(ob_exec *exec, pipe *p)
{
    memset(p, 0, sizeof(*p));
    p->exec = exec;
    if (ob_staging_acquire(exec->ordinal, OB_PIPE_SLOTS * OB_PIPE_CHUNK, 0, &p->region) !=
        OMPBATCH_OK)
        return OMPBATCH_ERR_NO_MEMORY;
    for (; p->events < OB_PIPE_SLOTS; p->events++) {
        int status = OB_CU(exec->driver, cuEventCreate, &p->done[p->events],
                           CU_EVENT_DISABLE_TIMING);
        if (status != OMPBATCH_OK)
            return status;
    }
    return OMPBATCH_OK;
}

/* Waits for every chunk still in flight, then frees the events and gives the staging back.
 * After a failure (status, or a wait's here) it waits for the whole stream instead, since
 * which chunks still run is not known, and returns that failure. */
static int pipe_close(pipe *p, int status)
{
    ob_exec *exec = p->exec;
    for (size_t slot = 0; slot < p->events && status == OMPBATCH_OK; slot++)
        status = slot_wait(p, slot);
    /* Raw: the first failure keeps its message. */
    if (status != OMPBATCH_OK && p->region != NULL &&
        exec->driver->fn.cuStreamSynchronize(exec->stream) != CUDA_SUCCESS)
        ob_log(1, "device %d: the stream of a failed pipelined copy did not synchronise",
               exec->ordinal);
    /* An event that cannot be destroyed costs a driver object, not a byte of the copy: the
     * copy's status stands, and the failure is logged here only. */
    for (size_t i = 0; i < p->events; i++)
        if (exec->driver->fn.cuEventDestroy(p->done[i]) != CUDA_SUCCESS)
            ob_log(1, "device %d: cannot destroy an event of a pipelined copy", exec->ordinal);
    ob_staging_release(p->region);
    p->region = NULL;
    return status;
}

/* The bytes of the copy's chunk that starts at byte `at`. */
static size_t chunk_bytes(const ob_copy *c, size_t at)
{
    return c->bytes - at < OB_PIPE_CHUNK ? c->bytes - at : OB_PIPE_CHUNK;
}

/* Device -> host: enqueues chunk k of the copy into its slot. */
static int fetch_chunk(pipe *p, const ob_copy *c, size_t k)
{
    size_t slot = k % OB_PIPE_SLOTS, at = k * OB_PIPE_CHUNK;
    return slot_copy(p, slot, (CUdeviceptr)(uintptr_t)slot_host(p, slot),
                     (CUdeviceptr)(c->src + at), chunk_bytes(c, at));
}

/* Pageable host -> device: pack chunk k into its slot once the slot's last copy finished, then
 * enqueue its copy; the pack of the next chunk overlaps it. */
static int to_device(pipe *p, const ob_copy *c, size_t *offset)
{
    for (size_t at = 0, slot = 0; at < c->bytes;
         at += OB_PIPE_CHUNK, slot = (slot + 1) % OB_PIPE_SLOTS) {
        size_t n = chunk_bytes(c, at);
        *offset = at;
        int status = slot_wait(p, slot);
        if (status != OMPBATCH_OK)
            return status;
        ob_host_move pack = {slot_host(p, slot), (const void *)(c->src + at), n, NULL};
        ob_host_moves_run(&pack, 1, OB_MOVE_PACK_STREAMING);
        status = slot_copy(p, slot, (CUdeviceptr)(c->dst + at),
                           (CUdeviceptr)(uintptr_t)slot_host(p, slot), n);
        if (status != OMPBATCH_OK)
            return status;
    }
    return OMPBATCH_OK;
}

/* Device -> pageable host: the first chunks go out into every slot; then each chunk, once its
 * copy finished, is unpacked and its slot takes the next chunk not yet enqueued. */
static int from_device(pipe *p, const ob_copy *c, size_t *offset)
{
    size_t chunks = (c->bytes + OB_PIPE_CHUNK - 1) / OB_PIPE_CHUNK, next = 0;
    int status = OMPBATCH_OK;
    for (; next < chunks && next < OB_PIPE_SLOTS && status == OMPBATCH_OK; next++) {
        *offset = next * OB_PIPE_CHUNK;
        status = fetch_chunk(p, c, next);
    }
    for (size_t k = 0; k < chunks && status == OMPBATCH_OK; k++) {
        size_t slot = k % OB_PIPE_SLOTS, at = k * OB_PIPE_CHUNK;
        *offset = at;
        if ((status = slot_wait(p, slot)) != OMPBATCH_OK)
            break;
        ob_host_move unpack = {(void *)(c->dst + at), slot_host(p, slot), chunk_bytes(c, at),
                              NULL};
        ob_host_moves_run(&unpack, 1, OB_MOVE_UNPACK);
        if (next < chunks) {
            *offset = next * OB_PIPE_CHUNK;
            status = fetch_chunk(p, c, next++);
        }
    }
    return status;
}

static int pipelined_run(ob_exec *exec, const ob_plan *plan, const ob_step *step)
{
    for (size_t i = step->begin; i < step->end; i++) {
        const ob_copy *c = &plan->copies[i];
        /* A source the stream may still be writing is read once the stream passed it. */
        int status = OMPBATCH_OK;
        if (c->dst_side == OB_SIDE_DEVICE &&
            c->attr.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM && exec->stream_busy &&
            (status = ob_stream_wait(exec->driver, exec->stream)) != OMPBATCH_OK)
            return ob_fail_in_copy(status, c->index);
        pipe p;
        status = pipe_open(exec, &p);
        if (status == OMPBATCH_ERR_NO_MEMORY && p.region == NULL) {
            /* No staging to be had (OMPBATCH_STAGING_MB): the driver copies it, as before. */
            (void)pipe_close(&p, OMPBATCH_OK);
            ob_step one = *step;
            one.begin = i;
            one.end = i + 1;
            exec->staged.refused++;
            exec->staged.paths |= OMPBATCH_PATH_PER_COPY;
            if ((status = ob_backend_cuda_per_copy.run(exec, plan, &one)) != OMPBATCH_OK)
                return status;
            continue;
        }
        size_t offset = 0;
        if (status != OMPBATCH_OK)
            status = ob_fail_copy_context(status, c->index, " (pipelined, its events)");
        else if ((status = c->dst_side == OB_SIDE_DEVICE ? to_device(&p, c, &offset)
                                                         : from_device(&p, c, &offset)) !=
                 OMPBATCH_OK)
            status = ob_fail_copy_context(status, c->index, " (pipelined, the chunk at byte %zu)",
                                          offset);
        int closed = pipe_close(&p, status);
        if (status == OMPBATCH_OK && closed != OMPBATCH_OK)
            status = ob_fail_copy_context(closed, c->index, " (pipelined, its last chunks)");
        if (status != OMPBATCH_OK)
            return status;
        exec->staged.paths |= OMPBATCH_PATH_STAGED;
        exec->staged.bytes += c->bytes;
        exec->staged.copies++;
        exec->done++;
    }
    return OMPBATCH_OK;
}

const ob_backend_ops ob_backend_cuda_pipelined = OB_BACKEND_RUN_ONLY("cuda-pipelined",
                                                                      pipelined_run);
