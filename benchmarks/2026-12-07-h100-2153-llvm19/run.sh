#!/usr/bin/env bash
# HEAD on whatever GPU comes, LLVM 19 runtime (the small bundle): the OpenMP pack at 5 reps;
# then the library's GPU tests.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core|Thread" ; } | tee "$R/host.txt"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 380 ./run_omp_pack.sh --bench-args "--reps 5") > "$R/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^never|^inconclusive|checked" "$R/omp_pack_llvm19.txt" | cut -c1-220
tar czf "$R/logs.tar.gz" -C "$w" logs
g=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$g"
(cd "$g" && timeout 150 ./gpu_pack/run_gpu_tests.sh) > "$R/gpu_tests.txt" 2>&1; tail -1 "$R/gpu_tests.txt"
tar czf "$OUT/r.tar.gz" -C "$OUT" r && rm -rf "$R"
date -u
