#define _GNU_SOURCE
#include "plugin/cuda/omp_runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* The functions once all three were found: filled under the lock, then published by
 * `current`, and never written again, so that threads reading it without the lock see it whole
 * (a refresh after a dlopen may run while another thread reads). Until then `current` is
 * `missing`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ob_omp_runtime found;
static const ob_omp_runtime missing;
static _Atomic(const ob_omp_runtime *) current = &missing;
static const ob_omp_runtime *override;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void look_up(void)
{
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&current, memory_order_relaxed) != &found) {
        /* dlsym returns void *; the round trip through memcpy keeps -Wpedantic quiet about
         * object-to-function pointer casts. */
        ob_omp_runtime seen = {0};
        void *p;
        p = dlsym(RTLD_DEFAULT, "omp_get_mapped_ptr");
        memcpy(&seen.get_mapped_ptr, &p, sizeof(p));
        p = dlsym(RTLD_DEFAULT, "omp_get_initial_device");
        memcpy(&seen.get_initial_device, &p, sizeof(p));
        p = dlsym(RTLD_DEFAULT, "omp_get_num_devices");
        memcpy(&seen.get_num_devices, &p, sizeof(p));
        seen.available = seen.get_mapped_ptr != NULL && seen.get_initial_device != NULL &&
                         seen.get_num_devices != NULL;
        if (seen.available) {
            found = seen;
            atomic_store_explicit(&current, &found, memory_order_release);
        }
    }
    pthread_mutex_unlock(&lock);
}

const ob_omp_runtime *ob_omp_runtime_get(void)
{
    if (override != NULL)
        return override;
    pthread_once(&once, look_up);
    return atomic_load_explicit(&current, memory_order_acquire);
}

const ob_omp_runtime *ob_omp_runtime_refresh(void)
{
    if (override != NULL)
        return override;
    pthread_once(&once, look_up);
    look_up();
    return atomic_load_explicit(&current, memory_order_acquire);
}

void ob_omp_runtime_set_for_testing(const ob_omp_runtime *runtime)
{
    override = runtime;
}
