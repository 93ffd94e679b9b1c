#!/usr/bin/env bash
# The library preloaded into processes the hook never runs in (what every child of a program
# run under LD_PRELOAD is: a shell, a compiler the runtime's JIT starts) must not change their
# output: with OMPBATCH_STATS=1 and with OMPBATCH_VERBOSE unset, nothing on stderr, and stdout
# and the exit status their own.
# usage: preload_quiet_test.sh <libompbatch.so>
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <libompbatch.so>" >&2; exit 2; }
lib=$(realpath "$1")
fail=0
for cmd in "echo preloaded" "sh -c 'echo nested; exit 3'"; do
    want_out=$(env -u LD_PRELOAD sh -c "$cmd" 2>/dev/null)
    want_rc=$?
    err=$(mktemp)
    got_out=$(env -u OMPBATCH_VERBOSE LD_PRELOAD="$lib" OMPBATCH_STATS=1 sh -c "$cmd" 2>"$err")
    got_rc=$?
    if [ -s "$err" ]; then
        echo "FAIL: '$cmd' printed on stderr under the preloaded library:" >&2
        cat "$err" >&2
        fail=1
    fi
    if [ "$got_out" != "$want_out" ] || [ "$got_rc" != "$want_rc" ]; then
        echo "FAIL: '$cmd': stdout '$got_out' exit $got_rc, want '$want_out' exit $want_rc" >&2
        fail=1
    fi
    rm -f "$err"
done
[ $fail = 0 ] && echo "PASS: preloaded, statistics asked for, nothing said"
exit $fail
