#!/usr/bin/env bash
# Where the hook's time goes, per shape: hook_bench one shape per process under
# OMPBATCH_STATS=1 (the phase-time line), hook off and on alternating within each process.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
for k in a c f g r-tofrom r-floor-tofrom r-reduce r-floor-reduce r-single r-present s-col-from s-col-to p-halo; do
  echo "=== $k"
  OMPBATCH_STATS=1 timeout 120 "$w/omp/bin/hook_bench_nvptx" --reps 7 --only "$k" 2>&1 | grep -E "^$k |hook time|hook items|checked|FAIL|error"
done > "$OUT/phases.txt" 2>&1
cat "$OUT/phases.txt"
