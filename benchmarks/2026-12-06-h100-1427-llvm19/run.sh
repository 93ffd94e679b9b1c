#!/usr/bin/env bash
# LLVM 19 runtime (the bundle with stubs for libz3 and libicudata), d4b08a2. 1) The OpenMP pack
# (hook tests compared plain, linked, preloaded, disabled and busy-host; hook_bench idle and
# under --contention at 5 repetitions, paired verdict). 2) While time is left, shapes e and h
# (medians of 11) in rounds of one process each of new19 (d4b08a2), g25619 (d4b08a2 with the
# plan cache's give-up count at 256) and head19 (1037282), the order rotating.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; lscpu | grep -E "Model name|^Core"; } | tee "$OUT/host.txt"
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 200 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
grep -h "hooked+busy" "$w"/logs/*.log | grep -c '^ok'
grep -E "^FAIL|omp pack:|^never|^inconclusive|checked" "$OUT/omp_pack_llvm19.txt"
cp "$w/logs/hook_bench.json" "$OUT/pack_hook_bench.json"; cp "$w/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
date -u
export LD_LIBRARY_PATH=$w/lib PATH=$w/bin:$PATH LD_PRELOAD=$w/lib/libnvptx_jit_init.so
export OMP_TARGET_OFFLOAD=MANDATORY
for k in 1 2 3; do
  case $k in 1) order="new19 g25619 head19";; 2) order="head19 new19 g25619";; 3) order="g25619 head19 new19";; esac
  for b in $order; do
    [ $SECONDS -gt 215 ] && break 2
    echo "== round $k $b"; timeout 25 ./hook_bench_$b --reps 11 --only e,h; echo "exit $?"
  done
done > "$OUT/giveup.txt" 2>&1
grep -E "^== |^[eh](-to|-from)? |^exit|checked" "$OUT/giveup.txt" | sed -E 's/ +/ /g' | cut -c1-130
date -u
