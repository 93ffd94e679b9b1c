#include "plugin/api/multi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/api/batch.h"
#include "plugin/core/alloc.h"
#include "plugin/core/error.h"
#include "plugin/core/log.h"
#include "plugin/core/sort.h"
#include "plugin/cuda/driver.h"
#include "plugin/cuda/memkind.h"
#include "plugin/cuda/peers.h"

/* The copies one device runs: a batch of its own for its host <-> device and on-device copies,
 * and the peer copies it sends to other GPUs. index maps a part's copy to the caller's. */
typedef struct part {
    ompbatch_batch *batch;
    size_t *index;
    size_t count, capacity;
    size_t *peers; /* the caller's indices of the peer copies this device sends */
    size_t peer_count, peer_capacity;
    int submitted, peers_sent;
} part;

struct ob_multi {
    ob_device home;
    ompbatch_batch_options options;
    ob_cost_models_fn cost_models; /* the batch's, for its parts */
    ob_multi_copy *copies;
    size_t count, capacity;
    part *parts;      /* one per CUDA ordinal; parts[0] also runs host-to-host copies */
    int part_count;
    ob_mem_cache cache; /* for checking peer copies' memory */
    size_t peer_copies, peer_bytes, peer_calls; /* of the last submit */
    size_t zero_copies;                         /* of the last submit: skipped */
};

int ob_multi_create(ob_multi **out, const ob_device *home, const ompbatch_batch_options *options,
                    ob_cost_models_fn cost_models)
{
    const ob_driver *driver = ob_driver_get();
    int devices = driver->loaded && driver->device_count > 0 ? driver->device_count : 1;
    ob_multi *m = ob_calloc(1, sizeof(*m));
    part *parts = ob_calloc((size_t)devices, sizeof(*parts));
    if (m == NULL || parts == NULL) {
        free(m);
        free(parts);
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot allocate a multi-device batch");
    }
    m->parts = parts;
    m->part_count = devices;
    m->home = *home;
    m->options = *options;
    m->cost_models = cost_models;
    *out = m;
    return OMPBATCH_OK;
}

size_t ob_multi_count(const ob_multi *multi)
{
    return multi->count;
}

static int grow(void **array, size_t *capacity, size_t needed, size_t item)
{
    if (ob_grow(array, capacity, needed, item) != 0)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot grow a multi-device batch to %zu copies",
                       needed);
    return OMPBATCH_OK;
}

int ob_multi_add(ob_multi *multi, const ob_multi_copy *copy)
{
    int status = grow((void **)&multi->copies, &multi->capacity, multi->count + 1,
                      sizeof(*multi->copies));
    if (status == OMPBATCH_OK)
        multi->copies[multi->count++] = *copy;
    return status;
}

static int is_gpu(const ob_device *d)
{
    return d->kind == OB_DEVICE_CUDA;
}

static int is_peer(const ob_multi_copy *c)
{
    return is_gpu(&c->dst_device) && is_gpu(&c->src_device) &&
           c->dst_device.ordinal != c->src_device.ordinal;
}

/* The device whose stream runs a copy: the GPU side of a host <-> GPU copy, the source of a
 * copy between GPUs, the batch's own device for host-to-host copies. */
static const ob_device *runner(const ob_multi *m, const ob_multi_copy *c)
{
    if (is_gpu(&c->src_device))
        return &c->src_device;
    if (is_gpu(&c->dst_device))
        return &c->dst_device;
    return &m->home;
}

/* ---- copies of different parts must not share memory ------------------------------------- */

typedef struct span {
    uintptr_t start, end;
    unsigned who;  /* 2 * ordinal, + 1 for the device's peer copies */
    int writes;
    size_t index;
} span;

static int by_start(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The spans seen so far that reach furthest, for two different owners: any span still open
 * whose owner differs from a given one is found among these two. */
typedef struct furthest {
    const span *first;  /* the span reaching furthest */
    const span *second; /* the one reaching furthest among other owners than first's */
} furthest;

static void note_furthest(furthest *f, const span *s)
{
    if (f->first == NULL || s->end > f->first->end) {
        if (f->first != NULL && f->first->who != s->who)
            f->second = f->first;
        f->first = s;
    } else if (s->who != f->first->who && (f->second == NULL || s->end > f->second->end)) {
        f->second = s;
    }
}

/* A span of f still open at s's start whose owner is not s's, or NULL. */
static const span *open_other(const furthest *f, const span *s)
{
    const span *c = f->first != NULL && f->first->who == s->who ? f->second : f->first;
    return c != NULL && c->end > s->start ? c : NULL;
}

static int refuse_pair(const span *a, const span *b)
{
    size_t first = a->index < b->index ? a->index : b->index;
    size_t second = a->index ^ b->index ^ first;
    return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                   "copies %zu and %zu run on different devices' streams and touch the same "
                   "memory at %#lx, one writing it; their order would not be kept: put them in "
                   "separate batches",
                   first, second, (unsigned long)(a->start > b->start ? a->start : b->start));
}

