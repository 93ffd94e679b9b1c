#!/usr/bin/env bash
# Runs no_runtime_test ($1) twice: by default its stderr must stay empty; with
# OMPBATCH_VERBOSE=1 the hook must say, once, that no OpenMP offload runtime is present.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <binary>" >&2; exit 2; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1
"$1" 2>"$err" || { cat "$err" >&2; echo "FAIL: the program failed" >&2; exit 1; }
if [ -s "$err" ]; then
    cat "$err" >&2
    echo "FAIL: stderr is not empty without OMPBATCH_VERBOSE" >&2
    exit 1
fi
OMPBATCH_VERBOSE=1 "$1" 2>"$err" || { cat "$err" >&2; echo "FAIL: the program failed" >&2; exit 1; }
cat "$err" >&2
n=$(grep -c "ompbatch: hook: no OpenMP offload runtime is present" "$err")
[ "$n" = 1 ] || { echo "FAIL: the verbose line was printed $n times, want once" >&2; exit 1; }
if grep -q "lacks\|forwards every call\|forwarding every call" "$err"; then
    echo "FAIL: a pass-through warning for a program without a runtime" >&2
    exit 1
fi
echo "no runtime: silent by default, one verbose line"
