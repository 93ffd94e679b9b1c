#!/usr/bin/env bash
# Runs OpenMP offload programs from an unpacked pack directory on a GPU machine that has the
# NVIDIA driver (a plain libcuda.so) but no clang, no LLVM runtime and no Bazel.
#
# usage: ./run_omp_gpu.sh [--timeout SECONDS] [COMMANDS_FILE]
#   COMMANDS_FILE  one command a line: a name (letters, digits, '.', '_', '-'), blanks, then a
#                  command line run by bash from the pack directory, e.g.
#                      smoke  ./bin/offload_smoke
#                      smoke_plugin_v1  LIBOMPTARGET_NEXTGEN_PLUGINS=0 ./bin/offload_smoke
#                  Blank lines and lines starting with '#' are skipped. Default: commands.txt
#                  next to this script.
#   --timeout S    kill a command after S seconds (default 600; needs coreutils' timeout)
#
# Layout it expects: this script, lib/ (the LLVM 16 runtime from bundle_omp_runtime.sh) and
# whatever the command lines name (bin/ by convention), all in one directory. It puts lib/ first
# on LD_LIBRARY_PATH (keeping what was there, where the driver may live), sets
# OMP_TARGET_OFFLOAD=MANDATORY unless the environment sets it (a program that quietly falls back
# to the host fails), prints the GPUs (nvidia-smi -L) and where libcuda.so comes from, then runs
# every command with stdin from /dev/null. Each command's output goes to NAME.log in $OUT when
# OUT is set, else in logs/ next to this script. A command passes when it exits 0.
#
# The last line is always
#
#   omp gpu: N passed, M failed
#
# and the exit status is 0 only when nothing failed and something passed.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
timeout_s=600
commands=""

usage() {
    sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) timeout_s=${2:?--timeout needs a value}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "run_omp_gpu: unknown option '$1' (see --help)" >&2; exit 2 ;;
        *) commands=$1; shift ;;
    esac
done
[ -n "$commands" ] || commands=$here/commands.txt
case "$commands" in /*) ;; *) commands=$PWD/$commands ;; esac

passed=0
failed=0
finish() {
    echo "omp gpu: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit
}

lib=$here/lib
echo "omp gpu pack: $here"
if [ ! -d "$lib" ]; then
    echo "run_omp_gpu: no runtime directory $lib (unpack the LLVM 16 runtime bundle there)" >&2
    failed=1
    finish
fi
if [ ! -r "$commands" ]; then
    echo "run_omp_gpu: cannot read the commands file $commands" >&2
    failed=1
    finish
fi
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMP_TARGET_OFFLOAD="${OMP_TARGET_OFFLOAD:-MANDATORY}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "OMP_TARGET_OFFLOAD=$OMP_TARGET_OFFLOAD"

if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>&1 | sed 's/^/gpu: /'
else
    echo "gpu: nvidia-smi not found"
fi
# libomptarget's CUDA plugins dlopen the plain name libcuda.so (not libcuda.so.1).
cuda=""
for d in $(echo "$LD_LIBRARY_PATH" | tr ':' ' '); do
    [ -e "$d/libcuda.so" ] && { cuda="$d/libcuda.so"; break; }
done
if [ -z "$cuda" ] && command -v ldconfig >/dev/null 2>&1; then
    cuda=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so" { print $NF; exit }')
fi
[ -z "$cuda" ] && for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /lib /usr/lib; do
    [ -e "$d/libcuda.so" ] && { cuda="$d/libcuda.so"; break; }
done
echo "libcuda.so: ${cuda:-not found (libomptarget will see no GPU; an existing libcuda.so.1 needs a libcuda.so link on LD_LIBRARY_PATH)}"

if [ -n "${OUT:-}" ]; then
    log_dir=$OUT
else
    log_dir=$here/logs
fi
if ! mkdir -p "$log_dir" 2>/dev/null || [ ! -w "$log_dir" ]; then
    log_dir=$(mktemp -d "${TMPDIR:-/tmp}/omp_gpu_logs.XXXXXX")
fi
echo "logs: $log_dir"

runner=""
command -v timeout >/dev/null 2>&1 && runner="timeout --kill-after=30 $timeout_s"

# Read every line first: the commands then cannot swallow the list through stdin.
names=()
lines=()
seen=" "
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line%$'\r'}
    # Leading blanks off; skip blank lines and comments.
    line=${line#"${line%%[![:space:]]*}"}
    case "$line" in "" | "#"*) continue ;; esac
    name=${line%%[[:space:]]*}
    cmd=${line#"$name"}
    cmd=${cmd#"${cmd%%[![:space:]]*}"}
    case "$name" in
        *[!A-Za-z0-9._-]*)
            echo "run_omp_gpu: $commands:$lineno: bad name '$name' (letters, digits, . _ - only)" >&2
            failed=$((failed + 1))
            continue ;;
    esac
    if [ -z "$cmd" ]; then
        echo "run_omp_gpu: $commands:$lineno: '$name' has no command" >&2
        failed=$((failed + 1))
        continue
    fi
    case "$seen" in
        *" $name "*)
            echo "run_omp_gpu: $commands:$lineno: name '$name' used twice" >&2
            failed=$((failed + 1))
            continue ;;
    esac
    seen="$seen$name "
    names+=("$name")
    lines+=("$cmd")
done <"$commands"

if [ ${#names[@]} -eq 0 ]; then
    echo "run_omp_gpu: no commands in $commands" >&2
    failed=$((failed + 1))
fi

cd "$here" || exit 2
i=0
while [ $i -lt ${#names[@]} ]; do
    name=${names[$i]}
    cmd=${lines[$i]}
    i=$((i + 1))
    log=$log_dir/$name.log
    start=$(date +%s)
    {
        echo "# $name: $cmd"
        echo "# in $here, $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
    } >"$log"
    # In a subshell, so that bash's own "Aborted"/"Killed" notice lands in the log too.
    ($runner bash -c "$cmd"; exit $?) </dev/null >>"$log" 2>&1
    rc=$?
    seconds=$(($(date +%s) - start))
    echo "# exit $rc after $seconds s" >>"$log"
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        echo "$name: passed (${seconds} s)"
    else
        failed=$((failed + 1))
        note=""
        case "$rc" in
            124) [ -n "$runner" ] && note=", timed out after $timeout_s s" ;;
            137) note=", killed (SIGKILL${runner:+: timed out after $timeout_s s, or out of memory})" ;;
            134) note=", aborted (SIGABRT)" ;;
            139) note=", segmentation fault" ;;
        esac
        echo "$name: FAILED (exit $rc$note, ${seconds} s): $cmd"
        echo "  --- last 30 lines of $log ---"
        tail -n 30 "$log" | sed 's/^/  /'
    fi
done

finish
