#!/usr/bin/env bash
# LLVM 16 runtime. The library's GPU pack first; then the goal shapes (hook_bench a-j,
# medians of 11, hook off and on alternating in each process) in three rounds, each round one
# process of each build in turn: new (packs and unpacks from 32 KiB to 256 KiB shared in parts
# of 16 KiB with the pack threads already watching for work, parts claimed without a lock), v2
# (the same in parts of 8 KiB) and base (822365d: such packs on the caller alone); where a
# hook-on repetition's time goes (OMPBATCH_STATS=1)
# for a, b, e of new; the region shapes flagged in the last matrices at 21 repetitions, idle
# and under --contention; the OpenMP pack (hook tests, stencil, halo, hook_bench over every
# shape idle and under --contention at 5 repetitions).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 150 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
hb=$w/omp/bin/hook_bench_nvptx
shapes=a,b,c,d,e,f,g,h,j
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 # The first process calibrates the cost model (cached for the rest).
 timeout 90 "$hb" --reps 1 --only a,b > "$OUT/warmup.txt" 2>&1; echo "warm-up exit $?"
 for k in 1 2 3; do
   for build in new v2 base; do
     echo "== round $k $build"
     case $build in
     new) timeout 60 "$hb" --reps 11 --only $shapes ;;
     v2) timeout 60 ./hook_bench_v2 --reps 11 --only $shapes ;;
     base) timeout 60 ./hook_bench_base --reps 11 --only $shapes ;;
     esac
     echo "exit $?"
   done
 done > "$OUT/goal.txt" 2>&1
 grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$OUT/goal.txt"
 for s in a b e; do
   echo "== stats new $s"; OMPBATCH_STATS=1 timeout 30 "$hb" --reps 11 --only $s
 done > "$OUT/stats.txt" 2>&1; echo "stats exit $?"
 regions=r-floor-reduce,r-reduce,r-present,r-single,r-floor-naive,r-floor-tofrom,m-from
 for mode in idle contention; do
   echo "== regions $mode"
   if [ $mode = idle ]; then timeout 60 "$hb" --reps 21 --only $regions; else timeout 90 "$hb" --reps 21 --contention --only $regions; fi
   echo "exit $?"
 done > "$OUT/regions.txt" 2>&1; grep -E "^== |^r-|^m-|^never|^exit" "$OUT/regions.txt")
date -u
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 240 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
cp "$w/omp_logs/hook_bench.json" "$w/omp_logs/hook_bench_contention.json" "$OUT/" 2>/dev/null
grep -E "^FAIL|omp pack:|^halo|^never|more than 3%" "$OUT/omp_pack.txt"
date -u
