#!/usr/bin/env bash
# The OpenMP pack built for LLVM 19 with the LLVM 19 runtime bundle, one look-up pass per region; as
# at 18:45: the hook tests (compare.sh), the
# allocation-failure and NVTX checks, the stencil and halo examples, hook_bench in full
# (--reps 5) hook off and on in one process, then the mapping fuzzer on the GPU (10 seeds of
# 5000 constructs). Expects omp_gpu_pack_llvm19.tar.gz, omp_runtime_bundle_llvm19.tar.xz and
# fuzz_many.sh beside it.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
cp "$w/logs/hook_bench.json" "$OUT/hook_bench_llvm19.json" 2>/dev/null
cp "$w/logs/target_regions_test.log" "$OUT/target_regions_test_llvm19.log" 2>/dev/null
grep -E "^FAIL|omp pack|^halo|^ +FAIL|ompbatch hook:|speed-up" "$OUT/omp_pack_llvm19.txt" | head -40
grep "regions_direct=" "$OUT/target_regions_test_llvm19.log" | head -2
sed -n '/^shape/,/^never/p' "$OUT/omp_pack_llvm19.txt"
cd "$w"
export LD_LIBRARY_PATH=$w/lib PATH=$w/bin:$PATH LD_PRELOAD=$w/lib/libnvptx_jit_init.so
OMPBATCH_COMPARE_GPU=1 timeout 150 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-10}" 5000 > "$OUT/fuzz_llvm19.txt" 2>&1; echo "fuzz exit $?"
tail -3 "$OUT/fuzz_llvm19.txt"
