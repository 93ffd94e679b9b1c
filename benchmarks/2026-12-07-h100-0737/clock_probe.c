/* How long a clock read and a /proc/loadavg read take on this host. */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <stdint.h>
static uint64_t ns(clockid_t c){struct timespec t; clock_gettime(c,&t); return (uint64_t)t.tv_sec*1000000000ull+t.tv_nsec;}
int main(void){
  const int N=200000; uint64_t s=0;
  clockid_t ids[]={CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW};
  const char*names[]={"MONOTONIC","MONOTONIC_COARSE","MONOTONIC_RAW"};
  for(int k=0;k<3;k++){ uint64_t t0=ns(CLOCK_MONOTONIC); for(int i=0;i<N;i++) s+=ns(ids[k]); uint64_t t1=ns(CLOCK_MONOTONIC);
    printf("%-18s %.1f ns a read\n",names[k],(double)(t1-t0)/N);}
  uint64_t t0=ns(CLOCK_MONOTONIC); long r=0;
  for(int i=0;i<2000;i++){FILE*f=fopen("/proc/loadavg","r"); long x=0; if(f){ if(fscanf(f,"%*s %*s %*s %ld/",&x)!=1) x=0; fclose(f);} r+=x;}
  uint64_t t1=ns(CLOCK_MONOTONIC);
  printf("/proc/loadavg read %.1f us (running %ld)\n",(double)(t1-t0)/2000/1000, r/2000);
  return (int)(s&1)*0;
}
