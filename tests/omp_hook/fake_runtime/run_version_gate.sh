#!/usr/bin/env bash
# Runs version_gate_test ($1, expecting runtime major $2) and checks that the hook printed its
# pass-through reason exactly once, containing $3.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: $0 <binary> <major> <reason text>" >&2; exit 2; }
err=$(mktemp)
"$1" "$2" 2>"$err"
rc=$?
cat "$err" >&2
n=$(grep -c "ompbatch: hook: .*$3" "$err")
rm -f "$err"
[ "$n" = 1 ] || { echo "FAIL: the reason ('$3') was printed $n times, want once" >&2; exit 1; }
exit $rc
