#!/usr/bin/env bash
# Verification of main: the library's GPU pack, the OpenMP pack
# (LLVM 16; its hook_bench limited to the s and p shapes), hook_bench in full, and the mapping
# fuzzer on the GPU (10 seeds of 5000 constructs). Expects gpu_pack.tar.gz,
# omp_gpu_pack.tar.gz, omp_runtime_bundle.tar.xz and fuzz_many.sh beside it.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
GPU_TEST_LOG_DIR=$w/gpu_logs "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh --bench-args "--reps 3 --only s,p") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo" "$OUT/omp_pack.txt"
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 300 "$w/omp/bin/hook_bench_nvptx" --reps 7 --json "$OUT/hook_bench_plain.json" > "$OUT/hook_bench_plain.txt" 2>&1; echo "hook_bench plain exit $?")
cat "$OUT/hook_bench_plain.txt"
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
OMPBATCH_COMPARE_GPU=1 timeout 120 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-10}" 5000 > "$OUT/fuzz.txt" 2>&1; echo "fuzz exit $?"
tail -2 "$OUT/fuzz.txt"
