#!/usr/bin/env bash
# hook_bench, every shape, under OMPBATCH_STATS=1 (the table plus where each hook-on
# repetition's time went), and rect_bench's faces. Expects omp_gpu_pack.tar.gz,
# omp_runtime_bundle.tar.xz and gpu_pack.tar.gz beside it.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 OMPBATCH_STATS=1 timeout 400 "$w/omp/bin/hook_bench_nvptx" --reps 7 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1; echo "hook_bench exit $?")
"$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 11 > "$OUT/rect_bench.txt" 2>&1; echo "rect_bench exit $?"
cat "$OUT/hook_bench.txt" "$OUT/rect_bench.txt"
