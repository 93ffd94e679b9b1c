#!/usr/bin/env bash
# LLVM 19 runtime (the bundle with stubs for libz3 and libicudata), 7f2d0ec: the OpenMP pack
# (hook tests compared plain, linked, preloaded, disabled and with the host taken for busy;
# allocation failures, NVTX, stencil, halo; hook_bench idle and under --contention at 5
# repetitions, paired verdict).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf omp_gpu_pack_llvm19.tar.gz -C "$w" && tar xJf omp_runtime_bundle_llvm19.tar.xz -C "$w"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; lscpu | grep -E "Model name|^Core"; } | tee "$OUT/host.txt"
(cd "$w" && OUT=$w/logs && mkdir -p "$OUT" && timeout 400 ./run_omp_pack.sh --bench-args "--reps 5") > "$OUT/omp_pack_llvm19.txt" 2>&1; echo "omp pack exit $?"
grep -h "hooked+busy" "$w"/logs/*.log | grep -c '^ok'; grep -h "hooked+busy" "$w"/logs/*.log | grep -v '^ok' | head
grep -E "^FAIL|omp pack:|^never|^inconclusive|checked" "$OUT/omp_pack_llvm19.txt"
tar czf "$OUT/logs_llvm19.tar.gz" -C "$w" logs
date -u
