#!/usr/bin/env bash
# LLVM 16 runtime, d4b08a2 (new) and 1037282 (head, hook_bench_head). 1) Regions on present
# data on an idle host, four rounds of one process with the host's load read as the library
# reads it (auto: device addresses while idle) and one with OMPBATCH_HOST_BUSY=1 (forwarded
# whole, as on a busy host), the order alternating. 2) Shapes e, h (new against head), three
# more rounds. 3) The library's GPU pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
(
export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
hb=$w/omp/bin/hook_bench_nvptx
regions=r-floor-reduce,r-reduce,r-floor-naive,r-present
run() { echo "== $2 busy=$1"
  if [ $1 = auto ]; then timeout 40 "$hb" --reps 9 --only $regions
  else OMPBATCH_HOST_BUSY=1 timeout 40 "$hb" --reps 9 --only $regions; fi
  echo "exit $?"; }
for k in 1 2 3 4; do
  if [ $((k % 2)) = 0 ]; then run 1 r$k; run auto r$k; else run auto r$k; run 1 r$k; fi
done > "$OUT/idle_regions.txt" 2>&1
grep -E "^== |^r-|^exit|checked" "$OUT/idle_regions.txt" | sed -E 's/ +/ /g' | cut -c1-150
date -u
for k in 1 2 3; do
  for build in new head; do
    [ $k = 2 ] && build=$([ $build = new ] && echo head || echo new)
    echo "== round $k $build"
    case $build in
    new) timeout 40 "$hb" --reps 11 --only e,h ;;
    head) timeout 40 ./hook_bench_head --reps 11 --only e,h ;;
    esac
    echo "exit $?"
  done
done > "$OUT/eh.txt" 2>&1
grep -E "^== |^[a-j](-to|-from)? |^exit|checked" "$OUT/eh.txt" | sed -E 's/ +/ /g' | cut -c1-150
)
date -u
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 150 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
date -u
