#!/usr/bin/env bash
# Forwarded regions under contention: which part of the hook's forward path costs.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null; which perf strace 2>/dev/null; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
S=r-floor-naive,r-present,r-one-to,r-single
run() { local tag=$1; shift; echo "== $tag"; timeout 60 "$@" 2>&1 | grep -E "^r-|slower|inconcl|^  *(construct|kernel)" ; }
{
for k in 1 2; do
  run "default $k" ./hook_bench_x --contention --reps 9 --only $S
  run "skip-all(63) $k" env OBX_SKIP=63 ./hook_bench_x --contention --reps 9 --only $S
  run "skip-splittable(1) $k" env OBX_SKIP=1 ./hook_bench_x --contention --reps 9 --only $S
  run "skip-kernelmaps(2) $k" env OBX_SKIP=2 ./hook_bench_x --contention --reps 9 --only $S
  run "skip-learn(4) $k" env OBX_SKIP=4 ./hook_bench_x --contention --reps 9 --only $S
  run "skip-rwlock(8) $k" env OBX_SKIP=8 ./hook_bench_x --contention --reps 9 --only $S
  run "skip-resolve(32) $k" env OBX_SKIP=32 ./hook_bench_x --contention --reps 9 --only $S
  run "skip-31 $k" env OBX_SKIP=31 ./hook_bench_x --contention --reps 9 --only $S
  run "hostbusy0 $k" env OMPBATCH_HOST_BUSY=0 ./hook_bench_x --contention --reps 9 --only $S
  run "bind $k" env OMP_PROC_BIND=close OMP_PLACES=cores ./hook_bench_x --contention --reps 9 --only $S
done
echo "== stats"; OMPBATCH_STATS=1 timeout 60 ./hook_bench_x --contention --reps 9 --only $S 2>&1 | tail -40
echo "== idle forced busy"; OMPBATCH_HOST_BUSY=1 timeout 60 ./hook_bench_x --reps 9 --only $S 2>&1 | grep -E "^r-|slower|inconcl"
date -u
} > "$OUT/probe.txt" 2>&1
grep -E "^==|^r-floor" "$OUT/probe.txt"
