#!/usr/bin/env bash
# OMPBATCH_REGISTER_MB off and on: hook_bench --only f,g --reps 11 in three alternating pairs of
# processes (hook off and on alternating inside each), one verbose process that shows the
# registrations, the library's GPU tests, then the OpenMP pack at 5 repetitions with
# OMPBATCH_REGISTER_MB=4096 exported (every compare test and hook_bench hooked with it).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$w"
( export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_head --reps 1 --only f,g > /dev/null 2>&1
  for k in 1 2 3; do
    echo "== off $k"; date -u; timeout 90 ./hook_bench_head --reps 11 --only f,g; echo "exit $?"
    echo "== register $k"; date -u; OMPBATCH_REGISTER_MB=4096 timeout 90 ./hook_bench_head --reps 11 --only f,g; echo "exit $?"
  done
  echo "== verbose"; OMPBATCH_VERBOSE=1 OMPBATCH_REGISTER_MB=4096 timeout 60 ./hook_bench_head --reps 3 --only f,g 2>&1 | grep -E "hook: (registered|unregistered|cannot|not registering)|checked|exit"
) > "$OUT/register_bench.txt" 2>&1
grep -E "^== |^[fg] |exit|checked|registered" "$OUT/register_bench.txt" | head -60
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p" && tar xzf gpu_pack.tar.gz -C "$p"
(cd "$p" && timeout 120 ./gpu_pack/run_gpu_tests.sh) > "$OUT/gpu_tests.txt" 2>&1; tail -1 "$OUT/gpu_tests.txt"
(cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && OMPBATCH_REGISTER_MB=4096 timeout 300 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_register.txt" 2>&1
cp "$p/logs/hook_bench.json" "$OUT/pack_hook_bench.json"; cp "$p/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
grep -E "^FAIL|omp pack:|^never|^inconclusive" "$OUT/omp_pack_register.txt"
date -u
