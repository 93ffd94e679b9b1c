#!/usr/bin/env bash
# LLVM 16 runtime. hook_bench_nvptx of d4b08a2 (new: 512 small plan slots, give-up after 1024
# misses), of d4b08a2 with the give-up count at 256 (g256), and of 1037282 (head: 128 slots,
# 256): shapes e and h, medians of 11, four rounds of one process each, the order rotating;
# then h and e under OMPBATCH_STATS=1 in new and head (plans built).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
timeout 60 ./hook_bench_new --reps 1 --only a > /dev/null 2>&1
for k in 1 2 3 4; do
  case $k in 1) order="new g256 head";; 2) order="head new g256";; 3) order="g256 head new";; 4) order="new head g256";; esac
  for b in $order; do echo "== round $k $b"; timeout 40 ./hook_bench_$b --reps 11 --only e,h; echo "exit $?"; done
done > "$OUT/giveup.txt" 2>&1
grep -E "^== |^[eh](-to|-from)? |^exit|checked" "$OUT/giveup.txt" | sed -E 's/ +/ /g' | cut -c1-130
for b in new head; do echo "== stats $b"; OMPBATCH_STATS=1 timeout 40 ./hook_bench_$b --reps 11 --only e,h; done > "$OUT/stats.txt" 2>&1
grep -E "^== |hook time|^(e|h-to|h-from) +[0-9]" "$OUT/stats.txt" | sed -E 's/ +/ /g'
OMPBATCH_VERBOSE=2 timeout 30 ./hook_bench_new --reps 1 --only h > "$OUT/verbose_h.txt" 2>&1
grep -oE "[0-9]+ copies -> [0-9]+ planned, [0-9]+ step" "$OUT/verbose_h.txt" | sort | uniq -c | sort -rn | head -8
gzip -f "$OUT/verbose_h.txt"
date -u
