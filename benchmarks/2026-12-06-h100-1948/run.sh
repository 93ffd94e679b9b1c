#!/usr/bin/env bash
# LLVM 16 runtime. head = hook_bench_nvptx of 7fbc4d5 (the code of 540a1bb), the packs of 7fbc4d5.
# Every GPU: host info, the goal shapes a-j, three processes (hook off/on alternating inside each),
# and LIBOMPTARGET_INFO=8 of shapes a and e (where the runtime puts the arrays' device copies).
# On an H200 also the OpenMP pack at 9 repetitions (never slower) and the GPU library tests.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_head --reps 1 --only a,b > /dev/null 2>&1
  for k in 1 2 3; do
    echo "== process $k"; date -u; timeout 60 ./hook_bench_head --reps 11 --only a,b,c,d,e,f,g,h,j; echo "exit $?"
  done; date -u ) > "$OUT/goal.txt" 2>&1
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY LIBOMPTARGET_INFO=8
  timeout 30 ./hook_bench_head --reps 2 --only a 2>&1 | grep -E "Creating new map entry" | head -3000 > "$OUT/info_a.txt"
  timeout 30 ./hook_bench_head --reps 2 --only e 2>&1 | grep -E "Creating new map entry|Removing map entry" | head -6000 > "$OUT/info_e.txt" ) 2>&1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  p=$(mktemp -d)
  tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p" && tar xzf gpu_pack.tar.gz -C "$p"
  (cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && timeout 240 ./run_omp_pack.sh --bench-args "--reps 9") > "$OUT/omp_pack.txt" 2>&1
  cp "$p/logs/hook_bench.json" "$OUT/pack_hook_bench.json"
  cp "$p/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
  (cd "$p" && timeout 120 ./gpu_pack/run_gpu_tests.sh) > "$OUT/gpu_tests.txt" 2>&1
fi
ls -la "$OUT"
