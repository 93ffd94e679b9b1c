#!/usr/bin/env bash
# The wait probe (each way of moving a small construct and of learning it is done), context
# auto and blocking-sync; then the goal shapes of HEAD's library (hook_bench a-j, medians of 11,
# hook off and on alternating) in three rounds; where a, c and d spend a construct (stats).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
for m in auto blocking auto blocking; do ./wait_probe wait_probe.cubin $m; done > "$OUT/wait_probe.txt" 2>&1; echo "probe exit $?"
cat "$OUT/wait_probe.txt"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
hb=$w/omp/bin/hook_bench_nvptx
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 90 "$hb" --reps 1 --only a,b > "$OUT/warmup.txt" 2>&1; echo "warm-up exit $?"
 for k in 1 2 3; do echo "== round $k"; timeout 60 "$hb" --reps 11 --only a,b,c,d,e,f,g,h,j; echo "exit $?"; done > "$OUT/goal.txt" 2>&1
 grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$OUT/goal.txt"
 for s in a c d; do echo "== stats $s"; OMPBATCH_STATS=1 timeout 30 "$hb" --reps 11 --only $s; done > "$OUT/stats.txt" 2>&1; echo "stats exit $?")
date -u
