#!/usr/bin/env bash
# LLVM 16 runtime, 9dfc5c1 (new) and 97f5c03 (base, hook_bench_base): the OpenMP pack (hook
# tests compared plain, linked, preloaded, disabled and busy-host, the explicit-extension error
# among them; stencil, halo, hook_bench idle and under --contention at 9 repetitions); the goal
# shapes (hook_bench a-j, medians of 11, hook off and on alternating in each process) in three
# rounds, each round one process of each build, the order alternating; where a construct of
# a, c and e spends its time (OMPBATCH_STATS=1, one shape a process, new build); the library's
# GPU pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Thread|^Core|^Socket" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 200 ./run_omp_pack.sh --bench-args "--reps 9") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -h "hooked+busy" "$w"/omp_logs/*.log | grep -c '^ok'
grep -E "^FAIL|omp pack:|^never|^inconclusive|more than 3%" "$OUT/omp_pack.txt"
cp "$w/omp_logs/hook_bench.json" "$OUT/pack_hook_bench.json"; cp "$w/omp_logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
date -u
hb=$w/omp/bin/hook_bench_nvptx
shapes=a,b,c,d,e,f,g,h,j
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 90 "$hb" --reps 1 --only a,b > "$OUT/warmup.txt" 2>&1; echo "warm-up exit $?"
 for k in 1 2 3; do
   for build in new base; do
     [ $k = 2 ] && build=$([ $build = new ] && echo base || echo new)
     echo "== round $k $build"
     case $build in
     new) timeout 60 "$hb" --reps 11 --only $shapes ;;
     base) timeout 60 ./hook_bench_base --reps 11 --only $shapes ;;
     esac
     echo "exit $?"
   done
 done > "$OUT/goal.txt" 2>&1
 grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$OUT/goal.txt"
 for s in a c e; do
   echo "== stats new $s"; OMPBATCH_STATS=1 timeout 40 "$hb" --reps 11 --only $s
 done > "$OUT/stats.txt" 2>&1; echo "stats exit $?"
 grep -E "^== |^[ace] |hook time" "$OUT/stats.txt")
date -u
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 100 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
