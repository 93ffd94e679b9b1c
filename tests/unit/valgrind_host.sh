#!/usr/bin/env bash
# valgrind_host.sh TEST_BINARY... [--fake-driver LIB TEST_BINARY...]: runs each GoogleTest
# binary under valgrind memcheck and fails on any memory error or definite/indirect leak. The
# binaries before --fake-driver run without a CUDA driver; those after it with the fake driver
# LIB as the library's libcuda (and the direct strategy, as their own Bazel targets run).
set -uo pipefail
command -v valgrind >/dev/null 2>&1 || {
    echo "valgrind is not installed (Debian: apt-get install valgrind; ./run test installs it)" >&2
    exit 1
}
status=0
fake=
while [ $# -gt 0 ]; do
    if [ "$1" = --fake-driver ]; then
        fake=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
        shift 2
        continue
    fi
    binary=$1
    shift
    log=$(mktemp)
    if [ -n "$fake" ]; then
        export OMPBATCH_CUDA_LIBRARY=$fake OMPBATCH_CALIBRATE=0 OMPBATCH_COST_CACHE=off \
            OMPBATCH_STRATEGY=direct
    else
        export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1
    fi
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$binary" >"$log" 2>&1
    rc=$?
    echo "$(basename "$binary"): valgrind exit $rc, $(grep -E '^\[  PASSED  \]' "$log")"
    if [ $rc -ne 0 ]; then
        tail -n 40 "$log"
        status=1
    fi
    rm -f "$log"
done
exit $status
