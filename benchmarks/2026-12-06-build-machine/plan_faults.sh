#!/usr/bin/env bash
# Usage: plan_faults.sh <hook_bench_host of d4b08a2> <hook_bench_host of 540a1bb>
# Page faults taken under plan_and_run (perf, software event page-faults, every one recorded,
# DWARF call graphs) for shapes e and h, one process per build; then the hook's phase times
# (OMPBATCH_STATS=1) in three rounds of one process per build.
set -uo pipefail
export OMP_TARGET_OFFLOAD=MANDATORY
for b in "$1" "$2"; do
  echo "== faults $b"
  perf record -q -c 1 -e page-faults --call-graph dwarf -o /tmp/plan_faults.data \
    "$b" --reps 11 --only e,h-to,h-from > /dev/null 2>&1
  perf report -i /tmp/plan_faults.data --children --stdio --percent-limit 0.05 -g none \
    --sort symbol 2>/dev/null | grep -E "Event count|plan_and_run|plan_copies|ob_grow" |
    sed -E 's/ +/ /g'
done
for k in 1 2 3; do
  for b in "$1" "$2"; do
    echo "== stats round $k $b"
    OMPBATCH_STATS=1 "$b" --reps 11 --only e,h-to,h-from 2>&1 |
      grep -E "^(e|h-to|h-from) |^shape +construct|checked"
  done
done
