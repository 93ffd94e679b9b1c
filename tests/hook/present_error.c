/*
 * The OpenMP hook test of libomptarget's fatal `present` error: after some ordinary mapped
 * work (checked), one construct with the `present` modifier names data that is not mapped (or
 * only partly), and the runtime must stop the program exactly as it does without the hook:
 * same report up to that point, same messages on stderr, same exit status (libomptarget
 * aborts under OMP_TARGET_OFFLOAD=MANDATORY, so the status is SIGABRT's). compare.sh compares
 * the stderr lines that contain "Libomptarget", with addresses masked.
 *
 * Usage: present_error <seed> <mode>, mode one of
 *   update          target update from(present: b[0:n]), b not mapped
 *   update_partial  target update to(present: a[lo:len]), the range running past a's entry
 *   enter           target enter data map(present, to: b[0:n]), b not mapped
 *   exit            target exit data map(present, from: b[0:n]), b not mapped
 *   extension       target enter data map(to: b[0:n]) while b[8:n] is associated with device
 *                   memory (an entry of the runtime's the hook did not see made): not a
 *                   `present` error but its sibling, libomptarget's fatal "explicit extension"
 *   region_extension the same extension by a target region with map(tofrom: b[0:n]), which the
 *                   hook would split if it took b for new: nothing is mapped at b's ends
 *   region_unseen   a target region with map(tofrom: b[0:n]) around b[8:16], which an enter
 *                   data construct the hook forwarded (two items, the second through an alias
 *                   of b, overlapping) mapped
 *   region_while_off the same region around b[8:16], which an enter data construct mapped
 *                   while the hook was switched off (ompbatch_hook_set_enabled, when the
 *                   process has the hook)
 * Prints "present_error: reached the <mode> construct" before it, and if the program survives
 * it, "present_error: no error" and the usual count, exiting 1.
 */
#include <dlfcn.h>

#include "hook_test.h"

/* Ordinary work first, so the hook is active and has batched before the error: enter, update
 * from after a kernel, update to, all checked. Leaves a[0:n] mapped. */
static void mapped_work(ht_buf *a)
{
    unsigned char *p = a->p;
    size_t n = a->n;
#pragma omp target enter data map(to : p[0:n])
    ht_buf_expect(a, 0, n, "before the error: after enter");
    ht_buf_scramble(a, 0, n, 2);
    ht_buf_poison(a, 3);
#pragma omp target update from(p[0:n])
    ht_buf_copied_from(a, 0, n);
    ht_buf_expect(a, 0, n, "before the error: after update from");
    ht_buf_host_new(a, 0, n, 4);
#pragma omp target update to(p[0:n])
    ht_buf_copied_to(a, 0, n);
    ht_buf_expect(a, 0, n, "before the error: after update to");
    ht_report("before the error", a->p, n);
}

/* The construct that must fail; returns only if the runtime let it pass. */
static void trigger(const char *mode, ht_buf *a, ht_buf *b)
{
    unsigned char *p = a->p, *q = b->p;
    size_t n = a->n, nb = b->n;
    size_t lo = n / 2, len = n - lo + 8; /* from the middle of a's entry to 8 bytes past it */
    printf("present_error: reached the %s construct\n", mode);
    fflush(stdout);
    if (strcmp(mode, "update") == 0) {
#pragma omp target update from(present : q[0:nb])
    } else if (strcmp(mode, "update_partial") == 0) {
#pragma omp target update to(present : p[lo:len])
    } else if (strcmp(mode, "enter") == 0) {
#pragma omp target enter data map(present, to : q[0:nb])
    } else if (strcmp(mode, "extension") == 0) {
        int dev = omp_get_default_device();
        void *d = omp_target_alloc(nb - 8, dev);
        if (d == NULL || omp_target_associate_ptr(q + 8, d, nb - 8, 0, dev) != 0) {
            printf("present_error: could not associate b[8:%zu]\n", nb - 8);
            exit(1);
        }
#pragma omp target enter data map(to : q[0:nb])
    } else if (strcmp(mode, "region_extension") == 0 || strcmp(mode, "region_unseen") == 0 ||
               strcmp(mode, "region_while_off") == 0) {
        int dev = omp_get_default_device();
        if (strcmp(mode, "region_while_off") == 0) {
            int (*set_enabled)(int) = NULL;
            void *sym = dlsym(RTLD_DEFAULT, "ompbatch_hook_set_enabled");
            memcpy(&set_enabled, &sym, sizeof(sym));
            if (set_enabled != NULL)
                set_enabled(0);
#pragma omp target enter data map(to : q[8:8])
            if (set_enabled != NULL)
                set_enabled(1);
        } else if (strcmp(mode, "region_extension") == 0) {
            void *d = omp_target_alloc(nb - 16, dev);
            if (d == NULL || omp_target_associate_ptr(q + 8, d, nb - 16, 0, dev) != 0) {
                printf("present_error: could not associate b[8:%zu]\n", nb - 16);
                exit(1);
            }
        } else {
            unsigned char *volatile hidden = q;
            unsigned char *alias = hidden;
#pragma omp target enter data map(to : q[8:8]) map(to : alias[8:8])
        }
        OB_CHECK(!omp_target_is_present(q, dev) && !omp_target_is_present(q + nb - 1, dev),
                 "b's ends are mapped");
#pragma omp target map(tofrom : q[0:nb])
        for (size_t j = 0; j < nb; j++)
            q[j] ^= 1;
    } else if (strcmp(mode, "region") == 0) {
        unsigned char *c = a->host, *d = a->dev; /* fresh, unmapped buffers of n bytes */
#pragma omp target map(present, to : q[0:nb]) map(to : c[0:n], d[0:n]) map(from : p[0:n])
        for (size_t j = 0; j < n; j++)
            p[j] = (unsigned char)(c[j] ^ d[j] ^ q[j % nb]);
    } else {
#pragma omp target exit data map(present, from : q[0:nb])
    }
}

int main(int argc, char **argv)
{
    const char *modes[] = {"update",        "update_partial",   "enter",
                           "exit",          "region",           "extension",
                           "region_extension", "region_unseen", "region_while_off"};
    const char *mode = argc > 2 ? argv[2] : "";
    int known = 0;
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
        known |= strcmp(mode, modes[k]) == 0;
    if (!known) {
        fprintf(stderr,
                "usage: %s <seed> update|update_partial|enter|exit|region|extension|"
                "region_extension|region_unseen|region_while_off\n",
                argv[0]);
        return 2;
    }
    ht_init(argc, argv, "present_error");
    uint64_t r = ht_state(1);
    /* SLACK bytes after a's mapped part keep update_partial's range inside a's allocation. */
    enum { SLACK = 64 };
    ht_buf a = ht_buf_new(ht_between(&r, 16, 5000) + SLACK, 10);
    a.n -= SLACK;
    ht_buf b = ht_buf_new(ht_between(&r, 16, 5000), 11); /* extension associates b[8:] */
    mapped_work(&a);
    OB_CHECK(ht_is_unmapped(b.p, b.n), "b is mapped before the error");
    /* A failure before the error would end with the same abort: stop here instead. */
    if (ob_check_finish("present_error: before the error") != 0)
        return 1;
    trigger(mode, &a, &b);
    printf("present_error: no error\n");
    ob_check_finish("present_error");
    return 1; /* surviving the construct is the failure */
}
