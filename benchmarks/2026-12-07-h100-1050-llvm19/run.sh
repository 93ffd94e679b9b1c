#!/usr/bin/env bash
# LLVM 19 runtime; the OpenMP pack of HEAD at 5 repetitions (compare tests, never slower idle
# and contended).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/host.txt"
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 450 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^never|^inconclusive|checked" "$OUT/omp_pack_llvm19.txt"
cp "$w/logs/hook_bench.json" "$OUT/pack_hook_bench.json"; cp "$w/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
date -u
