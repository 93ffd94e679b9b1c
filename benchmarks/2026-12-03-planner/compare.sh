#!/usr/bin/env bash
# The planner before and after, in one run: two plan_bench binaries (examples/plan_bench.c,
# built against each commit), each shape and size three times, the two alternating. A run of
# the old binary that passes $OLD_LIMIT seconds (default 120) is stopped and recorded as such.
# Usage: compare.sh OLD_BENCH NEW_BENCH
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_BENCH NEW_BENCH" >&2; exit 2; }
old=$1 new=$2 limit=${OLD_LIMIT:-120}
export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 # host batches, no driver
run() { # label binary args...
    local label=$1 bin=$2
    shift 2
    local out
    if out=$(timeout "$limit" "$bin" "$@" 2>&1); then
        echo "$label $out"
    else
        echo "$label plan_bench: $* : did not finish in $limit s (or failed: $out)"
    fi
}
# shape copies old?  (the old planner is only run where it finishes in minutes)
while read -r shape copies both; do
    for round in 1 2 3; do
        [ "$both" = yes ] && run "old" "$old" --shape "$shape" --copies "$copies"
        run "new" "$new" --shape "$shape" --copies "$copies"
    done
done <<'TABLE'
one-dst 10000 yes
one-dst 100000 no
one-dst 1000000 no
one-src 10000 yes
one-src 100000 yes
one-src 1000000 no
random 100000 yes
random 1000000 yes
TABLE
