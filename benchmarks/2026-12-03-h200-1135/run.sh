#!/usr/bin/env bash
# GPU checks of strided updates: the OpenMP pack (LLVM 16; strided_test among its tests), the
# strided program hooked with OMPBATCH_STRIDED=spec (checked against the specification, and the
# plain build with the same checks, which libomptarget fails), and hook_bench's column shapes
# and halo shapes three times, hook off and on alternating in each run. Expects
# omp_gpu_pack.tar.gz and omp_runtime_bundle.tar.xz beside it.
set -uo pipefail
cd "$(dirname "$0")"
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
{
    echo "== hooked, OMPBATCH_STRIDED=spec"
    OMPBATCH_STRIDED=spec OMPBATCH_STATS=1 bin/strided_nvptx_hooked 7 spec 2>&1 | grep -E "FAIL|strided:|ompbatch hook"
    echo "exit ${PIPESTATUS[0]}"
    echo "== plain, the same checks"
    bin/strided_nvptx_plain 7 spec 2>&1 | grep -cE "^FAIL"
} > "$OUT/strided_spec.txt" 2>&1
cat "$OUT/strided_spec.txt"
for round in 1 2 3; do
    echo "== round $round"
    bin/hook_bench_nvptx --reps 11 --only s,p
done > "$OUT/columns.txt" 2>&1
grep -E "^(==|s-|p-)" "$OUT/columns.txt"
