#!/usr/bin/env bash
# Rectangles as one copy on the H200 (LLVM 16 runtime): rect_bench first (the x face against
# the bulk copy), the library's GPU pack, hook_bench idle and under --contention (the
# never-slower matrix), the OpenMP pack (hook tests, stencil, halo).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
"$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 21 > "$OUT/rect_bench.txt" 2>&1; echo "rect_bench exit $?"
cat "$OUT/rect_bench.txt"
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 300 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 100 "$w/omp/bin/hook_bench_nvptx" --reps 5 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1; echo "hook_bench exit $?"
 timeout 100 "$w/omp/bin/hook_bench_nvptx" --reps 5 --contention --json "$OUT/hook_bench_contention.json" > "$OUT/hook_bench_contention.txt" 2>&1; echo "hook_bench contention exit $?")
sed -n '/^shape/,/^never/p' "$OUT/hook_bench.txt"; grep "^never" "$OUT/hook_bench_contention.txt"
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 150 ./run_omp_pack.sh --bench-args "--reps 3 --only r,p") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo|speed-up" "$OUT/omp_pack.txt"
date -u
