#!/usr/bin/env bash
# Runs the copy kernel's paths under NVIDIA compute-sanitizer: the GPU strategy tests (every lane,
# staged and auto, random sizes and alignments) with memcheck, then a smaller set with racecheck.
# Any report fails the run (--error-exitcode). The toolkit is not part of the pack: pass the
# compute-sanitizer executable of a CUDA toolkit (11.8 or newer knows Hopper).
#
# usage: tools/sanitize.sh COMPUTE_SANITIZER [GPU_TEST_BINARY]   (default: tests/gpu_test of the pack)
# Prints "sanitizer: memcheck ok|FAILED, racecheck ok|FAILED"; exits non-zero when either failed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cs=${1:?usage: sanitize.sh COMPUTE_SANITIZER [GPU_TEST_BINARY]}
bin=${2:-$here/../tests/gpu_test}
# Calibrating under instrumentation would take long and measure the tool: the built-in model.
export OMPBATCH_CALIBRATE=0 OMPBATCH_REQUIRE_GPU=1
run() {
    local tool=$1 filter=$2
    "$cs" --tool "$tool" --error-exitcode 99 --print-limit 20 "$bin" --gtest_filter="$filter" \
        --gtest_color=no > "${SANITIZE_LOG_DIR:-.}/sanitize_$tool.log" 2>&1
    local rc=$?
    tail -n 3 "${SANITIZE_LOG_DIR:-.}/sanitize_$tool.log"
    [ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)"
}
mem=$(run memcheck 'V13000/GpuStrategy.*:-*4096x*:*64x1MiB*' | tail -n 1)
race=$(run racecheck 'V13000/GpuStrategy.*staged_64x*' | tail -n 1)
echo "sanitizer: memcheck $mem, racecheck $race"
[ "$mem" = ok ] && [ "$race" = ok ]
