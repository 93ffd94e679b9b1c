#!/usr/bin/env bash
# Rectangles unpacked as their blocks land (new) against HEAD's pack (base), alternating;
# the strided column shapes with pack threads (default) and without (1), alternating
# processes; the library's GPU pack; the OpenMP pack.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
b=$(mktemp -d); tar xzf gpu_pack_base.tar.gz -C "$b"
w=$(mktemp -d); tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for k in 1 2 3; do
  echo "== base $k"; "$b/gpu_pack/tools/rect_bench" --require-gpu --rounds 21
  echo "== new $k"; OMPBATCH_STATS=1 "$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 21 --phases
done > "$OUT/rect_bench.txt" 2>&1
grep -E "^==|^x |^y |^z |phases" "$OUT/rect_bench.txt"
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY OMPBATCH_STATS=1
 timeout 60 "$w/omp/bin/hook_bench_nvptx" --reps 1 --only c > /dev/null 2>&1
 for k in 1 2; do for t in default 1; do
   if [ $t = 1 ]; then export OMPBATCH_PACK_THREADS=1; else unset OMPBATCH_PACK_THREADS; fi
   echo "== s, pack threads $t, $k"; timeout 60 "$w/omp/bin/hook_bench_nvptx" --reps 11 --only s > "$OUT/hb_s_${t}_$k.txt" 2>&1
   grep -E "^s-col|^ompbatch hook time" "$OUT/hb_s_${t}_$k.txt"; sed -n '/^where/,/^$/p' "$OUT/hb_s_${t}_$k.txt" | grep -E "^s-col"
 done; done) 2>&1 | tee "$OUT/hb_s.txt"
GPU_TEST_LOG_DIR=$w/gpu_logs timeout 240 "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAIL|\[  FAILED" "$OUT/gpu_tests.txt" | head
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && timeout 150 ./run_omp_pack.sh --bench-args "--reps 3 --only s,r-naive") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo|speed-up" "$OUT/omp_pack.txt"
date -u
