/*
 * 64 `target update` constructs a repetition, each of 16 separately allocated 4 KiB arrays
 * (hook_bench's shape a without its checks), under LLVM 16 host offload, hook linked: the
 * hook's CPU cost of a construct it batches. Built like column_update_probe.c.
 * Usage: update_group_probe [repetitions] [t|f]   (to, or from)
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define N 1024
#define G 16
#define SZ 4096
int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1000;
    int from = argc > 2 && argv[2][0] == 'f';
    unsigned char *a[N];
    for (int i = 0; i < N; i++) { a[i] = malloc(SZ); memset(a[i], i, SZ); }
    for (int i = 0; i < N; i++) {
        unsigned char *p = a[i];
#pragma omp target enter data map(alloc : p[0:SZ])
    }
    double t0 = omp_get_wtime();
    for (int r = 0; r < reps; r++) {
        for (int c = 0; c < N / G; c++) {
            unsigned char **q = a + c * G;
            unsigned char *p0=q[0],*p1=q[1],*p2=q[2],*p3=q[3],*p4=q[4],*p5=q[5],*p6=q[6],*p7=q[7],*p8=q[8],*p9=q[9],*p10=q[10],*p11=q[11],*p12=q[12],*p13=q[13],*p14=q[14],*p15=q[15];
            if (from) {
#pragma omp target update from(p0[0:SZ],p1[0:SZ],p2[0:SZ],p3[0:SZ],p4[0:SZ],p5[0:SZ],p6[0:SZ],p7[0:SZ],p8[0:SZ],p9[0:SZ],p10[0:SZ],p11[0:SZ],p12[0:SZ],p13[0:SZ],p14[0:SZ],p15[0:SZ])
            } else {
#pragma omp target update to(p0[0:SZ],p1[0:SZ],p2[0:SZ],p3[0:SZ],p4[0:SZ],p5[0:SZ],p6[0:SZ],p7[0:SZ],p8[0:SZ],p9[0:SZ],p10[0:SZ],p11[0:SZ],p12[0:SZ],p13[0:SZ],p14[0:SZ],p15[0:SZ])
            }
        }
    }
    double t1 = omp_get_wtime();
    printf("%.3f us per construct\n", (t1 - t0) * 1e6 / reps / (N / G));
    return 0;
}
