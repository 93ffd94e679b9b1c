#include "plugin/hook/hook_versions.h"

#include <stdio.h>

/* Each row verified against that release's sources (offload/ in 19, openmp/libomptarget/ in
 * 16) and run under the hook's tests on host offload and on the GPU. */
static const ob_runtime_version versions[] = {
    {.major = 16, .kernel_args_max = 2, .requires_in_entries = 0, .update_to_first = 0},
    {.major = 19, .kernel_args_max = 3, .requires_in_entries = 1, .update_to_first = 1},
};

const ob_runtime_version *ob_runtime_version_find(int major)
{
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
        if (versions[i].major == major)
            return &versions[i];
    return NULL;
}

void ob_runtime_versions_known(char *buf, size_t size)
{
    size_t n = sizeof(versions) / sizeof(versions[0]), used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
        int wrote = snprintf(buf + used, size - used, "%s%d", sep, versions[i].major);
        if (wrote < 0)
            break;
        used += (size_t)wrote;
    }
}
