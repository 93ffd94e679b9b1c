#!/usr/bin/env bash
# 17:28, right after the pack on the same machine: r-floor-naive, r-present and r-floor-tofrom
# idle in four processes of eb2f1e0's hook_bench (OMPBATCH_HOST_BUSY auto and 0 alternating),
# then r-floor-naive under OMPBATCH_STATS=1; /proc/loadavg between them. From a folder holding
# hook_bench_v0 (eb2f1e0's hook_bench_nvptx) and the LLVM 16 runtime bundle.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
p=$(mktemp -d) && tar xJf omp_runtime_bundle.tar.xz -C $p
export LD_LIBRARY_PATH=$p/lib OMP_TARGET_OFFLOAD=MANDATORY
mkdir -p $OUT/q && cat /proc/loadavg
for k in 1 2; do
  for e in auto 0; do
    OMPBATCH_HOST_BUSY=$e timeout 60 ./hook_bench_v0 --only r-floor-naive,r-present,r-floor-tofrom \
      --reps 15 --json $OUT/q/idle_${e}_$k.json > $OUT/q/idle_${e}_$k.txt 2>&1
    echo "$e $k $? $(grep -oE '[0-9.]+x ' $OUT/q/idle_${e}_$k.txt | tr '\n' ' ')"
    cat /proc/loadavg
  done
done
OMPBATCH_STATS=1 timeout 60 ./hook_bench_v0 --only r-floor-naive --reps 9 > $OUT/q/stats.txt 2>&1
tar czf $OUT/q.tar.gz -C $OUT q && rm -rf $OUT/q
