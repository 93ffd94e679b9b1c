/* How the hook moves bytes: what executes an OpenMP device's copies (a CUDA device or, for
 * LLVM's host-offload devices, memcpy), and one batch per construct through the library's
 * batch objects, one per thread and device. */
#ifndef OMPBATCH_PLUGIN_HOOK_COPY_H
#define OMPBATCH_PLUGIN_HOOK_COPY_H

#include <stddef.h>
#include <stdint.h>

struct ob_rect;

/* One copy of a construct: `bytes` contiguous bytes, or with `rect` a rectangle of that many
 * compact bytes laid out by its walks from dst and src (a strided item's pieces). */
typedef struct ob_hook_copy {
    void *dst;
    const void *src;
    size_t bytes;
    int to_device;    /* 1: host to device; 0: device to host */
    const struct ob_rect *rect;
} ob_hook_copy;

/* Decides once per OpenMP device, from an address libomptarget gave for it, which device
 * executes its copies. Returns 1 when the hook can copy for the device, 0 when it must
 * forward (an address on another CUDA device than libomptarget 16's numbering implies, or
 * memory of a kind the hook does not expect); the reason goes to the verbose log once. */
int ob_hook_device_usable(int device, uintptr_t device_address);

/* Runs the copies for OpenMP device `device` as one batch and waits for them; label names the
 * submission in NVTX ranges (may be NULL). Returns OMPBATCH_OK, or the failing status
 * (ompbatch_last_error says which copy): the caller then has the runtime make the copies
 * instead. */
int ob_hook_copy_run(int device, const char *label, const ob_hook_copy *copies, size_t count);

/* A host buffer for bytes a construct copies out of a device before it may write them where
 * they belong: pinned staging of the device's pool when the device copies through CUDA (the
 * device's copies land in it directly, no staging of their own), else malloc'd memory. */
typedef struct ob_hook_buffer {
    unsigned char *bytes;
    struct ob_staging *region; /* the staging region holding it, or NULL */
} ob_hook_buffer;

/* Returns 0 with out->bytes holding at least `bytes`, or -1 when no memory is to be had. */
int ob_hook_buffer_get(int device, size_t bytes, ob_hook_buffer *out);

/* Gives the buffer back (its copies have been waited for). */
void ob_hook_buffer_put(ob_hook_buffer *buffer);

/* Drops what this thread's batches learnt about device memory: called after the runtime may
 * have freed device memory (ends, disassociations). Host entries and other threads' batches
 * stay: a stale kind only costs speed, because hook batches never let the copy kernel touch
 * host memory in place (ob_batch_set_hook_mode). */
void ob_hook_copy_forget_memory(void);

/* Registers [host, host + bytes) with the driver for OpenMP device `device` (portable: every
 * context sees it pinned), so that its copies go straight between the program's pages and the
 * device. Only for a device that copies through CUDA. Returns OMPBATCH_OK, or the status of
 * the refusal (ompbatch_last_error says why); the caller logs it. Either way every batch
 * learns memory kinds and plans anew (ob_mem_host_changed). */
int ob_hook_copy_register(int device, void *host, size_t bytes);

/* Undoes ob_hook_copy_register for the range starting at host. Returns OMPBATCH_OK or the
 * driver's refusal. */
int ob_hook_copy_unregister(int device, void *host);

/* Frees this thread's batches and staging and forgets every device verdict. For tests that
 * switch drivers; not thread-safe. */
void ob_hook_copy_reset_for_testing(void);

#endif
