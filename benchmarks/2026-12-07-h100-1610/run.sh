#!/usr/bin/env bash
# The forwarded region shapes under contention at 15 repetitions, three processes of 4bee699's
# hook_bench (LLVM 16): is r-one-to slower in every process, or in some?
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT/r"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/host.txt"
p=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$p"
export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
for k in 1 2 3; do
  timeout 60 ./hook_bench_woken --only r-one-to,r-present,r-single,r-floor --reps 15 --contention --json "$OUT/r/regions_$k.json" > "$OUT/r/regions_$k.txt" 2>&1
  echo "process $k rc=$?"; grep -E "^r-|^never|^inconclusive" "$OUT/r/regions_$k.txt" | cut -c1-16,80-150
done
tar czf "$OUT/r.tar.gz" -C "$OUT" r && rm -rf "$OUT/r"
date -u
