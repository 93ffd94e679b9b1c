#!/usr/bin/env bash
# LLVM 16 runtime on whatever GPU comes. (1) idle regions on present data, eb2f1e0 (v0) against
# HEAD, alternating processes, three rounds; (2) under contention, 5cd9dd3 (pre, before the load
# read by pread) against HEAD, three rounds; (3) HEAD's OpenMP pack at 7 reps.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core|Thread"
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource; } | tee "$R/host.txt"
p=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$p"; tar xzf omp_gpu_pack.tar.gz -C "$p"
cp "$p/bin/hook_bench_nvptx" ./hook_bench_head
AB=../benchmarks/ab_hook_bench.sh
( export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_v0 --reps 1 --only a > /dev/null 2>&1
  AB_TIMEOUT=60 bash $AB --rounds 3 v0=./hook_bench_v0 head=./hook_bench_head "$R/idle" \
     --only r-floor-naive,r-present,r-floor-reduce,r-reduce --reps 15
  date -u
  AB_TIMEOUT=90 bash $AB --rounds 3 pre=./hook_bench_pre head=./hook_bench_head "$R/cont" \
     --contention --only r-one-to,r-present,r-floor-naive,r-floor-tofrom --reps 31
  date -u ) 2>&1 | tee "$R/ab.txt"
tar czf "$OUT/ab.tar.gz" -C "$OUT" r
date -u +%T.%N > "$R/pack_start.txt"
(cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && timeout 300 ./run_omp_pack.sh --bench-args "--reps 7") > "$R/omp_pack.txt" 2>&1
echo "pack exit $?"
(cd "$p/logs" && ls -l --time-style=+%T -tr) > "$R/log_times.txt"
tar czf "$R/logs.tar.gz" -C "$p" logs
grep -E "^FAIL|omp pack:|^never|^inconclusive" "$R/omp_pack.txt" | cut -c1-220
rm -rf "$R/idle" "$R/cont"
tar czf "$OUT/r.tar.gz" -C "$OUT" r && rm -rf "$R"
date -u
