#!/usr/bin/env bash
# Late pack threads under CPU contention, on the H200 (LLVM 16 runtime): hook_bench in full
# under --contention (the program's other OpenMP threads busy on every core) and on an idle
# host. Expects omp_gpu_pack.tar.gz and omp_runtime_bundle.tar.xz beside it.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 200 "$w/omp/bin/hook_bench_nvptx" --reps 5 --contention --json "$OUT/hook_bench_contention.json" > "$OUT/hook_bench_contention.txt" 2>&1; echo "hook_bench contention exit $?"
 timeout 200 "$w/omp/bin/hook_bench_nvptx" --reps 5 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1; echo "hook_bench exit $?")
sed -n '/^shape/,/^never/p' "$OUT/hook_bench_contention.txt"; grep "^never" "$OUT/hook_bench.txt"
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