/* The parts run concurrently, so the order of two copies of different parts that touch the
 * same bytes (one writing) is not kept: refuse, naming both. Same-part copies are ordered by
 * the part's own planner (or, for peer copies, by their stream). One sweep in address order:
 * a span conflicts with an earlier one of another owner exactly when such a writer is still
 * open (or, for a writer, any such span), and the furthest-reaching two of different owners
 * answer that, so no pair is ever listed. */
static int check_conflicts(const ob_multi *m)
{
    size_t n = 0;
    span *spans = ob_malloc((2 * m->count + 1) * sizeof(*spans));
    if (spans == NULL)
        return ob_fail(OMPBATCH_ERR_NO_MEMORY, "cannot check %zu copies for conflicts",
                       m->count);
    for (size_t i = 0; i < m->count; i++) {
        const ob_multi_copy *c = &m->copies[i];
        if (c->bytes == 0)
            continue;
        /* Multi-device batches are CUDA devices' (batch.c), so every copy has a GPU runner. */
        unsigned who = 2u * (unsigned)runner(m, c)->ordinal + (is_peer(c) ? 1u : 0u);
        spans[n++] = (span){c->dst, c->dst + c->bytes, who, 1, i};
        spans[n++] = (span){c->src, c->src + c->bytes, who, 0, i};
    }
    ob_sort_unless_sorted(spans, n, sizeof(*spans), by_start);
    furthest writers = {NULL, NULL}, any = {NULL, NULL};
    int status = OMPBATCH_OK;
    for (size_t s = 0; s < n && status == OMPBATCH_OK; s++) {
        const span *other = open_other(&writers, &spans[s]);
        if (other == NULL && spans[s].writes)
            other = open_other(&any, &spans[s]);
        if (other != NULL)
            status = refuse_pair(other, &spans[s]);
        note_furthest(&any, &spans[s]);
        if (spans[s].writes)
            note_furthest(&writers, &spans[s]);
    }
    free(spans);
    return status;
}

/* ---- splitting into parts ----------------------------------------------------------------- */

static int part_batch(ob_multi *m, const ob_device *device, part *p)
{
    if (p->batch != NULL)
        return OMPBATCH_OK;
    int status = ob_batch_create_on(&p->batch, device, NULL, &m->options);
    if (status != OMPBATCH_OK)
        return ob_fail_context(status, "device %d's part: ", device->number);
    ob_batch_set_cost_models(p->batch, m->cost_models);
    return OMPBATCH_OK;
}

/* A failure of part p names its copy by the part's numbering: say which of the caller's copies
 * that is, keeping the rest of the message. */
static int translate(int status, const part *p, int device_number)
{
    size_t k = 0;
    if (ob_error_copy(&k) && k < p->count)
        return ob_error_renumber_copy(status, p->index[k], " (in device %d's part)",
                                      device_number);
    return ob_fail_context(status, "device %d's part: ", device_number);
}

