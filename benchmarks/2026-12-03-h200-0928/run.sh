#!/usr/bin/env bash
# GPU checks of one run: the library's GPU pack, the OpenMP pack (LLVM 16) with the hook
# tests and hook_bench, and the mapping fuzzer at length (plain and hooked nvptx builds;
# FUZZ_SEEDS seeds of 5000 constructs, default 40).
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out} # where the logs go
mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
GPU_TEST_LOG_DIR=$w/gpu_logs "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh) > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:" "$OUT/omp_pack.txt"
cp "$w/omp_logs/hook_bench.log" "$OUT/hook_bench.log" 2>/dev/null
grep -E "^[a-z]-?[a-z]* " "$OUT/hook_bench.log" | head -30
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
OMPBATCH_COMPARE_GPU=1 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-40}" 5000 > "$OUT/fuzz.txt" 2>&1; echo "fuzz exit $?"
tail -3 "$OUT/fuzz.txt"
