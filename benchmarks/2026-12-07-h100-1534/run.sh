#!/usr/bin/env bash
# g idle at HEAD: are the slow hooked repetitions the pack threads judged late (alone 200 ms)?
# HEAD's hook_bench against the variant that does not judge a job whose helpers it woke,
# alternating, f and g at 11 repetitions with OMPBATCH_VERBOSE=2; then the variant's full bench
# idle, contended and with OMPBATCH_REGISTER_MB=4096 at 5 repetitions.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT/r"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/host.txt"
p=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$p"
export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
for round in 1 2; do for b in head woken; do
  OMPBATCH_VERBOSE=2 timeout 60 ./hook_bench_$b --reps 11 --only f,g --json "$OUT/r/fg_${b}_$round.json" > "$OUT/r/fg_${b}_$round.txt" 2> "$OUT/r/fg_${b}_$round.err"
  echo "$b round $round rc=$? late=$(grep -c 'came late' "$OUT/r/fg_${b}_$round.err")"; grep -E "^(f|g) " "$OUT/r/fg_${b}_$round.txt" | cut -c1-20,80-150
done; done
date -u +%T
timeout 120 ./hook_bench_woken --reps 5 --json "$OUT/r/woken_idle.json" > "$OUT/r/woken_idle.txt" 2>&1; echo "idle rc=$?"
grep -E "^never|^inconclusive" "$OUT/r/woken_idle.txt"; date -u +%T
timeout 120 ./hook_bench_woken --reps 5 --contention --json "$OUT/r/woken_contention.json" > "$OUT/r/woken_contention.txt" 2>&1; echo "contention rc=$?"
grep -E "^never|^inconclusive" "$OUT/r/woken_contention.txt"; date -u +%T
OMPBATCH_REGISTER_MB=4096 timeout 120 ./hook_bench_woken --reps 5 --json "$OUT/r/woken_register.json" > "$OUT/r/woken_register.txt" 2>&1; echo "register rc=$?"
grep -E "^never|^inconclusive" "$OUT/r/woken_register.txt"
tar czf "$OUT/r.tar.gz" -C "$OUT" r && rm -rf "$OUT/r"
date -u
