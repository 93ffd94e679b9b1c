#!/usr/bin/env bash
# GPU checks of one run: the OpenMP pack (LLVM 16) with the hook tests, then hook_bench's
# target-region shapes three times (hook off and on alternating inside each run).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out} # where the logs go
mkdir -p "$OUT"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
(cd "$w/omp" && ./run_omp_pack.sh) > "$OUT"/omp_pack.txt 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp hook compare|^PASS|omp pack:" "$OUT"/omp_pack.txt | tail -30
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
bench=$(find . -name 'hook_bench_nvptx' -type f | head -1)
for round in 1 2 3; do
    OMP_TARGET_OFFLOAD=MANDATORY $bench --reps 11 --only r,p --json "$OUT/regions$round.json" > "$OUT/regions$round.txt" 2>&1
    echo "round $round exit $?"; grep -E "^(r|p)-|wrong" "$OUT/regions$round.txt"
done
