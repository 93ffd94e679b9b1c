#ifndef OMPBATCH_PLUGIN_NVTX_H
#define OMPBATCH_PLUGIN_NVTX_H

/* NVTX ranges around submissions, so that Nsight Systems (or any NVTX tool) shows each batch
 * of the library, named with its construct or batch and its copy count, in the "ompbatch"
 * domain. The NVTX 3 headers of the CUDA toolkit load the tool's injection library at the
 * first NVTX call; the library makes none, and formats no name, unless a tool is attached
 * (NVTX_INJECTION64_PATH set) and OMPBATCH_NVTX is not 0. */

/* 1 when submissions should be ranged. */
int ob_nvtx_active(void);

/* A range on the calling thread; ob_nvtx_pop ends the innermost one. */
void ob_nvtx_push(const char *name);
void ob_nvtx_pop(void);

#endif
