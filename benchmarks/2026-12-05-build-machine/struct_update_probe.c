/*
 * 64 constructs a repetition, each a `target update to` of 16 structs of two 2 KiB arrays: by
 * their members (argument s: clang passes each struct and its two members, 48 items) or through
 * a `declare mapper` (argument m), under LLVM 16 host offload, hook linked: constructs the hook
 * leaves to the runtime. Built like column_update_probe.c (with -fopenmp-version=51).
 * Usage: struct_update_probe [repetitions] [s|m]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef struct halves { char lo[2048]; char hi[2048]; } halves;
#pragma omp declare mapper(whole : halves h) map(h.lo[0:2048], h.hi[0:2048])
#define N 1024
int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1000;
    int mode = argc > 2 ? argv[2][0] : 's';
    halves *h[N];
    for (int i = 0; i < N; i++) { h[i] = malloc(sizeof(halves)); memset(h[i], i, sizeof(halves)); }
    for (int i = 0; i < N; i++) { halves *p = h[i];
#pragma omp target enter data map(alloc : p[0:1])
    }
    double t0 = omp_get_wtime();
    for (int r = 0; r < reps; r++)
        for (int c = 0; c < N / 16; c++) {
            halves **q = h + c * 16;
            halves *h0=q[0],*h1=q[1],*h2=q[2],*h3=q[3],*h4=q[4],*h5=q[5],*h6=q[6],*h7=q[7],*h8=q[8],*h9=q[9],*h10=q[10],*h11=q[11],*h12=q[12],*h13=q[13],*h14=q[14],*h15=q[15];
            if (mode == 's') {
#pragma omp target update to(h0->lo,h0->hi,h1->lo,h1->hi,h2->lo,h2->hi,h3->lo,h3->hi,h4->lo,h4->hi,h5->lo,h5->hi,h6->lo,h6->hi,h7->lo,h7->hi,h8->lo,h8->hi,h9->lo,h9->hi,h10->lo,h10->hi,h11->lo,h11->hi,h12->lo,h12->hi,h13->lo,h13->hi,h14->lo,h14->hi,h15->lo,h15->hi)
            } else {
#pragma omp target update to(mapper(whole): h0[0:1],h1[0:1],h2[0:1],h3[0:1],h4[0:1],h5[0:1],h6[0:1],h7[0:1],h8[0:1],h9[0:1],h10[0:1],h11[0:1],h12[0:1],h13[0:1],h14[0:1],h15[0:1])
            }
        }
    double t1 = omp_get_wtime();
    printf("%c: %.3f us per construct\n", mode, (t1 - t0) * 1e6 / reps / (N / 16));
    return 0;
}
