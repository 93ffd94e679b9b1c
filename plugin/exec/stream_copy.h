/* Copies into pinned staging that the copy engine reads next. */
#ifndef OMPBATCH_PLUGIN_STREAM_COPY_H
#define OMPBATCH_PLUGIN_STREAM_COPY_H

#include <stddef.h>

/* memcpy with non-temporal stores where the CPU has them (x86-64), plain memcpy elsewhere.
 * A bulk copy of staging the CPU has just written with ordinary stores has to pull the dirty
 * lines out of the CPU caches: on the H200 host, 4 MiB packed by 8 threads then took the copy
 * engine 190-208 us against 80-102 us after streaming stores (benchmarks/probes/NOTES.md).
 * Any sizes and alignments; the stores are fenced before it returns, so the bytes are visible
 * to the device (and to other threads) once the caller publishes that the copy is done. */
void ob_copy_streaming(void *dst, const void *src, size_t bytes);

#endif
