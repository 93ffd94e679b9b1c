#!/usr/bin/env bash
# Short call: probe2 (3 alternating pairs, baseline vs HEAD's lean forward, under contention),
# then the OpenMP pack of HEAD at 9 repetitions (hook tests plain vs hooked, never slower idle
# and contended).
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT/probe" "$OUT/pack"
sed -i 's/for k in 1 2 3 4; do/for k in 1 2 3; do/' probe2.sh
sed -i 's/^for b in x B; do echo "== stats/#&/' probe2.sh
OUT=$OUT/probe timeout 110 bash probe2.sh > /dev/null 2>&1; echo "probe2 exit $?"
grep -E "^==|^r-floor|^r-present|MONOTONIC|loadavg|^[a-z]+$" "$OUT/probe/host.txt" "$OUT/probe/probe2.txt" | cut -c1-150 | head -30
p=$(mktemp -d); w=$OUT/pack
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p"
(cd "$p" && OUT=$p/logs && mkdir -p "$OUT" && timeout 200 ./run_omp_pack.sh --bench-args "--reps 9") > "$w/omp_pack.txt" 2>&1; echo "pack exit $?"
cp "$p/logs/hook_bench.json" "$w/pack_hook_bench.json"; cp "$p/logs/hook_bench_contention.json" "$w/pack_hook_bench_contention.json"
grep -E "^FAIL|omp pack:|^never|^inconclusive|slower" "$w/omp_pack.txt" | head -20
