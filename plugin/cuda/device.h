/* Turns OpenMP device numbers into what executes their copies. */
#ifndef OMPBATCH_PLUGIN_DEVICE_H
#define OMPBATCH_PLUGIN_DEVICE_H

typedef enum ob_device_kind {
    OB_DEVICE_HOST = 0,     /* the initial device */
    OB_DEVICE_CUDA,         /* a CUDA device: ordinal is its CUDA ordinal */
    OB_DEVICE_HOST_OFFLOAD  /* an OpenMP device that is not CUDA (host offload): memcpy */
} ob_device_kind;

typedef struct ob_device {
    ob_device_kind kind;
    int ordinal;    /* CUDA ordinal, or -1 */
    int number;     /* the OpenMP device number as given */
} ob_device;

#include <stddef.h>

/* Resolves an OpenMP device number; `what` names the argument in the error message. */
int ob_device_resolve(int device_num, const char *what, ob_device *out);

/* How many times ob_device_resolve ran in the process (tests: a copy's numbers are resolved
 * once per side at most). */
size_t ob_device_resolutions_for_testing(void);

#endif
