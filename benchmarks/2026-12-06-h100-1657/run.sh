#!/usr/bin/env bash
# LLVM 16 runtime, one H100 host, two calls back to back (16:57 and 17:03).
# Builds: fix = 540a1bb (growable arrays double from 8), new = d4b08a2, head = 1037282
# (hook_bench_nvptx of each), and the OpenMP and GPU library packs of f87b760 (540a1bb's code).
# 1) e and h, medians of 11, four rounds of one process per build, the order rotating, then
#    OMPBATCH_STATS=1 for fix; 2) the OpenMP pack at 9 repetitions; 3) the GPU library tests;
# 4) (the second call) the goal shapes a-j, three processes of fix and three of new.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_fix --reps 1 --only a > /dev/null 2>&1
  for k in 1 2 3 4; do
    case $k in 1) order="fix new head";; 2) order="head fix new";; 3) order="new head fix";; 4) order="fix head new";; esac
    for b in $order; do echo "== round $k $b"; timeout 30 ./hook_bench_$b --reps 11 --only e,h; echo "exit $?"; done
  done > "$OUT/mini.txt" 2>&1
  echo "== stats fix" > "$OUT/stats.txt"
  OMPBATCH_STATS=1 timeout 30 ./hook_bench_fix --reps 11 --only e,h >> "$OUT/stats.txt" 2>&1 )
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p" && tar xzf gpu_pack.tar.gz -C "$p"
(cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && timeout 240 ./run_omp_pack.sh --bench-args "--reps 9") > "$OUT/omp_pack.txt" 2>&1
cp "$p/logs/hook_bench.json" "$OUT/pack_hook_bench.json"
cp "$p/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
(cd "$p" && timeout 120 ./gpu_pack/run_gpu_tests.sh) > "$OUT/gpu_tests.txt" 2>&1
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  timeout 60 ./hook_bench_fix --reps 1 --only a,b > /dev/null 2>&1
  for b in fix new new fix fix new; do
    echo "== $b"; timeout 60 ./hook_bench_$b --reps 11 --only a,b,c,d,e,f,g,h,j; echo "exit $?"
  done; date -u ) > "$OUT/goal.txt" 2>&1
