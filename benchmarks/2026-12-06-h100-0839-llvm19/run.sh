#!/usr/bin/env bash
# LLVM 19 runtime (the bundle with stubs for libz3 and libicudata), the working tree named in
# the notes: hook_bench over every shape (hook off and on alternating in each process, medians
# of 5, paired never-slower verdict), idle and under --contention. Nothing else: the pack's
# tests and the fuzzer ran on this runtime at 07:11 the same day.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
lscpu | grep -E "Model name" | head -1
cd "$w"
export LD_LIBRARY_PATH=$w/lib PATH=$w/bin:$PATH LD_PRELOAD=$w/lib/libnvptx_jit_init.so
export OMP_TARGET_OFFLOAD=MANDATORY
timeout 280 bin/hook_bench_nvptx --reps 5 --json "$OUT/hook_bench_llvm19.json" > "$OUT/hook_bench_llvm19.txt" 2>&1
echo "idle exit $?"; grep -E "^never slower|^inconclusive|checked" "$OUT/hook_bench_llvm19.txt"
date -u
timeout 230 bin/hook_bench_nvptx --reps 5 --contention --json "$OUT/hook_bench_llvm19_contention.json" > "$OUT/hook_bench_llvm19_contention.txt" 2>&1
echo "contention exit $?"; grep -E "^never slower|^inconclusive|checked" "$OUT/hook_bench_llvm19_contention.txt"
date -u
