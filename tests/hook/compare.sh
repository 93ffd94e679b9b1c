#!/usr/bin/env bash
# Runs one OpenMP test program built without and with the ompbatch hook and demands the same
# behaviour from every variant, then checks the hook's statistics line.
#
# usage: compare.sh [options] <plain binary> <hooked binary> <libompbatch.so> [-- program args]
#
# The program is run as `<binary> <seed> [program args]`, five times with the same seed:
#   plain        the program without the hook
#   hooked       linked with libompbatch.a
#   hooked+stats the same with OMPBATCH_STATS=1: statistics line checked against --expect
#   preload      the plain program with LD_PRELOAD=<libompbatch.so> and OMPBATCH_STATS=1:
#                statistics line checked against --expect too
#   disabled     hooked with OMPBATCH_DISABLE=1 and OMPBATCH_STATS=1: state=pass-through and
#                every *_batched counter 0
#   hooked+busy  hooked with the host taken for busy (OMPBATCH_HOST_BUSY=1), the way the hook
#                runs while every processor has a runnable thread
#   hooked+timed hooked with OMPBATCH_DIRECT_REGIONS=timed, the default: regions on present
#                data with device addresses or forwarded as timing per kernel decides
# The other variants take the host for idle (OMPBATCH_HOST_BUSY=0, or what --host-busy says)
# and give every region on present data device addresses (OMPBATCH_DIRECT_REGIONS=1): their
# counts must not depend on what else the machine runs, nor on timing.
# Every variant must match the plain run exactly: stdout, exit status, and the stderr lines
# that hold the runtime's messages ("Libomptarget ..." under LLVM 16, "omptarget ..." under
# 19; addresses masked, since they differ between binaries and runs). Each variant also runs with OMP_TARGET_OFFLOAD=MANDATORY (no
# silent host fallback) and without OMPBATCH_DISABLE/OMPBATCH_STATS/LD_PRELOAD from the
# caller's environment; unless OMPBATCH_COMPARE_GPU=1, also with
# OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1, so that on a host-offload build OpenMP
# device 0 is never taken for a CUDA device by the library.
#
# options:
#   --name NAME        the program's name in the report (default: the plain binary's name)
#   --expect EXPR      a statistics expectation for hooked+stats and preload, repeatable:
#                      KEY>=N, KEY>N, KEY<=N, KEY<N, KEY==N, KEY!=N (numbers), KEY=VALUE
#                      (text) or KEY~A|B (a comma-separated list holding A or B), KEY a
#                      field of the line, e.g. --expect update_batched>=32
#                      (state=active is expected unless --state says otherwise)
#   --state S          the hook state expected of hooked+stats and preload (default active)
#   --host-busy V      OMPBATCH_HOST_BUSY of every variant but hooked+busy (default 0)
#   --status N         the exit status the plain run must have (default 0; a program that
#                      libomptarget aborts exits 134)
#   --no-stats         no statistics line is expected (a run that aborts skips exit handlers)
#   --no-preload       skip the preload variant
#   --env VAR=VALUE    set VAR in every variant's environment (plain's too), repeatable, e.g.
#                      --env OMPBATCH_REGISTER_MB=4096 for a behaviour the hook has only when
#                      asked
#   --args-file F      read more arguments from F, one per line, as if given in its place
#                      (the Bazel tests write their options there, so GPU runs reuse them)
# environment:
#   OMPBATCH_TEST_SEED       the seed (default: random); printed either way, to replay a run
#   OMPBATCH_COMPARE_GPU=1   keep the caller's CUDA driver setting (GPU builds)
#   OMPBATCH_COMPARE_TIMEOUT seconds per run (default 120); a run still going a second before
#                            its limit has the wait channel of each thread of its processes
#                            (children included) read, and a failure report shows them
#   OMPBATCH_COMPARE_KEEP=1  keep every run's stdout/stderr (kept anyway when a check fails)
#   OMPBATCH_COMPARE_EXPECT  more --expect expressions, separated by blanks (GPU runs add
#                            paths~kernel|batch)
#   OMPBATCH_COMPARE_PRELOAD a library every run preloads (after libompbatch.so in the preload
#                            variant): LLVM 19's JIT-init library on a GPU runner
#
# Prints one line per check ("ok ..." or "FAIL ...: why") and last
# "omp hook compare <name>: N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -uo pipefail

