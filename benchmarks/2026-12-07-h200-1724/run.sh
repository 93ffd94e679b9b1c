#!/usr/bin/env bash
# eb2f1e0 on whatever GPU comes: the OpenMP pack (LLVM 16) at 9 repetitions.
# alternating in each, 11 repetitions), then the OpenMP pack (LLVM 16) at 9 repetitions.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core|Thread" ; } | tee "$R/host.txt"
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p"
date -u +%T.%N > "$R/pack_start.txt"
(cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && timeout 420 ./run_omp_pack.sh --bench-args "--reps 9") > "$R/omp_pack.txt" 2>&1
echo "pack exit $?"
(cd "$p/logs" && ls -l --time-style=+%T -tr) > "$R/log_times.txt"
tar czf "$R/logs.tar.gz" -C "$p" logs
grep -E "^FAIL|omp pack:|^never|^inconclusive" "$R/omp_pack.txt" | cut -c1-220
tar czf "$OUT/r.tar.gz" -C "$OUT" r && rm -rf "$R"
date -u
