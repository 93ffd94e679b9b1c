#!/usr/bin/env bash
# Rectangles unpacked chunk by chunk as they land, in 4 rounds of the grid (new), 1 and 16
# rounds, against HEAD's (base), alternating; then the library's GPU pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
b=$(mktemp -d); tar xzf gpu_pack_base.tar.gz -C "$b"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for k in 1 2 3; do
  echo "== base $k"; "$b/gpu_pack/tools/rect_bench" --require-gpu --rounds 21
  echo "== new (4 rounds) $k"; OMPBATCH_STATS=1 "$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 21 --phases
  echo "== 1 round $k"; OMPBATCH_STATS=1 ./rect_bench_r1 --require-gpu --rounds 21 --phases
  echo "== 16 rounds $k"; OMPBATCH_STATS=1 ./rect_bench_r16 --require-gpu --rounds 21 --phases
done > "$OUT/rect_bench.txt" 2>&1
grep -E "^==|^x |^y |phases" "$OUT/rect_bench.txt"
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 240 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
