#!/usr/bin/env bash
# GPU checks of the rectangle API and the halo example: the library's GPU pack (gpu_test with
# its rectangle case among the suites), rect_bench (faces of a 256^3 double array into
# pageable memory against one bulk copy into pinned), and the OpenMP pack (LLVM 16; its halo
# example and strided_test among its steps), then the mapping fuzzer on the GPU (FUZZ_SEEDS
# seeds of 5000 constructs, default 20; strided updates among them). Expects gpu_pack.tar.gz,
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
grep -E "Rectangles" "$w"/gpu_logs/* 2>/dev/null | head -3
for round in 1 2 3; do
    echo "== round $round"
    "$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 11
done > "$OUT/rect_bench.txt" 2>&1
cat "$OUT/rect_bench.txt"
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh) > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo|^hook (on|off)" "$OUT/omp_pack.txt"
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
OMPBATCH_COMPARE_GPU=1 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-20}" 5000 > "$OUT/fuzz.txt" 2>&1; echo "fuzz exit $?"
tail -3 "$OUT/fuzz.txt"
