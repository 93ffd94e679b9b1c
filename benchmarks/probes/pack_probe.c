#define _GNU_SOURCE
#include <cuda.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("FAIL %s = %d line %d\n", #x, r_, __LINE__); exit(1);} } while (0)
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmpd(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
static double med(double*v,int n){qsort(v,n,sizeof *v,cmpd);return v[n/2];}
#define REPS 25
static int NT; static atomic_int gen, done_cnt; static void (*job)(int,int); static pthread_t th[32];
static void *worker(void *a){int id=(int)(long)a; int seen=0; for(;;){int g; while((g=atomic_load(&gen))==seen); seen=g; if(g<0) return 0; job(id,NT); atomic_fetch_add(&done_cnt,1);} }
static void pool(int n){ NT=n; for(int i=1;i<n;i++) pthread_create(&th[i],0,worker,(void*)(long)i);}
static void run_job(void(*f)(int,int)){ job=f; atomic_store(&done_cnt,0); atomic_fetch_add(&gen,1); f(0,NT); while(atomic_load(&done_cnt)<NT-1); }
static void pool_stop(void){ atomic_store(&gen,-1); for(int i=1;i<NT;i++) pthread_join(th[i],0); atomic_store(&gen,0);}
static char *msrc, *mdst; static size_t msz = 4096, mcount = 1024; static int nt_mode;
__attribute__((target("avx2"))) static void nt_copy(char *d, const char *s, size_t n)
{ /* d 32-aligned, n multiple of 128 here */
    for (size_t i = 0; i < n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i*)(s+i)), b = _mm256_loadu_si256((const __m256i*)(s+i+32)), c = _mm256_loadu_si256((const __m256i*)(s+i+64)), e = _mm256_loadu_si256((const __m256i*)(s+i+96));
        _mm256_stream_si256((__m256i*)(d+i), a); _mm256_stream_si256((__m256i*)(d+i+32), b); _mm256_stream_si256((__m256i*)(d+i+64), c); _mm256_stream_si256((__m256i*)(d+i+96), e);
    }
}
static void pack_part(int id,int T){ size_t per=(mcount+T-1)/T, a=id*per, b=a+per>mcount?mcount:a+per; for(size_t i=a;i<b;i++) { if (nt_mode) nt_copy(mdst+i*msz, msrc+i*(msz+64), msz); else memcpy(mdst+i*msz, msrc+i*(msz+64), msz);} if (nt_mode) _mm_sfence(); }
int main(void)
{
    CK(cuInit(0)); CUdevice dv; CK(cuDeviceGet(&dv,0)); CUcontext cx; CK(cuDevicePrimaryCtxRetain(&cx,dv)); CK(cuCtxSetCurrent(cx));
    CUstream st; CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING)); CUevent e0,e1; CK(cuEventCreate(&e0,0)); CK(cuEventCreate(&e1,0));
    size_t SL = (size_t)72<<20; char *pag = aligned_alloc(4096, SL); memset(pag, 3, SL);
    char *big = malloc((size_t)512<<20); /* cache flusher */
    void *pin2; CK(cuMemAllocHost(&pin2, SL)); CUdeviceptr ddev; CK(cuMemAlloc(&ddev, SL));
    int tc[] = {1, 4, 8, 16};
    for (int k = 0; k < 4; k++) { pool(tc[k]);
      for (int cold = 0; cold < 2; cold++) for (nt_mode = 0; nt_mode < 2; nt_mode++) {
        double tp[REPS], tcpy[REPS];
        msrc = pag; mdst = pin2;
        for (int r = -3; r < REPS; r++) {
            if (cold) memset(big, r, (size_t)512<<20);
            double a = now(); run_job(pack_part); double b = now();
            CK(cuEventRecord(e0, st)); CK(cuMemcpyHtoDAsync(ddev, pin2, 4<<20, st)); CK(cuEventRecord(e1, st)); CK(cuStreamSynchronize(st));
            float ms; CK(cuEventElapsedTime(&ms, e0, e1)); if (r >= 0) { tp[r] = b-a; tcpy[r] = ms*1e3; }
        }
        printf("threads %2d source %-4s %-8s pack %7.1f us, then bulk copy of the staging %7.1f us\n", tc[k], cold?"cold":"hot", nt_mode?"nt":"memcpy", med(tp,REPS), med(tcpy,REPS));
      }
      pool_stop(); }
    return 0;
}
