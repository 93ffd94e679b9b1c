#!/usr/bin/env bash
# LLVM 16 runtime: the goal shapes (hook_bench a-j, medians of 11, hook off and on alternating
# in each process) in three rounds, each round one process of each build in turn: the default
# (bus path, small launches' descriptors as the parameter), hook_bench_table (built with
# -DOB_INLINE_LAUNCH_MAX=0: descriptors read over the bus) and the default with
# OMPBATCH_BUS_KB=0 (the bulk copy); then one process of each
# under OMPBATCH_STATS=1 (where the time goes); the OpenMP pack (hook tests, stencil, halo,
# hook_bench over every shape idle and under --contention); the library's GPU pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
hb=$w/omp/bin/hook_bench_nvptx
shapes=a,b,c,d,e,f,g,h,j
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 # The first process calibrates the cost model (cached for the rest).
 timeout 90 "$hb" --reps 1 --only a,b > "$OUT/warmup.txt" 2>&1; echo "warm-up exit $?"
 for k in 1 2 3; do
   for mode in bus table bulk; do
     echo "== round $k $mode"
     case $mode in
     bus) timeout 90 "$hb" --reps 11 --only $shapes ;;
     table) timeout 90 ./hook_bench_table --reps 11 --only $shapes ;;
     bulk) OMPBATCH_BUS_KB=0 timeout 90 "$hb" --reps 11 --only $shapes ;;
     esac
     echo "exit $?"
   done
 done > "$OUT/goal.txt" 2>&1
 grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$OUT/goal.txt"
 for mode in bus bulk; do
   for s in a b c e f; do
     echo "== stats $mode $s"
     if [ $mode = bus ]; then OMPBATCH_STATS=1 timeout 60 "$hb" --reps 11 --only $s; else OMPBATCH_STATS=1 OMPBATCH_BUS_KB=0 timeout 60 "$hb" --reps 11 --only $s; fi
   done
 done > "$OUT/stats.txt" 2>&1; echo "stats exit $?")
date -u
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 330 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
cp "$w/omp_logs/hook_bench.json" "$w/omp_logs/hook_bench_contention.json" "$OUT/" 2>/dev/null
grep -E "^FAIL|omp pack:|^halo|^never|more than 3%" "$OUT/omp_pack.txt"
date -u
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 150 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
