#!/usr/bin/env bash
# The layered library on the H200 (LLVM 16 runtime): the library's GPU pack (every direction,
# memory kind and error path on the real driver), the OpenMP pack (every hook test, stencil and
# halo, its hook_bench limited to r and p), hook_bench in full on an idle host and under
# --contention, the mapping fuzzer. Expects gpu_pack.tar.gz, omp_gpu_pack.tar.gz,
# omp_runtime_bundle.tar.xz and fuzz_many.sh beside it.
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
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 200 "$w/omp/bin/hook_bench_nvptx" --reps 5 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1; echo "hook_bench exit $?"
 timeout 200 "$w/omp/bin/hook_bench_nvptx" --reps 5 --contention --json "$OUT/hook_bench_contention.json" > "$OUT/hook_bench_contention.txt" 2>&1; echo "hook_bench contention exit $?")
sed -n '/^shape/,/^never/p' "$OUT/hook_bench.txt"; grep "^never" "$OUT/hook_bench_contention.txt"
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh --bench-args "--reps 3 --only r,p") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo|speed-up" "$OUT/omp_pack.txt"
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
OMPBATCH_COMPARE_GPU=1 timeout 100 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-10}" 5000 > "$OUT/fuzz.txt" 2>&1; echo "fuzz exit $?"
tail -1 "$OUT/fuzz.txt"
