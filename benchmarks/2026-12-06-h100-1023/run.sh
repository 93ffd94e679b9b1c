#!/usr/bin/env bash
# LLVM 16 runtime (the project's bundle), c7cebbf: the OpenMP pack
# (hook tests compared plain, linked, preloaded, disabled and busy-host; hook_bench idle and
# under --contention at 9 repetitions, paired verdict), then the target-region shapes under
# --contention in three more processes (9 repetitions).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$w" && tar xJf omp_runtime_bundle.tar.xz -C "$w"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; lscpu | grep -E "Model name|^Core"; } | tee "$OUT/host.txt"
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 300 ./run_omp_pack.sh --bench-args "--reps 9") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -h "hooked+busy" "$w"/logs/*.log | grep -c '^ok'
grep -E "^FAIL|omp pack:|^never|^inconclusive|checked" "$OUT/omp_pack.txt"
cp "$w/logs/hook_bench.json" "$OUT/pack_hook_bench.json"; cp "$w/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
date -u
cd "$w"
export LD_LIBRARY_PATH=$w/lib
export OMP_TARGET_OFFLOAD=MANDATORY
for k in 1 2 3; do
  echo "== c$k"
  timeout 80 bin/hook_bench_nvptx --reps 9 --contention --only r-naive,r-single,r-reduce,r-present,r-one-to,r-floor-naive,r-floor-reduce --json "$OUT/regions_c$k.json"
  echo "exit $?"
done > "$OUT/regions.txt" 2>&1
grep -E "^== |^r-|^exit|^never|^inconclusive" "$OUT/regions.txt"
date -u
