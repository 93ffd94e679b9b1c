#!/usr/bin/env bash
# LLVM 19 runtime: the OpenMP pack at 5 repetitions (compare tests, never slower idle and
# contended); then r-reduce and r-floor-reduce with OMPBATCH_REGISTER_MB unset and 4096,
# alternating, three rounds at 11 repetitions (the 15:34 LLVM 16 run had r-floor-reduce 0.86x
# with registration, 5 of 5 pairs).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/host.txt"
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 300 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^never|^inconclusive" "$OUT/omp_pack_llvm19.txt" | cut -c1-250
(cd "$w/logs" && ls -l --time-style=+%T -tr) > "$OUT/log_times.txt"; date -u +%T
mkdir -p "$w/probe"
( cd "$w" && export LD_LIBRARY_PATH="$w/lib" PATH="$w/bin:$PATH" LD_PRELOAD="$w/lib/libnvptx_jit_init.so" OMP_TARGET_OFFLOAD=MANDATORY
  for round in 1 2 3; do for mb in 0 4096; do
    OMPBATCH_REGISTER_MB=$mb timeout 60 ./bin/hook_bench_nvptx --only r-reduce,r-floor --reps 11 --json probe/reduce_${mb}_$round.json > probe/reduce_${mb}_$round.txt 2>&1
    echo "register_mb=$mb round $round rc=$?"; grep -E "^r-" probe/reduce_${mb}_$round.txt | cut -c1-16,80-150
  done; done )
tar czf "$OUT/logs.tar.gz" -C "$w" logs probe
date -u