usage() {
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# Splice --args-file contents into the argument list first.
spliced=()
while [ $# -gt 0 ]; do
    if [ "$1" = --args-file ]; then
        [ $# -ge 2 ] && [ -f "$2" ] || { echo "compare.sh: --args-file needs a file" >&2; exit 2; }
        while IFS= read -r line || [ -n "$line" ]; do
            spliced+=("$line")
        done <"$2"
        shift 2
    else
        spliced+=("$1")
        shift
    fi
done
set -- ${spliced[@]+"${spliced[@]}"}

name=""
expects=()
for extra in ${OMPBATCH_COMPARE_EXPECT:-}; do
    expects+=("$extra")
done
want_status=0
want_state=active
host_busy=0
stats=1
preload=1
positional=()
program_args=()
extra_env=()
while [ $# -gt 0 ]; do
    case "$1" in
    --name) [ $# -ge 2 ] || usage; name=$2; shift 2 ;;
    --expect) [ $# -ge 2 ] || usage; expects+=("$2"); shift 2 ;;
    --status) [ $# -ge 2 ] || usage; want_status=$2; shift 2 ;;
    --no-stats) stats=0; shift ;;
    --no-preload) preload=0; shift ;;
    --state) [ $# -ge 2 ] || usage; want_state=$2; shift 2 ;;
    --host-busy) [ $# -ge 2 ] || usage; host_busy=$2; shift 2 ;;
    --env)
        [ $# -ge 2 ] && [[ "$2" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || {
            echo "compare.sh: --env needs VAR=VALUE, got '${2:-}'" >&2
            usage
        }
        extra_env+=("$2")
        shift 2
        ;;
    --) shift; program_args=("$@"); break ;;
    -*) echo "compare.sh: unknown option $1" >&2; usage ;;
    *) positional+=("$1"); shift ;;
    esac
