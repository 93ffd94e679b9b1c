#!/usr/bin/env bash
# HEAD: GPU tests, then the OpenMP pack at 5 repetitions (LLVM 16, no registration): compare tests
# (their log files' times show how long each took), never slower idle and contended.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p" && tar xzf gpu_pack.tar.gz -C "$p"
(cd "$p" && timeout 150 ./gpu_pack/run_gpu_tests.sh) > "$OUT/gpu_tests.txt" 2>&1; tail -1 "$OUT/gpu_tests.txt"; date -u +%T
date -u +%T.%N > "$OUT/pack_start.txt"
(cd "$p" && rm -rf logs && OUT=$p/logs && mkdir -p "$OUT" && timeout 420 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_default.txt" 2>&1
echo "pack exit $?"
mkdir -p "$OUT/logs"; cp "$p"/logs/* "$OUT/logs/" 2>/dev/null
(cd "$p/logs" && ls -l --time-style=+%T -tr) > "$OUT/log_times.txt"
grep -E "^FAIL|omp pack:|^never|^inconclusive" "$OUT/omp_pack_default.txt" | cut -c1-200
cat "$OUT/pack_start.txt"; awk '{print $6, $7}' "$OUT/log_times.txt" | head -40
date -u
