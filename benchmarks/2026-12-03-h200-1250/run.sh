#!/usr/bin/env bash
# The OpenMP pack (LLVM 16) once more after the last strided test case (a column through a
# global pointer to rows) was added. Expects omp_gpu_pack.tar.gz and
# omp_runtime_bundle.tar.xz beside it.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh --bench-args "--reps 3 --only s,p") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|^PASS strided|omp pack:|^halo: hook" "$OUT/omp_pack.txt"