done
[ ${#positional[@]} -eq 3 ] || usage
plain=${positional[0]}
hooked=${positional[1]}
lib=${positional[2]}
[ -n "$name" ] || name=$(basename "$plain")

passed=0
failed=0
ok() {
    passed=$((passed + 1))
    echo "ok   $*"
}
fail() {
    failed=$((failed + 1))
    echo "FAIL $*"
}

for f in "$plain" "$hooked"; do
    [ -x "$f" ] || { echo "compare.sh: $f is not an executable" >&2; exit 2; }
done
[ -f "$lib" ] || { echo "compare.sh: $lib does not exist" >&2; exit 2; }
# LD_PRELOAD needs a path that does not depend on the working directory.
lib_abs=$(cd "$(dirname "$lib")" && pwd -P)/$(basename "$lib")

seed=${OMPBATCH_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
case "$seed" in
'' | *[!0-9]*) echo "compare.sh: OMPBATCH_TEST_SEED must be a number, got '$seed'" >&2; exit 2 ;;
esac
echo "omp hook compare $name: seed $seed (OMPBATCH_TEST_SEED=$seed replays it)"
[ ${#extra_env[@]} -eq 0 ] || echo "every variant with ${extra_env[*]}"

dir=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/omp_hook_compare.XXXXXX") || exit 2
timeout_s=${OMPBATCH_COMPARE_TIMEOUT:-120}

base_env=(env -u OMPBATCH_DISABLE -u OMPBATCH_STATS -u LD_PRELOAD OMP_TARGET_OFFLOAD=MANDATORY
    OMPBATCH_HOST_BUSY="$host_busy" OMPBATCH_DIRECT_REGIONS=1 ${extra_env[@]+"${extra_env[@]}"})
# What the runner itself must preload into every run (LLVM 19's JIT-init library on a GPU).
runner_preload=${OMPBATCH_COMPARE_PRELOAD:-}
[ -z "$runner_preload" ] || base_env+=(LD_PRELOAD="$runner_preload")
if [ "${OMPBATCH_COMPARE_GPU:-0}" != 1 ]; then
    base_env+=(OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1)
fi

# The processes whose parent is pid, from /proc (no procps needed).
children_of() {
    local stat line parent
    for stat in /proc/[0-9]*/stat; do
        line=$(<"$stat") 2>/dev/null || continue
        read -r _ parent _ <<<"${line##*) }" # after the name: state, parent, ...
        if [ "$parent" = "$1" ]; then
            stat=${stat#/proc/}
            echo "${stat%/stat}"
        fi
    done
}

# The process pid and every process below it, one a line.
process_tree() {
    local child
    echo "$1"
    for child in $(children_of "$1"); do
        process_tree "$child"
    done
}

# Where every thread of the processes under pid waits (state, kernel wait channel, name).
describe_waits() {
    local p t
    for p in $(process_tree "$1"); do
        [ -r "/proc/$p/cmdline" ] || continue
        echo "process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-100)"
        for t in /proc/"$p"/task/*; do
            echo "  thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)):" \
                "$(sed 's/.*) //' "$t/stat" 2>/dev/null | cut -d' ' -f1)" \
                "$(cat "$t/wchan" 2>/dev/null)"
        done
    done
}

# A second before a run's time limit, writes where the run under pid waits to file, unless
# killed first: a run that hangs is reported with where it hung.
watchdog() {
    local nap
    sleep $((timeout_s > 1 ? timeout_s - 1 : 1)) &
    nap=$!
    trap 'kill $nap 2>/dev/null; exit 0' TERM
    wait "$nap" && describe_waits "$1" >"$2"
}

# run VARIANT [VAR=value...] BINARY: runs BINARY <seed> <program args> into $dir/VARIANT.*
run() {
    local variant=$1
    shift
    # In a subshell whose stderr is dropped: bash's own "Aborted" notice for a program the
    # runtime aborts is not the program's output.
    (
        timeout -k 5 "$timeout_s" "${base_env[@]}" "$@" "$seed" \
            ${program_args[@]+"${program_args[@]}"} >"$dir/$variant.out" 2>"$dir/$variant.err" &
        running=$!
        watchdog "$running" "$dir/$variant.hung" &
        dog=$!
        wait "$running"
        echo $? >"$dir/$variant.status"
        kill "$dog" 2>/dev/null
        wait "$dog"
    ) 2>/dev/null
}

variants=(hooked hooked+stats)
run plain "$plain"
run hooked "$hooked"
run hooked+stats OMPBATCH_STATS=1 "$hooked"
if [ "$preload" = 1 ]; then
    run preload OMPBATCH_STATS=1 LD_PRELOAD="$lib_abs${runner_preload:+:$runner_preload}" "$plain"
    variants+=(preload)
fi
run disabled OMPBATCH_STATS=1 OMPBATCH_DISABLE=1 "$hooked"
variants+=(disabled)
if [ "$host_busy" != 1 ]; then
    run hooked+busy OMPBATCH_HOST_BUSY=1 "$hooked"
    variants+=(hooked+busy)
fi
run hooked+timed OMPBATCH_DIRECT_REGIONS=timed "$hooked"
variants+=(hooked+timed)

status_of() { cat "$dir/$1.status"; }

# A run's exit status in words where it says more than the number.
status_words() {
    local st
    st=$(status_of "$1")
    case "$st" in
    124 | 137) echo "$st (killed after ${timeout_s}s)" ;;
    134) echo "$st (SIGABRT)" ;;
    139) echo "$st (SIGSEGV)" ;;
    *) echo "$st" ;;
    esac
}

# The runtime's messages of a run, addresses masked.
runtime_lines() { grep -E 'Libomptarget|(^|[^[:alpha:]])omptarget ' "$dir/$1.err" | sed -E 's/0x[0-9a-fA-F]+/0x?/g'; }

# The end of a run's stderr, for a failure's context, and where a run that hung waited.
show_stderr() {
    echo "     last lines of $1's stderr:"
    tail -n 8 "$dir/$1.err" | sed 's/^/       /'
    if [ -s "$dir/$1.hung" ]; then
        echo "     where $1 waited a second before its time limit:"
        sed 's/^/       /' "$dir/$1.hung"
    fi
}

# ---- the plain run: the reference ------------------------------------------------------------
if [ "$(status_of plain)" = "$want_status" ]; then
    ok "plain: exit status $(status_words plain)"
else
    fail "plain: exit status $(status_words plain), want $want_status" \
        "(the program's own checks, without the hook)"
    show_stderr plain
fi

# ---- every variant behaves like plain --------------------------------------------------------
for v in "${variants[@]}"; do
    if [ "$(status_of "$v")" = "$(status_of plain)" ]; then
        ok "$v: exit status $(status_words "$v"), as plain"
    else
        fail "$v: exit status $(status_words "$v"), plain $(status_words plain)"
        show_stderr "$v"
    fi
    if cmp -s "$dir/plain.out" "$dir/$v.out"; then
        ok "$v: stdout as plain ($(wc -l <"$dir/$v.out") lines)"
    else
        fail "$v: stdout differs from plain:"
        diff -u "$dir/plain.out" "$dir/$v.out" | head -n 30 | sed 's/^/       /'
    fi
    if [ "$(runtime_lines plain)" = "$(runtime_lines "$v")" ]; then
        ok "$v: libomptarget messages as plain ($(runtime_lines "$v" | wc -l) lines)"
    else
        fail "$v: libomptarget messages differ from plain:"
        diff -u <(runtime_lines plain) <(runtime_lines "$v") | head -n 20 | sed 's/^/       /'
    fi
done

# ---- statistics ------------------------------------------------------------------------------
stats_line() { grep '^ompbatch hook: ' "$dir/$1.err"; }

# The value of KEY in a statistics line, or nothing.
stat_value() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -n 1; }

# check_expectation VARIANT LINE EXPR
check_expectation() {
    local v=$1 line=$2 expr=$3 key op want got
    if [[ ! "$expr" =~ ^([A-Za-z_][A-Za-z0-9_]*)(\>=|\<=|==|!=|=|~|\>|\<)(.+)$ ]]; then
        fail "$v: bad expectation '$expr' (want KEY>=N, KEY=VALUE, ...)"
        return
    fi
    key=${BASH_REMATCH[1]} op=${BASH_REMATCH[2]} want=${BASH_REMATCH[3]}
    got=$(stat_value "$line" "$key")
    if [ -z "$got" ]; then
        fail "$v: expectation $expr: the statistics line has no field '$key'"
        return
    fi
    if [ "$op" = "~" ]; then
        # Text containing one of the |-separated words, e.g. paths~kernel|batch.
        local word
        IFS='|' read -r -a words <<<"$want"
        for word in "${words[@]}"; do
            if [[ ",$got," == *",$word,"* ]]; then
                ok "$v: $key=$got ($expr)"
                return
            fi
        done
        fail "$v: expectation $expr not met: $key=$got"
        return
    fi
    if [ "$op" = "=" ]; then
        if [ "$got" = "$want" ]; then
            ok "$v: $key=$got"
        else
            fail "$v: expectation $expr not met: $key=$got"
        fi
        return
    fi
    if [[ ! "$got" =~ ^[0-9]+$ || ! "$want" =~ ^[0-9]+$ ]]; then
        fail "$v: expectation $expr: '$key=$got' or '$want' is not a number"
        return
    fi
    local holds=0
    case "$op" in
    '>=') ((got >= want)) && holds=1 ;;
    '>') ((got > want)) && holds=1 ;;
    '<=') ((got <= want)) && holds=1 ;;
    '<') ((got < want)) && holds=1 ;;
    '==') ((got == want)) && holds=1 ;;
    '!=') ((got != want)) && holds=1 ;;
    esac
    if [ "$holds" = 1 ]; then
        ok "$v: $key=$got ($expr)"
    else
        fail "$v: expectation $expr not met: $key=$got"
    fi
}

# Sets stats_text to the single statistics line of a run; a failure if there is none or more.
one_stats_line() {
    local v=$1 count
    stats_text=$(stats_line "$v")
    count=$(grep -c . <<<"$stats_text")
    if [ -z "$stats_text" ]; then
        fail "$v: no 'ompbatch hook: ...' statistics line on stderr with OMPBATCH_STATS=1" \
            "(hook not linked in, or no statistics printed at exit)"
        return 1
    fi
    if [ "$count" != 1 ]; then
        fail "$v: $count statistics lines on stderr, want one"
        return 1
    fi
    echo "     $v: $stats_text"
}

if [ "$stats" = 1 ]; then
    if [ -z "$(stats_line hooked)" ]; then
        ok "hooked: no statistics line without OMPBATCH_STATS"
    else
        fail "hooked: a statistics line without OMPBATCH_STATS=1: $(stats_line hooked | head -n 1)"
    fi
    active=(hooked+stats)
    [ "$preload" = 1 ] && active+=(preload)
    for v in "${active[@]}"; do
        one_stats_line "$v" || continue
        check_expectation "$v" "$stats_text" "state=$want_state"
        for e in ${expects[@]+"${expects[@]}"}; do
            check_expectation "$v" "$stats_text" "$e"
        done
    done
    if one_stats_line disabled; then
        check_expectation disabled "$stats_text" "state=pass-through"
        for key in update_batched enter_batched exit_batched; do
            check_expectation disabled "$stats_text" "$key==0"
        done
    fi
fi

if [ "$failed" = 0 ] && [ "${OMPBATCH_COMPARE_KEEP:-0}" != 1 ]; then
    rm -rf "$dir"
else
    echo "     outputs of every run: $dir"
fi
echo "omp hook compare $name: $passed passed, $failed failed"
[ "$failed" = 0 ]
