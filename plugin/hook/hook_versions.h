/* The libomptarget releases the hook batches under, one row each, and what differs between
 * them that the hook's code follows. A release not in the table is passed through whole
 * (docs/hook.md, "Runtimes", says why for each one known). Adding a verified release is one
 * row here plus its tests. */
#ifndef OMPBATCH_PLUGIN_HOOK_VERSIONS_H
#define OMPBATCH_PLUGIN_HOOK_VERSIONS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ob_runtime_version {
    int major;                  /* LLVM major version (libomptarget.so.<major>[.<minor>]) */
    uint32_t kernel_args_max;   /* newest KernelArgsTy version its clang passes */
    /* `requires` flags arrive as a host offload entry flagged OB_OFFLOAD_REQUIRES in the table
     * given to __tgt_register_lib (19), not through __tgt_register_requires (16). */
    int requires_in_entries;
    /* Within one update item that is both `to` and `from`: 16 copies from first, 19 to. */
    int update_to_first;
} ob_runtime_version;

/* The row of LLVM `major`, or NULL when the hook does not batch under it. */
const ob_runtime_version *ob_runtime_version_find(int major);

/* The table's majors as words for messages ("16 and 19"), into buf. */
void ob_runtime_versions_known(char *buf, size_t size);

#endif
