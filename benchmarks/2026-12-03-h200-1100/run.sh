#!/usr/bin/env bash
# GPU checks after struct entries are learnt and the mapping fuzzer reaches structs and
# mappers: the OpenMP pack (LLVM 16) with the hook tests and hook_bench, the region shapes and
# their floors three times (hook off and on alternating in each run), and the fuzzer on the GPU
# (FUZZ_SEEDS seeds of 5000 constructs, default 20). Expects omp_gpu_pack.tar.gz,
# omp_runtime_bundle.tar.xz and fuzz_many.sh beside it.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh) > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:" "$OUT/omp_pack.txt"
cp "$w/omp_logs/hook_bench.log" "$OUT/hook_bench.log" 2>/dev/null
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
export OMP_TARGET_OFFLOAD=MANDATORY
for round in 1 2 3; do
    echo "== round $round"
    bin/hook_bench_nvptx --reps 11 --only r
done > "$OUT/regions.txt" 2>&1
grep -E "^(==|r-)" "$OUT/regions.txt"
OMPBATCH_COMPARE_GPU=1 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-20}" 5000 > "$OUT/fuzz.txt" 2>&1; echo "fuzz exit $?"
tail -3 "$OUT/fuzz.txt"