/* Fills the parts from the copies, in the caller's order. */
static int distribute(ob_multi *m)
{
    for (int d = 0; d < m->part_count; d++) {
        part *p = &m->parts[d];
        p->count = p->peer_count = 0;
        p->submitted = p->peers_sent = 0;
        if (p->batch != NULL) {
            int status = ompbatch_batch_reset(p->batch);
            if (status != OMPBATCH_OK)
                return status;
        }
    }
    m->zero_copies = 0;
    for (size_t i = 0; i < m->count; i++) {
        const ob_multi_copy *c = &m->copies[i];
        /* Zero-byte copies are skipped, as in any batch: their pointers may be NULL, and a
         * part's planner would see NULL as pageable host memory. */
        if (c->bytes == 0) {
            m->zero_copies++;
            continue;
        }
        const ob_device *run = runner(m, c);
        int at = is_gpu(run) ? run->ordinal : 0;
        if (at < 0 || at >= m->part_count) /* devices are resolved against the same count */
            return ob_fail_copy(OMPBATCH_ERR_INVALID_DEVICE, i,
                                "CUDA device %d is not one of the driver's %d", at,
                                m->part_count);
        part *p = &m->parts[at];
        int status;
        if (is_peer(c)) {
            status = grow((void **)&p->peers, &p->peer_capacity, p->peer_count + 1,
                          sizeof(*p->peers));
            if (status != OMPBATCH_OK)
                return status;
            p->peers[p->peer_count++] = i;
            continue;
        }
        if ((status = part_batch(m, run, p)) != OMPBATCH_OK ||
            (status = grow((void **)&p->index, &p->capacity, p->count + 1, sizeof(*p->index))) !=
                OMPBATCH_OK)
            return status;
        int dst = is_gpu(&c->dst_device) ? run->number : OMPBATCH_HOST_DEVICE;
        int src = is_gpu(&c->src_device) ? run->number : OMPBATCH_HOST_DEVICE;
        p->index[p->count++] = i;
        status = ompbatch_batch_add(p->batch, (void *)c->dst, dst, (const void *)c->src, src,
                                    c->bytes, c->map_type);
        if (status != OMPBATCH_OK)
            return translate(status, p, run->number);
    }
    return OMPBATCH_OK;
}

/* ---- peer copies ---------------------------------------------------------------------------- */

/* A peer copy's side must be device memory of the device named, the whole range inside one
 * allocation. */
static int check_peer_side(ob_multi *m, size_t index, const char *what, uintptr_t ptr,
                           size_t bytes, const ob_device *device)
{
    ob_mem_info info;
    int status = ob_mem_classify(ob_driver_get(), &m->cache, ptr, &info);
    if (status != OMPBATCH_OK)
        return ob_fail_in_copy(status, index);
    if (info.kind != OB_MEM_DEVICE || info.ordinal != device->ordinal)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, index,
                            "%s %#lx is %s memory%s, not device memory of device %d", what,
                            (unsigned long)ptr, ob_mem_kind_name(info.kind),
                            info.kind == OB_MEM_DEVICE ? " of another device" : "", device->number);
    if (info.range_size > 0 && ptr - info.range_start + bytes > info.range_size)
        return ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, index,
                            "%s %#lx + %zu bytes runs past the end of its allocation", what,
                            (unsigned long)ptr, bytes);
    return OMPBATCH_OK;
}

/* Sends device `ordinal`'s peer copies on its library stream, in the caller's order. */
static int send_peers(ob_multi *m, int ordinal, part *p)
{
    const ob_driver *driver = ob_driver_get();
    CUstream stream;
    int status = ob_driver_push_context(ordinal);
    if (status != OMPBATCH_OK)
        return status;
    if ((status = ob_driver_own_stream(ordinal, &stream)) == OMPBATCH_OK) {
        for (size_t k = 0; k < p->peer_count && status == OMPBATCH_OK; k++) {
            const ob_multi_copy *c = &m->copies[p->peers[k]];
            ob_peers_enable(driver, ordinal, c->dst_device.ordinal);
            status = OB_CU(driver, cuMemcpyAsync, (CUdeviceptr)c->dst, (CUdeviceptr)c->src,
                           c->bytes, stream);
            if (status != OMPBATCH_OK)
                status = ob_fail_copy_context(status, p->peers[k], " (device %d to device %d)",
                                              c->src_device.number, c->dst_device.number);
            m->peer_calls++;
            if (status == OMPBATCH_OK) {
                m->peer_copies++;
                m->peer_bytes += c->bytes;
            }
        }
        p->peers_sent = 1; /* even after a failure: what was enqueued must be waited for */
    }
    return ob_driver_pop_context_after(status);
}

static int wait_peers(int ordinal)
{
    const ob_driver *driver = ob_driver_get();
    CUstream stream;
    int status = ob_driver_push_context(ordinal);
    if (status != OMPBATCH_OK)
        return status;
    if ((status = ob_driver_own_stream(ordinal, &stream)) == OMPBATCH_OK)
        status = OB_CU(driver, cuStreamSynchronize, stream);
    return ob_driver_pop_context_after(status);
}

/* ---- submit and wait ---------------------------------------------------------------------- */

int ob_multi_wait(ob_multi *multi)
{
    int first = OMPBATCH_OK;
    for (int d = 0; d < multi->part_count; d++) {
        part *p = &multi->parts[d];
        int status = OMPBATCH_OK;
        if (p->submitted) {
            status = ompbatch_batch_wait(p->batch);
            if (status != OMPBATCH_OK)
                status = translate(status, p, ob_batch_device_number(p->batch));
            p->submitted = 0;
        }
        if (p->peers_sent) {
            int waited = wait_peers(d);
            status = status != OMPBATCH_OK ? status : waited;
            p->peers_sent = 0;
        }
        if (first == OMPBATCH_OK)
            first = status;
    }
    return first;
}

