#!/usr/bin/env bash
# rect_bench at HEAD (no wake) and with helpers woken ahead of the unpack, alternating, with the
# phase clocks; hook_bench with phases (every shape); the library's GPU pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
b=$(mktemp -d); tar xzf gpu_pack_base.tar.gz -C "$b"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
for k in 1 2 3; do
  echo "== base $k"; "$b/gpu_pack/tools/rect_bench" --require-gpu --rounds 21
  echo "== wake $k"; OMPBATCH_STATS=1 "$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 21 --phases
done > "$OUT/rect_bench.txt" 2>&1
grep -E "^==|^x |^y |^z |phases" "$OUT/rect_bench.txt"
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY OMPBATCH_STATS=1
 timeout 150 "$w/omp/bin/hook_bench_nvptx" --reps 7 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1; echo "hook_bench exit $?")
sed -n '/^shape/,$p' "$OUT/hook_bench.txt" | head -120
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 240 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
