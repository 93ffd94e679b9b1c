#!/usr/bin/env bash
# LLVM 16 runtime. new = 1037282 + 512 small plan slots found in the order of the last pass;
# head = hook_bench_nvptx of 1037282 (hook_bench_head). The goal shapes (hook_bench a-j,
# medians of 11, hook off and on alternating in each process) in three rounds, each round one
# process of each build, the order alternating; shape e under OMPBATCH_STATS=1 in each build
# (plans built); the OpenMP pack of new (hook tests compared plain, linked, preloaded, disabled
# and busy-host; stencil, halo; hook_bench idle and under --contention at 9 repetitions); then
# the regions on present data under --contention, rounds of one process with the host's load
# read as the library reads it (auto: forwarded when busy) and one with OMPBATCH_HOST_BUSY=0
# (device addresses, the rule before 5909652), the order alternating, while time is left.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$w" && tar xJf omp_runtime_bundle.tar.xz -C "$w"
export LD_LIBRARY_PATH="$w/lib" OMP_TARGET_OFFLOAD=MANDATORY
hb=$w/bin/hook_bench_nvptx
shapes=a,b,c,d,e,f,g,h,j
timeout 60 "$hb" --reps 1 --only a,b > "$OUT/warmup.txt" 2>&1; echo "warm-up exit $?"
for k in 1 2 3; do
  for build in new head; do
    [ $k = 2 ] && build=$([ $build = new ] && echo head || echo new)
    echo "== round $k $build"
    case $build in
    new) timeout 60 "$hb" --reps 11 --only $shapes ;;
    head) timeout 60 ./hook_bench_head --reps 11 --only $shapes ;;
    esac
    echo "exit $?"
  done
done > "$OUT/goal.txt" 2>&1
grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$OUT/goal.txt" | sed -E 's/ +/ /g'
date -u
for build in new head; do
  echo "== stats $build e"
  if [ $build = new ]; then OMPBATCH_STATS=1 timeout 40 "$hb" --reps 11 --only e
  else OMPBATCH_STATS=1 timeout 40 ./hook_bench_head --reps 11 --only e; fi
done > "$OUT/stats.txt" 2>&1; echo "stats exit $?"
grep -E "^== |^e |hook time" "$OUT/stats.txt" | sed -E 's/ +/ /g'
date -u
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 240 ./run_omp_pack.sh --bench-args "--reps 9") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -h "hooked+busy" "$w"/logs/*.log | grep -c '^ok'
grep -E "^FAIL|omp pack:|^never|^inconclusive|checked" "$OUT/omp_pack.txt"
cp "$w/logs/hook_bench.json" "$OUT/pack_hook_bench.json"; cp "$w/logs/hook_bench_contention.json" "$OUT/pack_hook_bench_contention.json"
date -u
run() { echo "== $2 busy=$1"
  if [ $1 = auto ]; then timeout 25 "$hb" --contention --reps 9 --only r-floor-naive,r-present
  else OMPBATCH_HOST_BUSY=0 timeout 25 "$hb" --contention --reps 9 --only r-floor-naive,r-present; fi
  echo "exit $?"; }
for k in 1 2 3 4 5 6 7 8; do
  [ $SECONDS -gt 530 ] && break
  if [ $((k % 2)) = 0 ]; then run 0 r$k; run auto r$k; else run auto r$k; run 0 r$k; fi
done > "$OUT/direct.txt" 2>&1
grep -E "^== |^r-|^exit|checked" "$OUT/direct.txt" | sed -E 's/ +/ /g'
date -u
