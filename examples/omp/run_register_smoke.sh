#!/usr/bin/env bash
# hook_bench ($1) on its long-lived mappings (k-to, k-from: 64 updates of one array each) with
# OMPBATCH_REGISTER_MB set, on LLVM's host-offload target, where the hook copies with memcpy and
# has nothing to register: the updates' copy time must earn each mapping a registration, which
# is tried once, refused and logged, never tried again within the mapping, and every byte still
# arrives. The GPU runs of the same shapes register (BENCHMARKS.md).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <hook_bench binary>" >&2; exit 2; }
# 64 MiB arrays (not --quick's 4 MiB, which a host copies from its caches faster than a
# registered range's pace, so that they would earn nothing): copies from memory always fall
# short of that pace and earn each mapping its try within a few updates.
reps=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
OMP_TARGET_OFFLOAD=MANDATORY OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 \
    OMPBATCH_REGISTER_MB=64 OMPBATCH_VERBOSE=1 \
    "$1" --reps "$reps" --only k-to,k-from >"$log" 2>&1 || {
    cat "$log"
    echo "FAIL: hook_bench exited with an error" >&2
    exit 1
}
fail() {
    cat "$log"
    echo "FAIL: $*" >&2
    exit 1
}
grep -q "all data checked byte for byte" "$log" || fail "the data did not check out"
# Each shape maps its array afresh in every hook-on repetition, the warm-up's included.
want=$((2 * (reps + 1)))
refused=$(grep -c "hook: cannot register 67108864 bytes at 0x[0-9a-f]* (OpenMP device 0 does not copy through CUDA)" "$log" || true)
[ "$refused" -eq "$want" ] || fail "$refused refused registrations, expected one a mapping: $want"
if grep -q "hook: registered" "$log"; then fail "a host-offload device registered memory"; fi
echo "register smoke: $refused mappings earned a registration, each tried once and refused; all data checked"
