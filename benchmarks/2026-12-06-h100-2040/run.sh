#!/usr/bin/env bash
# LLVM 16 runtime; the packs of 7fbc4d5 (the library of 540a1bb), beside this script as built by
# `./run gpu-pack -c opt`. Two calls on one warm H100: at 20:39 the script of 19:48
# (benchmarks/2026-12-06-h100-1948/run.sh) with one more line after its host information, which
# stops it on any GPU but an H200 (host.txt is its output); at 20:40 the GPU library tests and the
# OpenMP pack at 5 repetitions (what follows).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
p=$(mktemp -d) && tar xzf omp_gpu_pack.tar.gz -C $p && tar xJf omp_runtime_bundle.tar.xz -C $p && tar xzf gpu_pack.tar.gz -C $p
(cd $p && timeout 100 ./gpu_pack/run_gpu_tests.sh) > $OUT/gpu_tests.txt 2>&1; tail -2 $OUT/gpu_tests.txt
(cd $p && OUT=$p/logs && mkdir -p $OUT && timeout 200 ./run_omp_pack.sh --bench-args "--reps 5") > $OUT/omp_pack.txt 2>&1; echo "pack exit $?"
cp $p/logs/hook_bench*.json $OUT/ 2>/dev/null
grep -E "omp pack:|^never|^inconclusive|slower" $OUT/omp_pack.txt | head -20
