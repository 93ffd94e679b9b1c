#!/usr/bin/env bash
# hook_bench, every shape, under OMPBATCH_STATS=1: the table plus where each hook-on
# repetition's time went (the hook's phase times, summed over the timed repetitions only).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
OMPBATCH_STATS=1 timeout 500 "$w/omp/bin/hook_bench_nvptx" --reps 7 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1
echo "exit $?"
cat "$OUT/hook_bench.txt"
