#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ompbatch.h"
extern const char ob_copy_pieces_ptx[];
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("FAIL %s = %d line %d\n", #x, r_, __LINE__); exit(1);} } while (0)
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmpd(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
static double med(double*v,int n){qsort(v,n,sizeof *v,cmpd);return v[n/2];}
typedef struct { unsigned long long dst, src, bytes; } pc;
#define REPS 25
static CUstream st; static CUevent e0,e1;
static char *dslab; static CUdeviceptr ddev;

/* ---- spin pool ---- */
static int NT; static atomic_int gen, done_cnt; static void (*job)(int,int); static pthread_t th[32];
static void *worker(void *a){int id=(int)(long)a; int seen=0; for(;;){int g; while((g=atomic_load(&gen))==seen); seen=g; if(g<0) return 0; job(id,NT); atomic_fetch_add(&done_cnt,1);} }
static void pool(int n){ NT=n; for(int i=1;i<n;i++) pthread_create(&th[i],0,worker,(void*)(long)i);} 
static void run_job(void(*f)(int,int)){ job=f; atomic_store(&done_cnt,0); atomic_fetch_add(&gen,1); f(0,NT); while(atomic_load(&done_cnt)<NT-1); }
static void pool_stop(void){ atomic_store(&gen,-1); for(int i=1;i<NT;i++) pthread_join(th[i],0); atomic_store(&gen,0);} 
static char *msrc, *mdst; static size_t mn, msz, mfrom, mto;
static void pack_part(int id,int T){ size_t per=(mto-mfrom+T-1)/T, a=mfrom+id*per, b=a+per>mto?mto:a+per; for(size_t i=a;i<b;i++) memcpy(mdst+i*msz, msrc+i*(msz+64), msz);} 

int main(int argc, char **argv)
{
    (void)argc;(void)argv;
    CK(cuInit(0)); CUdevice dv; CK(cuDeviceGet(&dv,0)); CUcontext cx; CK(cuDevicePrimaryCtxRetain(&cx,dv)); CK(cuCtxSetCurrent(cx));
    CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING)); CK(cuEventCreate(&e0,0)); CK(cuEventCreate(&e1,0));
    size_t SL = (size_t)72<<20;
    void *pin; CK(cuMemAllocHost(&pin, SL)); char *pag = malloc(SL); memset(pag, 3, SL); memset(pin, 5, SL);
    void *pin2; CK(cuMemAllocHost(&pin2, SL));
    CK(cuMemAlloc(&ddev, SL)); CUdeviceptr ddev2; CK(cuMemAlloc(&ddev2, SL));
    CUdeviceptr dtab; CK(cuMemAlloc(&dtab, 1<<20)); pc *htab; CK(cuMemAllocHost((void**)&htab, 1<<20));
    /* ---- part 1: library breakdown ---- */
    struct { int n; size_t sz; int pinned; } cs[] = {{1024,4096,1},{1024,4096,0},{4096,256,1},{64,1<<20,1}};
    const char *sn[] = {"","auto","direct","staged"};
    for (int c = 0; c < 4; c++) for (int s = 1; s <= 3; s++) {
        int n = cs[c].n; size_t sz = cs[c].sz, stp = sz + 64; char *h = cs[c].pinned ? pin : pag;
        ompbatch_batch_options o = {.struct_size = sizeof o, .strategy = s}; ompbatch_batch *b;
        if (ompbatch_batch_create(&b, 0, st, &o)) { printf("create: %s\n", ompbatch_last_error()); return 1; }
        double ta[REPS], ts[REPS], tw[REPS], tg[REPS];
        for (int r = -3; r < REPS; r++) {
            double t0 = now(); for (int i = 0; i < n; i++) ompbatch_batch_add(b, (void*)(ddev + i*stp), 0, h + i*stp, OMPBATCH_HOST_DEVICE, sz, 0);
            CK(cuEventRecord(e0, st));
            double t1 = now(); int rc = ompbatch_batch_submit(b); double t2 = now(); CK(cuEventRecord(e1, st)); int rw = ompbatch_batch_wait(b); double t3 = now();
            float ms; CK(cuEventElapsedTime(&ms, e0, e1));
            if (rc || rw) { printf("submit/wait: %s\n", ompbatch_last_error()); return 1; }
            if (r >= 0) { ta[r] = t1-t0; ts[r] = t2-t1; tw[r] = t3-t2; tg[r] = ms*1e3; }
            ompbatch_batch_reset(b);
        }
        ompbatch_stats stt = {.struct_size = sizeof stt}; 
        double A=med(ta,REPS),S=med(ts,REPS),W=med(tw,REPS),G=med(tg,REPS);
        printf("lib %4d x %7zu %-8s %-6s add %7.1f submit %7.1f wait %7.1f total %7.1f gpu(e0..e1) %7.1f\n", n, sz, cs[c].pinned?"pinned":"pageable", sn[s], A,S,W,A+S+W,G);
        (void)stt; ompbatch_batch_destroy(b);
    }
    /* ---- part 2: kernels ---- */
    CUmodule m0, m1; CUfunction f0, fb, fw; extern const char kern_ptx[];
    CK(cuModuleLoadData(&m0, ob_copy_pieces_ptx)); CK(cuModuleGetFunction(&f0, m0, "ob_copy_pieces"));
    CK(cuModuleLoadData(&m1, kern_ptx)); CK(cuModuleGetFunction(&fb, m1, "k_block")); CK(cuModuleGetFunction(&fw, m1, "k_warp"));
    struct { int n; size_t sz; int src; const char *nm; } ks[] = {{4096,256,0,"pin->dev"},{1024,4096,0,"pin->dev"},{1024,4096,1,"dev->dev"},{1024,65536,0,"pin->dev 64MiB"},{16384,256,0,"pin->dev"}};
    for (int c = 0; c < 5; c++) {
        int n = ks[c].n; size_t sz = ks[c].sz, stp = sz + 64;
        for (int i = 0; i < n; i++) { htab[i].dst = ddev + i*stp; htab[i].src = ks[c].src ? ddev2 + i*stp : (unsigned long long)(uintptr_t)((char*)pin + i*stp); htab[i].bytes = sz; }
        CK(cuMemcpyHtoD(dtab, htab, n*sizeof(pc)));
        const char *fn[] = {"cur", "blk4", "warp"}; CUfunction fs[] = {f0, fb, fw};
        for (int f = 0; f < 3; f++) for (int tl = 0; tl < 2; tl++) for (int thr = 0; thr < 2; thr++) {
            if (f != 2 && thr == 1) continue;
            unsigned threads = f == 2 ? (thr ? 256 : 128) : 256; unsigned nn = n;
            unsigned blocks = f == 2 ? (n*32 + threads-1)/threads : (n < 65535 ? n : 65535);
            CUdeviceptr tp = tl ? dtab : (CUdeviceptr)(uintptr_t)htab; void *pa[] = {&tp, &nn};
            double t[REPS]; double w[REPS];
            for (int r = -3; r < REPS; r++) {
                double c0 = now(); CK(cuEventRecord(e0, st)); CK(cuLaunchKernel(fs[f], blocks,1,1, threads,1,1, 0, st, pa, 0)); CK(cuEventRecord(e1, st)); CK(cuStreamSynchronize(st)); double c1 = now();
                float ms; CK(cuEventElapsedTime(&ms, e0, e1)); if (r >= 0) { t[r] = ms*1e3; w[r] = c1-c0; }
            }
            printf("kernel %5d x %6zu %-15s %-4s table=%s threads=%u blocks=%u gpu %7.1f wall %7.1f\n", n, sz, ks[c].nm, fn[f], tl?"dev":"host", threads, blocks, med(t,REPS), med(w,REPS));
        }
        /* the bulk copy of the same bytes, for reference (nothing here checks bytes: the library's tests do) */
        double tb[REPS]; for (int r = -3; r < REPS; r++) { CK(cuEventRecord(e0, st)); CK(cuMemcpyHtoDAsync(ddev, pin, n*sz, st)); CK(cuEventRecord(e1, st)); CK(cuStreamSynchronize(st)); float ms; CK(cuEventElapsedTime(&ms,e0,e1)); if (r>=0) tb[r]=ms*1e3; }
        printf("bulk   %5d x %6zu pinned->dev gpu %7.1f\n", n, sz, med(tb,REPS));
    }
    /* ---- part 3: host pack scaling ---- */
    int tcount[] = {1,2,4,6,8,12,16};
    for (int k = 0; k < 7; k++) { pool(tcount[k]);
        for (int src = 0; src < 2; src++) { msrc = src ? (char*)pin : pag; mdst = pin2; mn = 1024; msz = 4096; mfrom = 0; mto = 1024; double t[REPS];
            for (int r = -3; r < REPS; r++) { double a = now(); run_job(pack_part); double b2 = now(); if (r>=0) t[r] = b2-a; }
            printf("pack 1024x4KiB %s->pinned threads %2d: %7.1f us\n", src?"pinned":"pageable", tcount[k], med(t,REPS)); }
        /* pipelined pack + copy: chunks of C pieces */
        int chunks[] = {1024, 256, 128, 64};
        for (int q = 0; q < 4; q++) { double t[REPS]; int C = chunks[q]; msrc = pag; mdst = pin2; msz = 4096;
            for (int r = -3; r < REPS; r++) { double a = now();
                for (int k2 = 0; k2 < 1024; k2 += C) { mfrom = k2; mto = k2 + C; run_job(pack_part); CK(cuMemcpyHtoDAsync(ddev + (size_t)k2*4096, pin2 + (size_t)k2*4096, (size_t)C*4096, st)); }
                CK(cuStreamSynchronize(st)); double b2 = now(); if (r>=0) t[r] = b2-a; }
            printf("pipelined pageable pack+copy 4MiB threads %2d chunk %4d pieces: %7.1f us\n", tcount[k], C, med(t,REPS)); }
        pool_stop(); }
    { double t[REPS]; for (int r=-3;r<REPS;r++){ double a=now(); CK(cuMemcpyHtoDAsync(ddev, pag, 4<<20, st)); CK(cuStreamSynchronize(st)); double b2=now(); if(r>=0)t[r]=b2-a;} printf("bulk pageable 4MiB wall %7.1f\n", med(t,REPS)); }
    { double t[REPS]; for (int r=-3;r<REPS;r++){ double a=now(); CK(cuMemcpyHtoDAsync(ddev, pin, 4<<20, st)); CK(cuStreamSynchronize(st)); double b2=now(); if(r>=0)t[r]=b2-a;} printf("bulk pinned 4MiB wall %7.1f\n", med(t,REPS)); }
    /* ---- part 4: 64 x 1 MiB ---- */
    {
        CUstream s2; CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING)); CUevent ej; CK(cuEventCreate(&ej, CU_EVENT_DISABLE_TIMING));
        size_t n = 64, sz = 1<<20, stp = sz + 64; CUdeviceptr dd[64], ss[64]; size_t szs[64];
        for (size_t i = 0; i < n; i++) { dd[i] = ddev + i*stp; ss[i] = (CUdeviceptr)(uintptr_t)((char*)pin + i*stp); szs[i] = sz; }
        CUmemcpyAttributes at; memset(&at, 0, sizeof at); at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM; size_t idx = 0;
        for (int dir = 0; dir < 2; dir++) {
            CUdeviceptr *D = dir ? ss : dd, *S = dir ? dd : ss;
            for (int way = 0; way < 5; way++) { double t[REPS];
                for (int r = -3; r < REPS; r++) { double a = now();
                    if (way == 0) CK(cuMemcpyAsync(D[0], S[0], 64<<20, st));
                    else if (way == 1) CK(cuMemcpyBatchAsync(D, S, szs, n, &at, &idx, 1, st));
                    else if (way == 2) { for (size_t i=0;i<n;i++) CK(cuMemcpyAsync(D[i], S[i], sz, st)); }
                    else if (way == 3) { CK(cuEventRecord(ej, st)); CK(cuStreamWaitEvent(s2, ej, 0)); CK(cuMemcpyBatchAsync(D, S, szs, n/2, &at, &idx, 1, st)); CK(cuMemcpyBatchAsync(D+n/2, S+n/2, szs, n/2, &at, &idx, 1, s2)); CK(cuEventRecord(ej, s2)); CK(cuStreamWaitEvent(st, ej, 0)); }
                    else { /* interleaved halves */ CUdeviceptr D2[64], S2[64]; for (size_t i=0;i<n;i++){D2[i]=D[(i%2)*32+i/2];S2[i]=S[(i%2)*32+i/2];} CK(cuEventRecord(ej, st)); CK(cuStreamWaitEvent(s2, ej, 0)); CK(cuMemcpyBatchAsync(D2, S2, szs, 32, &at, &idx, 1, st)); CK(cuMemcpyBatchAsync(D2+32, S2+32, szs, 32, &at, &idx, 1, s2)); CK(cuEventRecord(ej, s2)); CK(cuStreamWaitEvent(st, ej, 0)); }
                    CK(cuStreamSynchronize(st)); double b2 = now(); if (r >= 0) t[r] = b2-a; }
                const char *wn[] = {"bulk", "batch64", "64 memcpy", "2 streams", "2 streams b"};
                printf("64x1MiB %s %-12s %8.1f us\n", dir ? "D2H" : "H2D", wn[way], med(t, REPS)); }
        }
    }
    return 0;
}
