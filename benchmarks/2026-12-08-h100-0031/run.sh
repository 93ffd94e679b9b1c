#!/usr/bin/env bash
# LLVM 16 runtime. The pack is wip fe3a27b ("new": gathered pieces unpacked as their blocks'
# words come; the bus pack done while the launch call runs); hook_bench_head is e967d6f's.
# (1) the OpenMP pack at 5 reps (27 tests: compare tests incl. pinned_by_program, the
# never-slower matrix idle and contended, the goal shapes); (2) head against new on a, b, e, five
# alternating rounds; (3) idle regions on present data, eb2f1e0 (v0) against new, three rounds;
# (4) OMPBATCH_STATS=1 per shape a-e (new), b and a with one pack thread (new), a and b (head);
# (5) goal shapes in three processes (new).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core|Thread"
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource; } | tee "$R/host.txt"
p=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$p"; tar xzf omp_gpu_pack.tar.gz -C "$p"
hb=$p/bin/hook_bench_nvptx; cp "$hb" ./hook_bench_new
date -u +%T.%N > "$R/pack_start.txt"
(cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && timeout 300 ./run_omp_pack.sh --bench-args "--reps 5") > "$R/omp_pack.txt" 2>&1
echo "pack exit $?"
(cd "$p/logs" && ls -l --time-style=+%T -tr) > "$R/log_times.txt"
tar czf "$R/logs.tar.gz" -C "$p" logs
grep -E "^FAIL|omp pack:|^never|^inconclusive" "$R/omp_pack.txt" | cut -c1-220
tar czf "$OUT/r.tar.gz" -C "$OUT" r
AB=../benchmarks/ab_hook_bench.sh
( export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  AB_TIMEOUT=60 bash $AB --rounds 5 head=./hook_bench_head new=./hook_bench_new "$R/new" \
     --only a,b,e --reps 11
  date -u ) > "$R/ab_new.txt" 2>&1
grep -E "ratio" "$R/ab_new.txt"
tar czf "$OUT/r.tar.gz" -C "$OUT" r
( export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_v0 --reps 1 --only a > /dev/null 2>&1
  AB_TIMEOUT=60 bash $AB --rounds 3 v0=./hook_bench_v0 new=./hook_bench_new "$R/idle" \
     --only r-floor-naive,r-present,r-floor-reduce,r-reduce --reps 15
  date -u ) > "$R/ab_idle.txt" 2>&1
grep -E "ratio" "$R/ab_idle.txt"
tar czf "$OUT/r.tar.gz" -C "$OUT" r
( export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  for s in a b c d e; do
    echo "== stats $s"; OMPBATCH_STATS=1 timeout 60 ./hook_bench_new --reps 11 --only $s
  done > "$R/stats.txt" 2>&1; echo "stats exit $?"
  for s in b a; do
    echo "== stats $s, one pack thread"; OMPBATCH_PACK_THREADS=1 OMPBATCH_STATS=1 timeout 60 ./hook_bench_new --reps 11 --only $s
  done >> "$R/stats.txt" 2>&1
  for s in a b; do
    echo "== stats $s, head"; OMPBATCH_STATS=1 timeout 60 ./hook_bench_head --reps 11 --only $s
  done >> "$R/stats.txt" 2>&1
  tar czf "$OUT/r.tar.gz" -C "$OUT" r
  for k in 1 2 3; do
    echo "== process $k"; timeout 90 ./hook_bench_new --reps 11 --only a,b,c,d,e,f,g,h,j --json "$R/goal_$k.json"
    echo "exit $?"; tar czf "$OUT/r.tar.gz" -C "$OUT" r
  done > "$R/goal.txt" 2>&1
  grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$R/goal.txt" | cut -c1-150 )
tar czf "$OUT/r.tar.gz" -C "$OUT" r
date -u
