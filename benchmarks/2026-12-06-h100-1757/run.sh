#!/usr/bin/env bash
# LLVM 16 runtime, one H100 host, two calls back to back (17:57 and 17:58). Builds
# (hook_bench_nvptx of each): fix = 540a1bb (growable arrays double from 8), new = d4b08a2 (512
# small plan slots, arrays from 64), head = 1037282 (128 slots).
# 1) e and h under OMPBATCH_STATS=1, 11 repetitions, two rounds of one process per build, the
#    order rotating (stats.txt). 2) h alone at 41 repetitions, so that its plans fill the 512
#    slots early and most repetitions run with them full, two rounds (long_h.txt).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
timeout 60 ./hook_bench_fix --reps 1 --only a,b > /dev/null 2>&1
for k in 1 2; do
  case $k in 1) order="fix new head";; 2) order="head new fix";; esac
  for b in $order; do echo "== stats round $k $b"; OMPBATCH_STATS=1 timeout 40 ./hook_bench_$b --reps 11 --only e,h; echo "exit $?"; done
done > "$OUT/stats.txt" 2>&1
for k in 1 2; do
  for b in fix new head; do echo "== round $k $b"; OMPBATCH_STATS=1 timeout 40 ./hook_bench_$b --reps 41 --only h; done
done > "$OUT/long_h.txt" 2>&1
