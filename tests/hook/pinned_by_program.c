/*
 * The OpenMP hook test of a program that page-locks its own mapped arrays with the CUDA driver
 * (cuMemHostRegister), as programs that also call CUDA libraries do, and unlocks and locks
 * them again while they stay mapped.
 *
 * The hook sorts host memory into pageable and pinned by asking the driver, and keeps what it
 * learnt across constructs: an array registered by the program counts as pinned (its bytes are
 * still packed, never read in place), and once the program unregisters it, what the hook kept
 * about it is out of date. Neither may change a byte: every update and region is checked on
 * both sides. Without a usable CUDA driver (host offload, CPU machines) nothing is registered
 * and the program is one more test of updates and regions; it says which in its output, the
 * same for every variant compare.sh runs.
 *
 * Usage: pinned_by_program <seed> [steps]   (default 12: registered from the start, unregistered
 * at a third of the steps, the large array registered again at two thirds)
 */
#include <dlfcn.h>

#include "hook_test.h"

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_primary_retain_fn)(void **, int);
typedef int (*cu_ctx_push_fn)(void *);
typedef int (*cu_ctx_pop_fn)(void **);
typedef int (*cu_host_register_fn)(void *, size_t, unsigned int);
typedef int (*cu_host_unregister_fn)(void *);

#define CU_MEMHOSTREGISTER_PORTABLE 0x01

/* The driver entry points the program uses itself, NULL where there is no driver. */
typedef struct program_cuda {
    void *context; /* device 0's primary context, retained for the program's whole run */
    cu_ctx_push_fn push;
    cu_ctx_pop_fn pop;
    cu_host_register_fn host_register;
    cu_host_unregister_fn host_unregister;
} program_cuda;

