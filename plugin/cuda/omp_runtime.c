#define _GNU_SOURCE
#include "plugin/cuda/omp_runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ob_omp_runtime found;
static const ob_omp_runtime *override;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void look_up(void)
{
    pthread_mutex_lock(&lock);
    if (!found.available) {
        /* dlsym returns void *; the round trip through memcpy keeps -Wpedantic quiet about
         * object-to-function pointer casts. */
        void *p;
        p = dlsym(RTLD_DEFAULT, "omp_get_mapped_ptr");
        memcpy(&found.get_mapped_ptr, &p, sizeof(p));
        p = dlsym(RTLD_DEFAULT, "omp_get_initial_device");
        memcpy(&found.get_initial_device, &p, sizeof(p));
        p = dlsym(RTLD_DEFAULT, "omp_get_num_devices");
        memcpy(&found.get_num_devices, &p, sizeof(p));
        found.available = found.get_mapped_ptr != NULL && found.get_initial_device != NULL &&
                          found.get_num_devices != NULL;
    }
    pthread_mutex_unlock(&lock);
}

const ob_omp_runtime *ob_omp_runtime_get(void)
{
    if (override != NULL)
        return override;
    pthread_once(&once, look_up);
    return &found;
}

const ob_omp_runtime *ob_omp_runtime_refresh(void)
{
    if (override != NULL)
        return override;
    pthread_once(&once, look_up);
    look_up();
    return &found;
}

void ob_omp_runtime_set_for_testing(const ob_omp_runtime *runtime)
{
    override = runtime;
}
