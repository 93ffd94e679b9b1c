#!/usr/bin/env bash
# Where the hook's time goes, shape by shape, each in its own process after one that
# calibrates: hook_bench --only <shape> under OMPBATCH_STATS=1 (the per-shape phase table and
# the process line with the enqueue's pack, launch and copy calls); then the library's GPU
# pack at this commit.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY OMPBATCH_STATS=1
 timeout 60 "$w/omp/bin/hook_bench_nvptx" --reps 1 --only c > "$OUT/calibrate.txt" 2>&1
 for s in s-col-to:31 s-col-from:31 a:15 c:7 f:7 s-col-to:31; do
   k=${s%%:*}; r=${s##*:}
   echo "== $k, --reps $r"; timeout 90 "$w/omp/bin/hook_bench_nvptx" --reps $r --only $k > "$OUT/hb_$k.txt" 2>&1
   grep -E "^$k |^ompbatch hook time" "$OUT/hb_$k.txt"; sed -n '/^where/,/^$/p' "$OUT/hb_$k.txt" | grep -E "^$k " | head -1
 done) 2>&1 | tee "$OUT/phases.txt"
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 240 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
