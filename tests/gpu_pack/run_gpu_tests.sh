#!/usr/bin/env bash
# Runs every GPU test binary of this pack on a GPU node (no Bazel, no compiler needed) and prints
# one summary line:
#
#   gpu tests: N passed, M failed
#
# N and M count GoogleTest cases over all binaries (a binary that crashes, times out or fails
# without a failed case counts as one failure; a binary that is not a GoogleTest program counts as
# one case). Exits 0 only when nothing failed and something passed.
#
# Every binary runs with OMPBATCH_REQUIRE_GPU=1, so a node without a usable GPU fails instead of
# skipping. Output goes to one log per binary (logs/<binary>.log next to this script, or
# $GPU_TEST_LOG_DIR). Set OMPBATCH_TEST_SEED to replay the random data of an earlier run (each
# log starts with the seed it used).
#
# usage: ./run_gpu_tests.sh [--timeout SECONDS] [--list] [-- ARGS...]
#   --timeout S   kill a binary after S seconds (default 900; needs coreutils' timeout)
#   --list        list the test and tool binaries in the pack and exit
#   -- ARGS       passed to every test binary, e.g. -- --gtest_filter='V13000/*'
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
timeout_s=900
list=0
args=()

usage() {
    sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) timeout_s=${2:?--timeout needs a value}; shift 2 ;;
        --list) list=1; shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; args=("$@"); break ;;
        *) echo "run_gpu_tests: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

tests=()
for f in "$here"/tests/*; do
    [ -f "$f" ] && [ -x "$f" ] && tests+=("$f")
done
tools=()
for f in "$here"/tools/*; do
    [ -f "$f" ] && [ -x "$f" ] && tools+=("$f")
done

if [ "$list" = 1 ]; then
    for f in ${tests[@]+"${tests[@]}"}; do echo "test: tests/$(basename "$f")"; done
    for f in ${tools[@]+"${tools[@]}"}; do echo "tool: tools/$(basename "$f") (not run)"; done
    exit 0
fi

log_dir=${GPU_TEST_LOG_DIR:-$here/logs}
if ! mkdir -p "$log_dir" 2>/dev/null || [ ! -w "$log_dir" ]; then
    log_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpu_test_logs.XXXXXX")
fi

export OMPBATCH_REQUIRE_GPU=1

runner=()
if command -v timeout >/dev/null 2>&1; then
    runner=(timeout --kill-after=30 "$timeout_s")
fi

echo "gpu pack: $here"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null |
        sed 's/^/gpu: /'
else
    echo "gpu: nvidia-smi not found"
fi
echo "logs: $log_dir"

total_passed=0
total_failed=0

if [ ${#tests[@]} -eq 0 ]; then
    echo "no test binaries under $here/tests" >&2
    total_failed=1
fi

for bin in ${tests[@]+"${tests[@]}"}; do
    name=$(basename "$bin")
    log=$log_dir/$name.log
    start=$(date +%s)
    ${runner[@]+"${runner[@]}"} "$bin" --gtest_color=no ${args[@]+"${args[@]}"} >"$log" 2>&1
    rc=$?
    seconds=$(($(date +%s) - start))

    passed=$(grep -cE '^\[       OK \] ' "$log")
    failed=$(grep -cE '^\[  FAILED  \] .*\([0-9]+ ms\)$' "$log")
    skipped=$(grep -cE '^\[  SKIPPED \] .*\([0-9]+ ms\)$' "$log")
    note=""
    if ! grep -qE '^\[==========\] ' "$log"; then
        # Not a GoogleTest program, or it died before starting: one case by its exit status.
        if [ "$rc" -eq 0 ]; then passed=1; else failed=1; fi
        note=" (no GoogleTest output)"
    elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        failed=1
        case "$rc" in
            124 | 137) note=" (timed out after ${timeout_s} s)" ;;
            *) note=" (exited $rc without a failed test: crash or error, see the log)" ;;
        esac
    fi
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))

    echo "$name: $passed passed, $failed failed, $skipped skipped, exit $rc, ${seconds} s$note"
    if [ "$failed" -gt 0 ]; then
        grep -m1 -E '^harness: OMPBATCH_TEST_SEED=' "$log" | sed 's/^/  /'
        failed_names=$(grep -E '^\[  FAILED  \] .*\([0-9]+ ms\)$' "$log" |
            sed -e 's/^\[  FAILED  \] //' -e 's/, where GetParam() = .*//' -e 's/ ([0-9]* ms)$//')
        if [ -n "$failed_names" ]; then
            echo "  failed:"
            head -n 20 <<<"$failed_names" | sed 's/^/    /'
            [ "$failed" -gt 20 ] && echo "    ... and $((failed - 20)) more (see the log)"
            echo "  first failure:"
            # The output of the first failed test, from its RUN line to its FAILED line.
            awk '/^\[ RUN      \] /{n=0} {buf[n++]=$0}
                 /^\[  FAILED  \] .*\([0-9]+ ms\)$/{for(i=0;i<n&&i<60;i++) print "    " buf[i]; exit}' "$log"
        else
            echo "  --- last 40 lines of $log ---"
            tail -n 40 "$log" | sed 's/^/  /'
        fi
    fi
    if [ "$skipped" -gt 0 ]; then
        echo "  skipped:"
        grep -E '^\[  SKIPPED \] .*\([0-9]+ ms\)$' "$log" |
            sed -e 's/^\[  SKIPPED \] /    /' -e 's/, where GetParam() = .*//' | head -n 10
    fi
done

for tool in ${tools[@]+"${tools[@]}"}; do
    echo "also in the pack, not run: tools/$(basename "$tool")"
done

echo "gpu tests: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ] && [ "$total_passed" -gt 0 ]
