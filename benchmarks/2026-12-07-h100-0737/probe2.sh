#!/usr/bin/env bash
# Forwarded regions under contention: the baseline (hook_bench_x, OBX_SKIP unset) against the
# lean forward (hook_bench_B), alternating processes; the host's clock and /proc/loadavg costs.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource; ./clock_probe; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
S=r-floor-naive,r-present,r-one-to,r-single
{
for k in 1 2 3 4; do
  for b in x B; do echo "== $b $k"; timeout 60 ./hook_bench_$b --contention --reps 9 --only $S 2>&1 | grep -E "^r-|slower|inconcl"; done
done
for b in x B; do echo "== stats $b"; OMPBATCH_STATS=1 timeout 60 ./hook_bench_$b --contention --reps 9 --only $S 2>&1 | grep -A6 "where a hook-on"; done
date -u
} > "$OUT/probe2.txt" 2>&1
grep -E "^==|^r-floor|^r-present" "$OUT/probe2.txt"
