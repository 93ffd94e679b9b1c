#!/usr/bin/env bash
# Large pageable copies pipelined through staging, on the H200 with the LLVM 16 runtime: the
# library's GPU pack; tools/bench on lone 16 MiB and 64 MiB pageable copies (per-copy loop,
# direct, staged, auto = pipelined, alternating in one process); the OpenMP pack (its
# hook_bench limited to s and p); hook_bench in full, hook off and on alternating; its f and g
# shapes again under OMPBATCH_STATS=1 (phase table); rect_bench; the mapping fuzzer on the GPU.
# Expects gpu_pack.tar.gz, omp_gpu_pack.tar.gz, omp_runtime_bundle.tar.xz, fuzz_many.sh.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
GPU_TEST_LOG_DIR=$w/gpu_logs "$w/gpu_pack/run_gpu_tests.sh" > "$OUT/gpu_tests.txt" 2>&1; echo "gpu pack exit $?"
tail -1 "$OUT/gpu_tests.txt"; grep -E "FAILED|\[  FAILED" "$OUT/gpu_tests.txt" | head
"$w/gpu_pack/tools/bench" --require-gpu --counts 1 --sizes 16M,64M --dirs h2d,d2h --kinds pageable --repeats 11 > "$OUT/bench_large.txt" 2>&1; echo "bench exit $?"
cat "$OUT/bench_large.txt"
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh --bench-args "--reps 3 --only s,p") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo" "$OUT/omp_pack.txt"
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 300 "$w/omp/bin/hook_bench_nvptx" --reps 7 --json "$OUT/hook_bench_plain.json" > "$OUT/hook_bench_plain.txt" 2>&1; echo "hook_bench plain exit $?"
 OMPBATCH_STATS=1 timeout 120 "$w/omp/bin/hook_bench_nvptx" --reps 7 --only f,g --json "$OUT/hook_bench_fg.json" > "$OUT/hook_bench_fg.txt" 2>&1; echo "hook_bench f,g exit $?")
sed -n '/^shape/,/^hook_bench:/p' "$OUT/hook_bench_plain.txt"; grep -A6 "^where" "$OUT/hook_bench_fg.txt"
"$w/gpu_pack/tools/rect_bench" --require-gpu --rounds 11 > "$OUT/rect_bench.txt" 2>&1; echo "rect_bench exit $?"; cat "$OUT/rect_bench.txt"
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
OMPBATCH_COMPARE_GPU=1 timeout 120 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-10}" 5000 > "$OUT/fuzz.txt" 2>&1; echo "fuzz exit $?"
tail -1 "$OUT/fuzz.txt"
