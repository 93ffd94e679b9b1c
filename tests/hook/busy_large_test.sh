#!/usr/bin/env bash
# On a busy host the hook leaves update items of 8 MiB and more to the runtime (the reason
# "large, on a busy host"), unless OMPBATCH_REGISTER_MB lets it register them; on an idle host
# it copies them. Runs the hooked fork_mapped ($1: two mapped arrays of 8 MiB and a bit, each
# updated once a step, one way each) on host offload with OMPBATCH_STATS=1, busy and idle,
# with and without registration, and checks the items line and that every run's data were
# right (its exit status).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <hooked fork_mapped>" >&2; exit 2; }
bin=$1
steps=6
seed=${OMPBATCH_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "seed $seed (OMPBATCH_TEST_SEED=$seed replays it)"
failed=0

# check BUSY REGISTER_MB LARGE_WANTED: one run; LARGE_WANTED is how many update items the
# items line must give the reason to (0: the reason must not appear).
check() {
    local busy=$1 register=$2 want=$3 out rc items got
    out=$(env OMP_TARGET_OFFLOAD=MANDATORY OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 \
        OMPBATCH_STATS=1 OMPBATCH_HOST_BUSY="$busy" OMPBATCH_REGISTER_MB="$register" \
        "$bin" "$seed" "$steps" 8 2>&1)
    rc=$?
    items=$(grep '^ompbatch hook items:' <<<"$out")
    got=$(sed -n 's/.*large, on a busy host \([0-9]*\).*/\1/p' <<<"$items")
    got=${got:-0}
    if [ "$rc" != 0 ]; then
        echo "FAIL busy=$busy register=$register: exit status $rc"
        tail -n 5 <<<"$out"
        failed=1
    elif [ "$got" != "$want" ]; then
        echo "FAIL busy=$busy register=$register: $got items left to the runtime as large on a busy host, want $want"
        echo "  $items"
        failed=1
    else
        echo "ok   busy=$busy register=$register: $got items left as large on a busy host"
    fi
}

check 1 0 $((2 * steps))
check 0 0 0
check 1 4096 0
[ "$failed" = 0 ] && echo "busy_large: passed" || echo "busy_large: failed"
exit "$failed"
