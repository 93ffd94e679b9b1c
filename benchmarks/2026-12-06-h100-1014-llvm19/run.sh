#!/usr/bin/env bash
# LLVM 19 runtime, 7f2d0ec: target-region shapes under --contention with the host's load read
# as the library reads it (auto) and with OMPBATCH_HOST_BUSY=0 (regions split as on an idle
# host), three rounds alternating the order; one idle process of each at the end.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; lscpu | grep -E "Model name|^Core"; } | tee "$OUT/host.txt"
cd "$w"
export LD_LIBRARY_PATH=$w/lib PATH=$w/bin:$PATH LD_PRELOAD=$w/lib/libnvptx_jit_init.so
export OMP_TARGET_OFFLOAD=MANDATORY
shapes=r-naive,r-single,r-reduce,r-present,r-one-to,r-floor-naive,r-floor-reduce
run() { # $1 = auto|0, $2 = extra flag, $3 = tag
  echo "== $3 busy=$1 $2"
  if [ "$1" = auto ]; then timeout 80 bin/hook_bench_nvptx --reps 9 --only $shapes $2 --json "$OUT/$3.json"
  else OMPBATCH_HOST_BUSY=$1 timeout 80 bin/hook_bench_nvptx --reps 9 --only $shapes $2 --json "$OUT/$3.json"; fi
  echo "exit $?"
}
for k in 1 2 3; do
  if [ $k = 2 ]; then run 0 --contention c$k-0; run auto --contention c$k-auto
  else run auto --contention c$k-auto; run 0 --contention c$k-0; fi
done > "$OUT/regions.txt" 2>&1
grep -E "^== |^r-|^exit|^never|^inconclusive" "$OUT/regions.txt"
date -u
(cd "$OUT" && tar czf regions_json.tar.gz *.json && rm -f *.json)
