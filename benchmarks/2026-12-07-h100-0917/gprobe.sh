#!/usr/bin/env bash
# g and f under contention: where the hook's time goes (OMPBATCH_STATS=1), three processes;
# then three with OMPBATCH_VERBOSE=2 --reps 1 to see how the batch sends them.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
  for k in 1 2 3; do
    echo "== stats contention $k"; OMPBATCH_STATS=1 timeout 120 ./hook_bench_head --contention --reps 9 --only g,f,k-from; echo "exit $?"
  done
  echo "== verbose"; OMPBATCH_VERBOSE=2 timeout 60 ./hook_bench_head --contention --reps 1 --only g 2>&1 | grep -v "^ompbatch: hook: .*forward" | head -80
) > "$OUT/gprobe.txt" 2>&1
grep -E "^== |^[gfk](-from)? |exit|slower|checked" "$OUT/gprobe.txt" | head -40
date -u
