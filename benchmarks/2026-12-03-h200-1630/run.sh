#!/usr/bin/env bash
# The never-slower summary on the H200 (LLVM 16 runtime): the OpenMP pack (its hook_bench
# limited to s and p), hook_bench in full (every shape plus the forwarded r-one-to, m-to,
# m-from; hook off and on alternating), the same under --contention (the program's other
# OpenMP threads busy on every core), the mapping fuzzer, and scatter_probe (the host side of
# a rectangle's x face by 1-16 threads). Expects omp_gpu_pack.tar.gz,
# omp_runtime_bundle.tar.xz, fuzz_many.sh and scatter_probe beside it.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
w=$(mktemp -d)
mkdir -p "$w/omp" && tar xzf omp_gpu_pack.tar.gz -C "$w/omp" && tar xJf omp_runtime_bundle.tar.xz -C "$w/omp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u; nproc
(cd "$w/omp" && OUT=$w/omp_logs && mkdir -p $OUT && ./run_omp_pack.sh --bench-args "--reps 3 --only s,p") > "$OUT/omp_pack.txt" 2>&1; echo "omp pack exit $?"
grep -E "^FAIL|omp pack:|^halo" "$OUT/omp_pack.txt"
(export LD_LIBRARY_PATH="$w/omp/lib" OMP_TARGET_OFFLOAD=MANDATORY
 timeout 240 "$w/omp/bin/hook_bench_nvptx" --reps 7 --json "$OUT/hook_bench.json" > "$OUT/hook_bench.txt" 2>&1; echo "hook_bench exit $?"
 timeout 240 "$w/omp/bin/hook_bench_nvptx" --reps 5 --contention --json "$OUT/hook_bench_contention.json" > "$OUT/hook_bench_contention.txt" 2>&1; echo "hook_bench contention exit $?")
sed -n '/^shape/,/^never/p' "$OUT/hook_bench.txt"; grep -E "^contention|^never" "$OUT/hook_bench_contention.txt"
sed -n '/^shape/,/^never/p' "$OUT/hook_bench_contention.txt" | cut -c1-8,96-140
"$here/scatter_probe" > "$OUT/scatter_probe.txt" 2>&1; echo "scatter_probe exit $?"; cat "$OUT/scatter_probe.txt"
cd "$w/omp"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
OMPBATCH_COMPARE_GPU=1 timeout 120 bash "$here/fuzz_many.sh" bin/map_fuzz_nvptx_plain bin/map_fuzz_nvptx_hooked "${FUZZ_SEEDS:-10}" 5000 > "$OUT/fuzz.txt" 2>&1; echo "fuzz exit $?"
tail -1 "$OUT/fuzz.txt"
