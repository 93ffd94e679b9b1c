#!/usr/bin/env bash
# NVTX ranges of the library, seen by an NVTX tool (nvtx_recorder.c, loaded the way Nsight
# Systems loads its own: NVTX_INJECTION64_PATH).
# usage: nvtx_test.sh <libnvtx_recorder.so> api <nvtx_api_test>
#        nvtx_test.sh <libnvtx_recorder.so> hook <hooked OpenMP program> [program args]
#   api:  each submission of nvtx_api_test is one range in the "ompbatch" domain, named with
#         the batch and its copy count; pushes and pops balance; OMPBATCH_NVTX=0 records none
#   hook: the hooked program's constructs appear as ranges named "ompbatch update <file>:<line>
#         (device N): K copies" (or data begin / data end), one per batch the hook's
#         statistics count
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 <recorder.so> api|hook <program> [args]" >&2; exit 2; }
recorder=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mode=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*" >&2; fail=1; }

run() { # run <record file> <env...> -- <command...>
    local record=$1
    shift
    env NVTX_INJECTION64_PATH="$recorder" OMPBATCH_NVTX_RECORD="$record" "$@" >"$tmp/out" 2>&1
    local rc=$?
    cat "$tmp/out"
    return $rc
}

balanced() { # every push has its pop, in order, per record file (one thread)
    awk '/^push ompbatch\t/ {d++} /^pop ompbatch$/ {d--; if (d < 0) exit 1} END {exit d != 0}' "$1"
}

case "$mode" in
api)
    run "$tmp/on" OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$@" || die "the program failed"
    grep -q '^tool loaded$' "$tmp/on" || die "the NVTX tool was never loaded"
    n_batch=$(grep -cP '^push ompbatch\tompbatch batch \(device -?[0-9]+\): 5 copies$' "$tmp/on")
    n_memcpy=$(grep -cP '^push ompbatch\tompbatch target_memcpy_batch \(device -?[0-9]+\): 3 copies$' "$tmp/on")
    n_push=$(grep -c '^push ' "$tmp/on")
    [ "$n_batch" = 2 ] || die "want 2 ranges 'ompbatch batch (device N): 5 copies', got $n_batch"
    [ "$n_memcpy" = 1 ] || die "want 1 range 'ompbatch target_memcpy_batch ...: 3 copies', got $n_memcpy"
    [ "$n_push" = 3 ] || die "want 3 ranges in all, got $n_push"
    balanced "$tmp/on" || die "pushes and pops do not balance"
    run "$tmp/off" OMPBATCH_NVTX=0 OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$@" ||
        die "the program failed with OMPBATCH_NVTX=0"
    [ ! -s "$tmp/off" ] || { die "OMPBATCH_NVTX=0 still made NVTX calls:"; cat "$tmp/off" >&2; }
    ;;
hook)
    run "$tmp/on" OMPBATCH_STATS=1 "$@" || die "the program failed"
    grep -q '^tool loaded$' "$tmp/on" || die "the NVTX tool was never loaded"
    n=$(grep -cP '^push ompbatch\tompbatch (update|data begin|data end|region begin|region end) [^ :]+\.[ch]:[0-9]+ \(device [0-9]+\): [1-9][0-9]* copies$' "$tmp/on")
    n_push=$(grep -c '^push ' "$tmp/on")
    [ "$n" -ge 1 ] || die "no construct range named '<what> <file>:<line> (device N): K copies'"
    [ "$n" = "$n_push" ] || die "$((n_push - n)) of $n_push ranges are named otherwise"
    # One range per batch the hook submitted (its statistics line, OMPBATCH_STATS=1).
    batches=$(sed -n 's/^ompbatch hook: .* batches=\([0-9]*\) .*/\1/p' "$tmp/out" | tail -1)
    [ "$batches" = "$n_push" ] || die "the hook submitted ${batches:-?} batches, the tool saw $n_push ranges"
    balanced "$tmp/on" || die "pushes and pops do not balance"
    ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
if [ $fail = 0 ]; then
    echo "nvtx ($mode): $(grep -c '^push ' "$tmp/on") ranges, named and balanced; examples:"
    grep '^push ' "$tmp/on" | sort | uniq -c | sort -rn | head -5
else
    echo "--- record:" >&2
    head -40 "$tmp/on" >&2
fi
exit $fail
