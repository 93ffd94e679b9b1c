#!/usr/bin/env bash
# LLVM 16 runtime, commit 5d73f47 (pack threads claim parts without a lock; packs from 32 KiB
# shared in 8 KiB parts). The library's GPU pack; the goal shapes (hook_bench a-j, medians of
# 11, hook off and on alternating in each process) in three rounds, each round one process of
# this build and one of hook_bench_base (822365d) in turn; OMPBATCH_STATS=1 for a, b, e; the
# OpenMP pack (hook tests, stencil, halo, hook_bench over every shape idle and under
# --contention at 5 repetitions).
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
 timeout 90 "$hb" --reps 1 --only a,b > "$OUT/warmup.txt" 2>&1; echo "warm-up exit $?"
 for k in 1 2 3; do
   for build in new base; do
     echo "== round $k $build"
     if [ $build = new ]; then timeout 60 "$hb" --reps 11 --only $shapes; else timeout 60 ./hook_bench_base --reps 11 --only $shapes; fi
     echo "exit $?"
   done
 done > "$OUT/goal.txt" 2>&1
 grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$OUT/goal.txt"
 for s in a b e; do
   echo "== stats new $s"; OMPBATCH_STATS=1 timeout 30 "$hb" --reps 11 --only $s
 done > "$OUT/stats.txt" 2>&1; echo "stats exit $?")
date -u
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 240 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
cp "$w/omp_logs/hook_bench.json" "$w/omp_logs/hook_bench_contention.json" "$OUT/" 2>/dev/null
grep -E "^FAIL|omp pack:|^halo|^never|more than 3%" "$OUT/omp_pack.txt"
date -u