static int open_cuda(program_cuda *cuda)
{
    memset(cuda, 0, sizeof(*cuda));
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return 0;
    cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
    cu_device_get_fn device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
    cu_primary_retain_fn retain = (cu_primary_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
    cuda->push = (cu_ctx_push_fn)dlsym(lib, "cuCtxPushCurrent_v2");
    cuda->pop = (cu_ctx_pop_fn)dlsym(lib, "cuCtxPopCurrent_v2");
    cuda->host_register = (cu_host_register_fn)dlsym(lib, "cuMemHostRegister_v2");
    cuda->host_unregister = (cu_host_unregister_fn)dlsym(lib, "cuMemHostUnregister");
    int device = 0;
    if (init == NULL || device_get == NULL || retain == NULL || cuda->push == NULL ||
        cuda->pop == NULL || cuda->host_register == NULL || cuda->host_unregister == NULL ||
        init(0) != 0 || device_get(&device, 0) != 0 || retain(&cuda->context, device) != 0) {
        memset(cuda, 0, sizeof(*cuda));
        return 0; /* the library stays loaded: a driver once initialised is not unloaded */
    }
    return 1;
}

/* Registers (lock != 0) or unregisters p[0:n] in device 0's primary context; a failure is the
 * test's. Nothing without a driver. */
static void set_locked(program_cuda *cuda, void *p, size_t n, int lock, const char *what)
{
    if (cuda->context == NULL)
        return;
    void *popped = NULL;
    OB_CHECK_EQ(0, cuda->push(cuda->context));
    int r = lock ? cuda->host_register(p, n, CU_MEMHOSTREGISTER_PORTABLE)
                 : cuda->host_unregister(p);
    OB_CHECK(r == 0, "%s: cuMemHost%sregister of %zu bytes failed (CUresult %d)", what,
             lock ? "" : "Un", n, r);
    OB_CHECK_EQ(0, cuda->pop(&popped));
}

/* The device copy of a changes every byte, and a region maps small[0:m] tofrom and turns
 * each of its bytes into the sum of itself and a's byte at the same index. */
static void work_on_device(ht_buf *a, ht_buf *small, uint64_t tag)
{
    ht_buf_scramble(a, 0, a->n, tag);
    unsigned char *ap = a->p, *sp = small->p;
    size_t m = small->n;
#pragma omp target teams distribute parallel for map(alloc : ap[0:m]) map(tofrom : sp[0:m])
    for (size_t j = 0; j < m; j++)
        sp[j] = (unsigned char)(sp[j] + ap[j]);
    for (size_t j = 0; j < m; j++) {
        small->dev[j] = (unsigned char)(small->host[j] + a->dev[j]);
        small->host[j] = small->dev[j];
    }
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "pinned_by_program");
    int steps = argc > 2 ? atoi(argv[2]) : 12;
    if (steps < 3) {
        fprintf(stderr, "pinned_by_program: want at least 3 steps\n");
        return 2;
    }
    program_cuda cuda;
    int locked = open_cuda(&cuda);
    printf("pinned_by_program: %s\n", locked ? "the arrays are registered with the CUDA driver"
                                             : "no CUDA driver here: the arrays stay pageable");
    uint64_t r = ht_state(1);
    /* One large array, and four pieces of one registered block, updated together. */
    size_t n = ((size_t)1 << 20) + ht_below(&r, 4096), piece = 4096 + ht_below(&r, 512);
    ht_buf a = ht_buf_new(n, 2), block = ht_buf_new(4 * piece, 3);
    ht_buf small = ht_buf_new(piece / 2, 4);
    set_locked(&cuda, a.p, a.n, 1, "large array");
    set_locked(&cuda, block.p, block.n, 1, "block");
    unsigned char *ap = a.p, *p0 = block.p, *p1 = p0 + piece, *p2 = p1 + piece,
                  *p3 = p2 + piece;
#pragma omp target enter data map(to : ap[0:n], p0[0:piece], p1[0:piece], p2[0:piece],        \
                                      p3[0:piece])
    int unlock_at = steps / 3, lock_again_at = 2 * steps / 3;
    for (int step = 0; step < steps; step++) {
        if (step == unlock_at) {
            set_locked(&cuda, a.p, a.n, 0, "large array");
            set_locked(&cuda, block.p, block.n, 0, "block");
        }
        if (step == lock_again_at)
            set_locked(&cuda, a.p, a.n, 1, "large array, again");
        uint64_t salt = 100 + 10 * (uint64_t)step;
        ht_buf_host_new(&a, 0, n, salt);
        ht_buf_host_new(&block, 0, block.n, salt + 1);
#pragma omp target update to(ap[0:n], p0[0:piece], p1[0:piece], p2[0:piece], p3[0:piece])
        ht_buf_copied_to(&a, 0, n);
        ht_buf_copied_to(&block, 0, block.n);
        ht_expect_device(ap, a.dev, n, "pinned_by_program: update to, large array");
        for (size_t k = 0; k < 4; k++)
            ht_expect_device(p0 + k * piece, block.dev + k * piece, piece,
                             "pinned_by_program: update to, block");
        ht_buf_host_new(&small, 0, small.n, salt + 2);
        work_on_device(&a, &small, salt + 3);
        ht_expect_host(small.p, small.host, small.n, "pinned_by_program: region tofrom");
        for (size_t k = 0; k < 4; k++)
            ht_buf_scramble(&block, k * piece, piece, salt + 4 + k);
        ht_buf_poison(&a, salt + 8);
        ht_buf_poison(&block, salt + 9);
#pragma omp target update from(p3[0:piece], ap[0:n], p1[0:piece], p0[0:piece], p2[0:piece])
        ht_buf_copied_from(&a, 0, n);
        ht_buf_copied_from(&block, 0, block.n);
        ht_expect_host(ap, a.host, n, "pinned_by_program: update from, large array");
        ht_expect_host(p0, block.host, block.n, "pinned_by_program: update from, block");
    }
    ht_buf_poison(&a, 900);
    ht_buf_poison(&block, 901);
#pragma omp target exit data map(from : ap[0:n], p0[0:piece], p1[0:piece], p2[0:piece],       \
                                     p3[0:piece])
    ht_buf_copied_from(&a, 0, n);
    ht_buf_copied_from(&block, 0, block.n);
    ht_buf_expect_host(&a, "pinned_by_program: exit data from, large array");
    ht_buf_expect_host(&block, "pinned_by_program: exit data from, block");
    set_locked(&cuda, a.p, a.n, 0, "large array, at the end");
    ht_report("pinned_by_program: large array", a.p, a.n);
    ht_report("pinned_by_program: block", block.p, block.n);
    ht_report("pinned_by_program: region array", small.p, small.n);
    ht_buf_free(&a);
    ht_buf_free(&block);
    ht_buf_free(&small);
    return ob_check_finish("pinned_by_program");
}
