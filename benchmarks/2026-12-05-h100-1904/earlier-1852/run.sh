#!/usr/bin/env bash
# Diagnostics: where the rectangle's unpack goes (pack threads late? one thread?), and the
# enqueue of hook shapes a-e split into pack, launch and copy calls (each shape its own process).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
R=$w/gpu_pack/tools/rect_bench
for k in 1 2; do
  echo "== default $k"; OMPBATCH_STATS=1 $R --require-gpu --rounds 21 --phases | grep -E "^x|^y"
  echo "== verbose2 $k"; OMPBATCH_STATS=1 OMPBATCH_VERBOSE=2 $R --require-gpu --rounds 21 --phases > "$OUT/rv$k.txt" 2>&1; grep -E "^x|^y" "$OUT/rv$k.txt"; grep -c "came late" "$OUT/rv$k.txt"; grep "came late" "$OUT/rv$k.txt" | head -3
  echo "== 1 thread $k"; OMPBATCH_STATS=1 OMPBATCH_PACK_THREADS=1 $R --require-gpu --rounds 21 --phases | grep -E "^x|^y"
done 2>&1 | tee "$OUT/rect.txt"
export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY OMPBATCH_STATS=1
for s in a b c d e; do
  echo "== shape $s"; timeout 60 "$w/omp/bin/hook_bench_nvptx" --reps 7 --only $s > "$OUT/hb_$s.txt" 2>&1
  grep -E "^$s  |^ompbatch hook time" "$OUT/hb_$s.txt"; sed -n '/^where/,/^$/p' "$OUT/hb_$s.txt" | grep -E "^$s "
done
date -u
