#!/usr/bin/env bash
# LLVM 16 runtime, 97f5c03 (hook_bench_base = hook_bench_nvptx of 97f5c03; the pack's
# hook_bench is the same code): hook_bench over every shape under --contention, three
# processes at 9 repetitions, then the two region shapes flagged at 08:37 (r-single,
# r-floor-tofrom) under --contention at 21 repetitions, three processes; idle once at 9.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
lscpu | grep -E "Model name" | head -1
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
hb=$w/omp/bin/hook_bench_nvptx
cmp -s <(strings "$hb" | grep -c ompbatch) <(strings ./hook_bench_base | grep -c ompbatch) && echo "same strings"
for k in 1 2 3; do
  echo "== contention $k"; timeout 90 "$hb" --reps 9 --contention --json "$OUT/contention_$k.json"; echo "exit $?"
done > "$OUT/contention.txt" 2>&1
grep -E "^== |^never|^inconclusive|^exit|checked" "$OUT/contention.txt"
date -u
for k in 1 2 3; do
  echo "== regions $k"; timeout 60 "$hb" --reps 21 --contention --only r-single,r-floor-tofrom; echo "exit $?"
done > "$OUT/regions.txt" 2>&1
grep -E "^== |^r-|^never|^inconclusive|^exit" "$OUT/regions.txt"
echo "== idle"; timeout 90 "$hb" --reps 9 --json "$OUT/idle.json" > "$OUT/idle.txt" 2>&1; echo "exit $?"
grep -E "^never|^inconclusive|checked" "$OUT/idle.txt"
date -u
