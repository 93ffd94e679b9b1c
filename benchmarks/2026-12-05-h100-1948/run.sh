#!/usr/bin/env bash
# LLVM 16 runtime: the strided column shapes twice (hook off and on alternating), hook_bench
# over every shape (the never-slower summary), the OpenMP pack (hook tests, stencil, halo),
# rect_bench, and the library's GPU pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 for k in 1 2; do
   timeout 60 "$w/omp/bin/hook_bench_nvptx" --reps 11 --only s > "$OUT/hb_s_$k.txt" 2>&1; echo "hook_bench s $k exit $?"
   grep -E "^s-col" "$OUT/hb_s_$k.txt"
 done
 timeout 150 "$w/omp/bin/hook_bench_nvptx" --reps 5 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1; echo "hook_bench exit $?"
 grep -E "^never|^hook_bench:" "$OUT/hook_bench.txt"; sed -n '/^never/,/^$/p' "$OUT/hook_bench.txt" | head -8)
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 150 ./run_omp_pack.sh --bench-args "--reps 3 --only s") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo" "$OUT/omp_pack.txt"
"$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 21 > "$OUT/rect_bench.txt" 2>&1; grep -E "^x |^y " "$OUT/rect_bench.txt"
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 200 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
