#!/usr/bin/env bash
# LLVM 16 runtime. An experiment build of 97f5c03 with OMPBATCH_X_VARIANT (experiment.diff): 0
# as 97f5c03; 1 while every processor has a runnable thread, a region whose split would batch
# at most one copy each way is forwarded; 2 the same, and regions on present data are
# forwarded too instead of getting device addresses. The region shapes under --contention,
# four rounds of the three variants in turn (order rotating), medians of 9 with the paired
# verdict; idle once each; where r-single spends a region (OMPBATCH_STATS=1, variant 0) idle
# and contended.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
lscpu | grep -E "Model name" | head -1
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
hb=$w/omp/bin/hook_bench_nvptx
only=r-single,r-present,r-floor-naive,r-naive,r-tofrom,r-one-to
for k in 1 2 3 4; do
  for v in 0 1 2; do
    v=$(( (v + k) % 3 ))
    echo "== contention round $k variant $v"
    OMPBATCH_X_VARIANT=$v timeout 60 "$hb" --reps 9 --contention --only $only --json "$OUT/c_${k}_$v.json"
    echo "exit $?"
  done
done > "$OUT/contention.txt" 2>&1
grep -E "^== |^r-|^never|^inconclusive|^exit" "$OUT/contention.txt"
date -u
for v in 0 1 2; do
  echo "== idle variant $v"; OMPBATCH_X_VARIANT=$v timeout 60 "$hb" --reps 9 --only $only --json "$OUT/i_$v.json"; echo "exit $?"
done > "$OUT/idle.txt" 2>&1
grep -E "^== |^r-|^never|^inconclusive|^exit" "$OUT/idle.txt"
for m in "" --contention; do
  echo "== stats r-single $m"; OMPBATCH_STATS=1 timeout 60 "$hb" --reps 9 --only r-single $m; echo "exit $?"
done > "$OUT/stats.txt" 2>&1
grep -E "^== |^r-single|^ompbatch hook time" "$OUT/stats.txt"
date -u
