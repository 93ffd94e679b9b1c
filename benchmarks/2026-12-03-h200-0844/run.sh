#!/usr/bin/env bash
# GPU checks of one run: the library's GPU pack and the OpenMP pack (LLVM 16).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out} # where the logs go
mkdir -p "$OUT"
w=$(mktemp -d)
tar xzf gpu_pack.tar.gz -C "$w"
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
GPU_TEST_LOG_DIR="$OUT"/gpu_logs "$w/gpu_pack/run_gpu_tests.sh" 2>&1 | tee "$OUT"/gpu_tests.txt
(cd "$w/omp" && ./run_omp_pack.sh) > "$OUT"/omp_pack.txt 2>&1; echo "omp pack exit $?"
tail -3 "$OUT"/omp_pack.txt
