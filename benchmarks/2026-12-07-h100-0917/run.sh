#!/usr/bin/env bash
# OMPBATCH_REGISTER_MB off and on, alternating processes: hook_bench --only f,g,k-to,k-from
# --reps 7 (three pairs, idle), then --contention --reps 5 (two pairs), then one verbose
# process that shows the registrations.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
S=f,g,k-to,k-from
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_head --reps 1 --only f,g > /dev/null 2>&1
  for k in 1 2 3; do
    echo "== off $k"; date -u; timeout 150 ./hook_bench_head --reps 7 --only $S; echo "exit $?"
    echo "== register $k"; date -u; OMPBATCH_REGISTER_MB=4096 timeout 150 ./hook_bench_head --reps 7 --only $S; echo "exit $?"
  done
  for k in 1 2; do
    echo "== contention off $k"; date -u; timeout 150 ./hook_bench_head --contention --reps 5 --only $S; echo "exit $?"
    echo "== contention register $k"; date -u; OMPBATCH_REGISTER_MB=4096 timeout 150 ./hook_bench_head --contention --reps 5 --only $S; echo "exit $?"
  done
  echo "== verbose"; OMPBATCH_VERBOSE=1 OMPBATCH_REGISTER_MB=4096 timeout 60 ./hook_bench_head --reps 2 --only k-to,k-from 2>&1 | grep -E "hook: (registered|unregistered|cannot|not registering)|checked|exit" | sed 's/at 0x[0-9a-f]*/at ADDR/' | sort | uniq -c
  echo "== verbose contention"; OMPBATCH_VERBOSE=1 OMPBATCH_REGISTER_MB=4096 timeout 60 ./hook_bench_head --contention --reps 2 --only k-to,k-from 2>&1 | grep -E "hook: (registered|unregistered|cannot|not registering)|checked|exit" | sed 's/at 0x[0-9a-f]*/at ADDR/' | sort | uniq -c
) > "$OUT/register_bench.txt" 2>&1
grep -E "^== |^[fgk](-to|-from)? |exit|registered|slower" "$OUT/register_bench.txt" | cut -c1-150 | head -90
OUT=$OUT bash gprobe.sh   # beside this file
date -u
