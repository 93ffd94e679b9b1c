#!/usr/bin/env bash
# On whatever GPU comes: the goal shapes a-j at eb2f1e0 in three processes (hook off and on
# alternating in each, 11 repetitions); the forwarded region shapes under contention, eb2f1e0
# (v0) against v0 + the memo of regions found present (v2), alternating, four rounds; the
# library's GPU tests.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core|Thread" ; } | tee "$R/host.txt"
p=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$p"
( export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  timeout 60 ./hook_bench_v0 --reps 1 --only a,b > /dev/null 2>&1
  for k in 1 2 3; do
    echo "== process $k"; date -u
    timeout 90 ./hook_bench_v0 --reps 11 --only a,b,c,d,e,f,g,h,j --json "$R/goal_$k.json"; echo "exit $?"
  done; date -u ) > "$R/goal.txt" 2>&1
grep -E "^(a|b|c|d|e|f|g) " "$R/goal.txt" | cut -c1-12,80-140
( export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  S=r-one-to,r-present,r-floor-naive,r-floor-tofrom
  for k in 1 2 3 4; do
    o="v0 v2"; [ $((k % 2)) = 0 ] && o="v2 v0"
    for v in $o; do
      timeout 60 ./hook_bench_$v --only $S --reps 31 --contention --json "$R/${v}_$k.json" > "$R/${v}_$k.txt" 2>&1
      echo "$v $k rc=$? $(grep -oE '[0-9.]+x ' "$R/${v}_$k.txt" | tr '\n' ' ')"
    done
  done ) 2>&1 | tee "$R/ab.txt"
tar xzf gpu_pack.tar.gz -C "$p"
(cd "$p" && timeout 150 ./gpu_pack/run_gpu_tests.sh) > "$R/gpu_tests.txt" 2>&1; tail -1 "$R/gpu_tests.txt"
tar czf "$OUT/r.tar.gz" -C "$OUT" r && rm -rf "$R"
date -u
