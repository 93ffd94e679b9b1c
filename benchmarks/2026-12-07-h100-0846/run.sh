#!/usr/bin/env bash
# LLVM 16 runtime. head = hook_bench_nvptx and the packs of 39fabe9.
# Host info; on any GPU but an H200 the GPU library tests, benchmarks/probes/overlap_probe (auto
# and blocking-sync contexts) and the OpenMP pack at 5 repetitions; on an H200 first the goal
# shapes a-j in three processes (hook off and on alternating in each), where a, b, c and f spend
# their time (OMPBATCH_STATS=1, one process each), the wait probe (auto, blocking), then the tests, the probe and the pack at 9.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
probe() { for c in auto blocking; do timeout 60 ./overlap_probe overlap_probe.cubin $c; echo "exit $?"; done 2>&1 | tee "$OUT/overlap_probe.txt"; }
h200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && h200=1
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p" && tar xzf gpu_pack.tar.gz -C "$p"
gputests() { (cd "$p" && timeout 120 ./gpu_pack/run_gpu_tests.sh) > "$OUT/gpu_tests.txt" 2>&1; tail -1 "$OUT/gpu_tests.txt"; }
omppack() {
  (cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && timeout 240 ./run_omp_pack.sh --bench-args "--reps $1") > "$OUT/omp_pack.txt" 2>&1
  cp "$p/logs/hook_bench.json" "$OUT/pack_hook_bench.json"
  cp "$p/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
  grep -E "omp pack:|^never|^inconclusive|slower" "$OUT/omp_pack.txt" | head -20; }
if [ $h200 = 0 ]; then gputests; probe; omppack 5; echo "not an H200: no goal shapes"; ls -la "$OUT"; exit 0; fi
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_head --reps 1 --only a,b > /dev/null 2>&1
  for k in 1 2 3; do
    echo "== process $k"; date -u; timeout 60 ./hook_bench_head --reps 11 --only a,b,c,d,e,f,g,h,j; echo "exit $?"
  done; date -u
  for s in a b c f; do echo "== stats $s"; OMPBATCH_STATS=1 timeout 30 ./hook_bench_head --reps 11 --only $s; done
) > "$OUT/goal.txt" 2>&1
for m in auto blocking; do timeout 60 ./wait_probe wait_probe.cubin $m; echo "exit $?"; done > "$OUT/wait_probe.txt" 2>&1
bash extract.sh "$OUT/goal.txt" | head -12
gputests; probe; omppack 9
ls -la "$OUT"
