#define _GNU_SOURCE
#include "plugin/hook/hook_runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/phase_time.h"

static ob_hook_runtime runtime;
static pthread_once_t runtime_once = PTHREAD_ONCE_INIT;

/* The definition after ours in lookup order, at libomptarget's symbol version: plain
 * dlsym(RTLD_NEXT) would return the default version, which need not be the one the compiler
 * bound to. Falls back to the unversioned look-up for runtimes without symbol versions. */
static void *next_symbol(const char *name)
{
    void *sym = dlvsym(RTLD_NEXT, name, "VERS1.0");
    return sym != NULL ? sym : dlsym(RTLD_NEXT, name);
}

/* libomptarget's soname carries its LLVM major version: libomptarget.so.16, .so.19.1. */
static int version_from_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    const char *prefix = "libomptarget.so.";
    if (strncmp(base, prefix, strlen(prefix)) != 0)
        return 0;
    return atoi(base + strlen(prefix));
}

static void remember_missing(const char *name)
{
    if (runtime.missing[0] == '\0')
        snprintf(runtime.missing, sizeof(runtime.missing), "%s", name);
}

#define FIND(field, name)                                                                       \
    do {                                                                                        \
        *(void **)&runtime.field = next_symbol(name);                                           \
        if (runtime.field == NULL)                                                              \
            remember_missing(name);                                                             \
    } while (0)

static void look_up(void)
{
    FIND(begin, "__tgt_target_data_begin_mapper");
    FIND(end, "__tgt_target_data_end_mapper");
    FIND(update, "__tgt_target_data_update_mapper");
    FIND(begin_nowait, "__tgt_target_data_begin_nowait_mapper");
    FIND(end_nowait, "__tgt_target_data_end_nowait_mapper");
    FIND(update_nowait, "__tgt_target_data_update_nowait_mapper");
    FIND(kernel, "__tgt_target_kernel");
    FIND(register_lib, "__tgt_register_lib");
    FIND(register_requires, "__tgt_register_requires");
    FIND(associate_ptr, "omp_target_associate_ptr");
    FIND(disassociate_ptr, "omp_target_disassociate_ptr");
    FIND(is_present, "omp_target_is_present");
    FIND(get_mapped_ptr, "omp_get_mapped_ptr");
    FIND(get_num_devices, "omp_get_num_devices");
    *(void **)&runtime.push_mapper_component = next_symbol("__tgt_push_mapper_component");
    /* The default device is libomp's ICV, not libomptarget's: look it up process-wide. */
    *(void **)&runtime.get_default_device = dlsym(RTLD_DEFAULT, "omp_get_default_device");
    if (runtime.get_default_device == NULL)
        remember_missing("omp_get_default_device");
    runtime.complete = runtime.missing[0] == '\0';
    runtime.present = runtime.begin != NULL || runtime.end != NULL || runtime.update != NULL ||
                      runtime.begin_nowait != NULL || runtime.end_nowait != NULL ||
                      runtime.update_nowait != NULL || runtime.kernel != NULL ||
                      runtime.register_lib != NULL || runtime.register_requires != NULL;
    Dl_info info;
    if (runtime.begin != NULL && dladdr((void *)runtime.begin, &info) != 0 &&
        info.dli_fname != NULL) {
        snprintf(runtime.path, sizeof(runtime.path), "%s", info.dli_fname);
        runtime.major = version_from_path(info.dli_fname);
        runtime.version = ob_runtime_version_find(runtime.major);
    }
}

const ob_hook_runtime *ob_hook_runtime_get(void)
{
    pthread_once(&runtime_once, look_up);
    return &runtime;
}

int ob_hook_runtime_has(const void *ptr, int device)
{
    uint64_t started = ob_phase_start();
    int present = ob_hook_runtime_get()->is_present(ptr, device);
    ob_phase_end(OB_PHASE_QUERY, started);
    return present;
}

void *ob_hook_runtime_mapped(const void *ptr, int device)
{
    uint64_t started = ob_phase_start();
    void *mapped = ob_hook_runtime_get()->get_mapped_ptr(ptr, device);
    ob_phase_end(OB_PHASE_QUERY, started);
    return mapped;
}
