#!/usr/bin/env bash
# LLVM 19 runtime (the bundle with stubs for libz3 and libicudata), the working tree after 208f5d1
# (few-piece launches end on their blocks' words; copy-engine gathers end on a word the stream
# writes), a short call: the OpenMP pack
# (hook tests compared plain and hooked, allocation-failure and NVTX checks, stencil, halo,
# hook_bench at one quick repetition: bytes checked, no timing verdict) and the mapping fuzzer
# on the GPU (2 seeds of 5000 constructs, plain and hooked compared).
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 100 ./run_omp_pack.sh --bench-args "--reps 1 --quick") > "$OUT/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack|^halo|checked" "$OUT/omp_pack_llvm19.txt" | head -30
date -u
cd "$w"
export LD_LIBRARY_PATH=$w/lib PATH=$w/bin:$PATH LD_PRELOAD=$w/lib/libnvptx_jit_init.so
OMPBATCH_COMPARE_GPU=1 timeout 30 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked 2 5000 > "$OUT/fuzz_llvm19.txt" 2>&1; echo "fuzz exit $?"
tail -3 "$OUT/fuzz_llvm19.txt"
date -u
