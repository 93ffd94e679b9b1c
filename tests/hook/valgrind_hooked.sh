#!/usr/bin/env bash
# Runs hooked OpenMP test programs ($@, each with a fresh seed) under valgrind memcheck on the
# host-offload target and fails on any invalid read or write the hook makes. Leaks are not
# counted: libomptarget and libomp keep their allocations to the end by design.
set -uo pipefail
command -v valgrind >/dev/null 2>&1 || {
    echo "valgrind is not installed (Debian: apt-get install valgrind; ./run test installs it)" >&2
    exit 1
}
export OMP_TARGET_OFFLOAD=MANDATORY
export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1
seed=${OMPBATCH_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "seed $seed (OMPBATCH_TEST_SEED=$seed replays it)"
status=0
for binary in "$@"; do
    log=$(mktemp)
    # --fair-sched: libomp's threads spin while they wait (its hidden helper threads too), and
    # under valgrind's default lock a spinning thread can keep the one it waits for from
    # running for minutes (target_regions: not done after 4 minutes, 5 s with it).
    valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=no "$binary" "$seed" >"$log" 2>&1
    rc=$?
    echo "$(basename "$binary"): valgrind exit $rc, $(tail -1 "$log")"
    if [ "$rc" != 0 ]; then
        status=1
        grep -A8 -E "Invalid|uninitialised|Mismatched" "$log" | head -40
    fi
    rm -f "$log"
done
exit $status
