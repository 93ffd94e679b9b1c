#!/usr/bin/env bash
# Two builds of hook_bench against each other, each in processes of its own, alternating: the
# runtime's own times vary up to 2x between processes, so a change smaller than that is read
# only from builds that ran side by side on one machine. Round k runs A then B (odd k) or B then
# A (even k), each `hook_bench <args> --json OUT/<name>_<k>.json` with its output in
# OUT/<name>_<k>.txt, and prints a line of its speedups; then ab_summary.py (beside this
# script) reads the JSON files into OUT/summary.txt when python3 is there.
# usage: ab_hook_bench.sh [--rounds K] NAME_A=BINARY_A NAME_B=BINARY_B OUT [hook_bench args...]
#   e.g. ab_hook_bench.sh --rounds 4 v0=./hook_bench_v0 v3=./hook_bench_v3 out \
#            --only r-floor-naive,r-present --reps 15
# The binaries need the runtime found (LD_LIBRARY_PATH) and OMP_TARGET_OFFLOAD as the caller
# sets them; each process gets at most AB_TIMEOUT seconds (default 120).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=3
if [ "${1:-}" = --rounds ]; then
    rounds=$2
    shift 2
fi
usage() { echo "usage: $0 [--rounds K] NAME_A=BINARY_A NAME_B=BINARY_B OUT [hook_bench args...]" >&2; exit 2; }
[ $# -ge 3 ] || usage
case "$rounds" in '' | *[!0-9]* | 0) echo "ab_hook_bench: --rounds wants a positive count, not '$rounds'" >&2; exit 2 ;; esac
names=() bins=()
for pair in "$1" "$2"; do
    name=${pair%%=*} bin=${pair#*=}
    case "$name" in '' | *[!A-Za-z0-9-]*) echo "ab_hook_bench: '$pair': NAME must be letters, digits or '-'" >&2; exit 2 ;; esac
    [ "$bin" != "$pair" ] && [ -x "$bin" ] || { echo "ab_hook_bench: '$pair': no executable after '='" >&2; exit 2; }
    names+=("$name") bins+=("$bin")
done
[ "${names[0]}" != "${names[1]}" ] || { echo "ab_hook_bench: the two names are the same" >&2; exit 2; }
out=$3
shift 3
mkdir -p "$out" || exit 1
failed=0
for k in $(seq 1 "$rounds"); do
    order="0 1"
    [ $((k % 2)) = 0 ] && order="1 0"
    for i in $order; do
        log="$out/${names[$i]}_$k.txt"
        timeout "${AB_TIMEOUT:-120}" "${bins[$i]}" "$@" --json "$out/${names[$i]}_$k.json" >"$log" 2>&1
        rc=$?
        [ $rc = 0 ] || failed=1
        echo "${names[$i]} round $k exit $rc: $(grep -oE '[0-9.]+x ' "$log" | tr '\n' ' ')"
    done
done
if command -v python3 >/dev/null; then
    (cd "$out" && python3 "$here/ab_summary.py") | tee "$out/summary.txt"
fi
exit $failed
