#!/usr/bin/env bash
# rect_bench twice, then the library's GPU pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
date -u
"$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 21 > "$OUT/rect_bench.txt" 2>&1; echo "rect_bench exit $?"
cat "$OUT/rect_bench.txt"
"$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 21 > "$OUT/rect_bench2.txt" 2>&1; cat "$OUT/rect_bench2.txt"
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 300 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
