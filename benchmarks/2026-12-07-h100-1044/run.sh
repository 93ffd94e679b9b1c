#!/usr/bin/env bash
# The library's GPU tests; the OpenMP pack at 5 repetitions as users run it, then again with
# OMPBATCH_REGISTER_MB=4096 exported (every hooked run may register).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p" && tar xzf gpu_pack.tar.gz -C "$p"
(cd "$p" && timeout 120 ./gpu_pack/run_gpu_tests.sh) > "$OUT/gpu_tests.txt" 2>&1; tail -1 "$OUT/gpu_tests.txt"
for mode in default register; do
  if [ $mode = register ]; then export OMPBATCH_REGISTER_MB=4096; fi
  (cd "$p" && rm -rf logs && OUT=$p/logs && mkdir -p "$OUT" && timeout 260 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_$mode.txt" 2>&1
  cp "$p/logs/hook_bench.json" "$OUT/pack_hook_bench_$mode.json"; cp "$p/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention_$mode.json"
  echo "== $mode"; grep -E "^FAIL|omp pack:|^never|^inconclusive" "$OUT/omp_pack_$mode.txt"; date -u
done