int ob_multi_submit(ob_multi *multi)
{
    multi->peer_copies = multi->peer_bytes = multi->peer_calls = 0;
    int status = check_conflicts(multi);
    if (status == OMPBATCH_OK)
        status = distribute(multi);
    for (int d = 0; d < multi->part_count && status == OMPBATCH_OK; d++) {
        part *p = &multi->parts[d];
        for (size_t k = 0; k < p->peer_count && status == OMPBATCH_OK; k++) {
            const ob_multi_copy *c = &multi->copies[p->peers[k]];
            status = check_peer_side(multi, p->peers[k], "src", c->src, c->bytes,
                                     &c->src_device);
            if (status == OMPBATCH_OK)
                status = check_peer_side(multi, p->peers[k], "dst", c->dst, c->bytes,
                                         &c->dst_device);
        }
    }
    /* Every part is checked by its planner before its copies start; a failing part stops the
     * ones after it, and those already started are waited for below. */
    for (int d = 0; d < multi->part_count && status == OMPBATCH_OK; d++) {
        part *p = &multi->parts[d];
        if (p->count > 0) {
            status = ompbatch_batch_submit(p->batch);
            p->submitted = 1;
            if (status != OMPBATCH_OK)
                status = translate(status, p, ob_batch_device_number(p->batch));
        }
        if (status == OMPBATCH_OK && p->peer_count > 0)
            status = send_peers(multi, d, p);
    }
    if (status != OMPBATCH_OK) {
        ob_error_saved failure;
        ob_error_save(&failure);
        (void)ob_multi_wait(multi); /* nothing may still run when the failure is reported */
        return ob_error_restore(status, &failure);
    }
    return OMPBATCH_OK;
}

int ob_multi_reset(ob_multi *multi)
{
    int status = ob_multi_wait(multi);
    multi->count = 0;
    return status;
}

void ob_multi_stats(const ob_multi *multi, ompbatch_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->struct_size = sizeof(*out);
    for (int d = 0; d < multi->part_count; d++) {
        const part *p = &multi->parts[d];
        if (p->batch == NULL || p->count == 0)
            continue;
        ompbatch_stats s;
        memset(&s, 0, sizeof(s));
        s.struct_size = sizeof(s);
        if (ompbatch_batch_get_stats(p->batch, &s) != OMPBATCH_OK)
            continue;
#define OB_SUM_(field) out->field += s.field;
#define OB_OR_(field) out->field |= s.field;
        OMPBATCH_STATS_LIST(OB_SUM_, OB_OR_)
#undef OB_SUM_
#undef OB_OR_
    }
    out->copies_zero += multi->zero_copies;
    out->copies_planned += multi->peer_calls;
    out->driver_calls += multi->peer_calls;
    out->copies_done += multi->peer_copies;
    out->bytes += multi->peer_bytes;
    if (multi->peer_calls > 0)
        out->paths |= OMPBATCH_PATH_PER_COPY;
    /* The parts' own adds (and the plans they reused) are not the caller's. */
    out->copies_added = multi->count;
    out->plan_reused = 0;
}

void ob_multi_forget_memory(ob_multi *multi)
{
    ob_mem_cache_clear(&multi->cache);
    for (int d = 0; d < multi->part_count; d++)
        if (multi->parts[d].batch != NULL)
            ob_batch_forget_memory_now(multi->parts[d].batch);
}

int ob_multi_destroy(ob_multi *multi)
{
    if (multi == NULL)
        return OMPBATCH_OK;
    int first = ob_multi_wait(multi);
    for (int d = 0; d < multi->part_count; d++) {
        part *p = &multi->parts[d];
        first = ob_batch_destroy_after(p->batch, first);
        free(p->index);
        free(p->peers);
    }
    ob_mem_cache_free(&multi->cache);
    free(multi->copies);
    free(multi->parts);
    free(multi);
    return first;
}

const ob_multi_ops ob_multi_spread = {
    .create = ob_multi_create,
    .add = ob_multi_add,
    .count = ob_multi_count,
    .submit = ob_multi_submit,
    .wait = ob_multi_wait,
    .reset = ob_multi_reset,
    .stats = ob_multi_stats,
    .forget_memory = ob_multi_forget_memory,
    .destroy = ob_multi_destroy,
};
