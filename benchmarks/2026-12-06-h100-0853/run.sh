#!/usr/bin/env bash
# LLVM 16 runtime, the working tree that became the commit named in the notes (a region whose
# split would make one copy back and at most one to the device is left to the runtime while
# the host is busy; OMPBATCH_HOST_BUSY): the library's GPU pack; hook_bench over every shape
# under --contention, three processes at 9 repetitions, and idle once; the OpenMP pack (hook
# tests compared plain and hooked, now also hooked with OMPBATCH_HOST_BUSY=1; stencil, halo,
# hook_bench idle and under --contention at 9 repetitions).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
lscpu | grep -E "Model name" | head -1
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 150 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
hb=$w/omp/bin/hook_bench_nvptx
mkdir -p "$w/j"
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 for k in 1 2 3; do
   echo "== contention $k"; timeout 90 "$hb" --reps 9 --contention --json "$w/j/contention_$k.json"; echo "exit $?"
 done > "$OUT/contention.txt" 2>&1
 grep -E "^== |^never|^inconclusive|^exit|checked" "$OUT/contention.txt"
 echo "== idle"; timeout 90 "$hb" --reps 9 --json "$w/j/idle.json" > "$OUT/idle.txt" 2>&1; echo "exit $?"
 grep -E "^never|^inconclusive|checked" "$OUT/idle.txt")
date -u
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 280 ./run_omp_pack.sh --bench-args "--reps 9") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
cp "$w/omp_logs/hook_bench.json" "$w/j/pack_hook_bench.json"; cp "$w/omp_logs/hook_bench_contention.json" "$w/j/pack_hook_bench_contention.json"
grep -h "hooked+busy" "$w"/omp_logs/*.log | grep -c '^ok' ; grep -h "hooked+busy" "$w"/omp_logs/*.log | grep -v '^ok' | head
grep -E "^FAIL|omp pack:|^never|^inconclusive|more than 3%" "$OUT/omp_pack.txt"
(cd "$w/j" && tar czf "$OUT/json.tar.gz" *.json)
date -u
