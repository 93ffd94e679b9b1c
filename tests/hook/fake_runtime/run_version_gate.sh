#!/usr/bin/env bash
# Runs version_gate_test ($1, expecting runtime major $2) twice: by default the hook must say
# nothing on stderr (a program's stderr is its output), and with OMPBATCH_VERBOSE=1 it must
# print its pass-through reason exactly once, containing $3.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: $0 <binary> <major> <reason text>" >&2; exit 2; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
env -u OMPBATCH_VERBOSE "$1" "$2" 2>"$err" || { cat "$err" >&2; echo "FAIL: exit status" >&2; exit 1; }
if grep -q "ompbatch" "$err"; then
    cat "$err" >&2
    echo "FAIL: the hook wrote to stderr without OMPBATCH_VERBOSE" >&2
    exit 1
fi
OMPBATCH_VERBOSE=1 "$1" "$2" 2>"$err"
rc=$?
cat "$err" >&2
n=$(grep -c "ompbatch: hook: .*$3" "$err")
[ "$n" = 1 ] || { echo "FAIL: the reason ('$3') was printed $n times, want once" >&2; exit 1; }
exit $rc
