#!/usr/bin/env bash
# GPU tests, the OpenMP pack at 5 repetitions (LLVM 16, no registration), the fork-hang diagnosis
# (hang.sh beside it), in at most about 480 s.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p" && tar xzf gpu_pack.tar.gz -C "$p"
(cd "$p" && timeout 120 ./gpu_pack/run_gpu_tests.sh) > "$OUT/gpu_tests.txt" 2>&1; tail -1 "$OUT/gpu_tests.txt"; date -u +%T
(cd "$p" && rm -rf logs && OUT=$p/logs && mkdir -p "$OUT" && timeout 300 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_default.txt" 2>&1
echo "pack exit $?"
cp "$p/logs/hook_bench.json" "$OUT/pack_hook_bench_default.json"; cp "$p/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention_default.json"
grep -E "^FAIL|omp pack:|^never|^inconclusive|fork" "$OUT/omp_pack_default.txt" | cut -c1-200; date -u +%T
timeout 100 bash hang.sh > "$OUT/hang.txt" 2>&1; echo "hang.sh exit $?"; cat "$OUT/hang.txt" | cut -c1-200
date -u
