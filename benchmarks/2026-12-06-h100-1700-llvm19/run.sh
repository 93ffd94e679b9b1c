#!/usr/bin/env bash
# LLVM 19 runtime (the stubbed bundle). Packs of f87b760 (540a1bb's code). 1) The OpenMP pack at 5
# repetitions. 2) Shapes e and h (medians of 11) of fix19 (540a1bb), new19 (d4b08a2) and head19
# (1037282), hook_bench_nvptx_llvm19 of each, in rounds of one process each, the order rotating.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; lscpu | grep -E "Model name|^Core"; } | tee "$OUT/host.txt"
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 220 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
grep -h "hooked+busy" "$w"/logs/*.log | grep -c '^ok'
grep -E "^FAIL|omp pack:|^never|^inconclusive|checked" "$OUT/omp_pack_llvm19.txt"
cp "$w/logs/hook_bench.json" "$OUT/pack_hook_bench.json"; cp "$w/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
date -u
export LD_LIBRARY_PATH=$w/lib PATH=$w/bin:$PATH LD_PRELOAD=$w/lib/libnvptx_jit_init.so
export OMP_TARGET_OFFLOAD=MANDATORY
for k in 1 2 3 4; do
  case $k in 1) order="fix19 new19 head19";; 2) order="head19 fix19 new19";; 3) order="new19 head19 fix19";; 4) order="fix19 head19 new19";; esac
  for b in $order; do
    [ $SECONDS -gt 330 ] && break 2
    echo "== round $k $b"; timeout 25 ./hook_bench_$b --reps 11 --only e,h; echo "exit $?"
  done
done > "$OUT/eh19.txt" 2>&1
grep -E "^== |^[eh](-to|-from)? |^exit|checked" "$OUT/eh19.txt" | sed -E 's/ +/ /g' | cut -c1-130
date -u
