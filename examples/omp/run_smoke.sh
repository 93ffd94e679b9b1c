#!/usr/bin/env bash
# Runs an example binary ($1) with the rest of the arguments as a smoke test: offloading
# mandatory, so that a runtime that cannot offload fails instead of running target regions on
# the host, and no CUDA driver, so that the run is the same on machines with a GPU. "@OUT@" in an
# argument becomes Bazel's undeclared-outputs directory (kept with the test logs), or a temporary
# directory outside Bazel. A JSON file written there is checked to be well-formed when python3
# is around.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 <binary> [args...]" >&2; exit 2; }
export OMP_TARGET_OFFLOAD=MANDATORY
export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1
out="${TEST_UNDECLARED_OUTPUTS_DIR:-$(mktemp -d)}"
bin="$1"
shift
args=()
for a in "$@"; do
    args+=("${a//@OUT@/$out}")
done
"$bin" "${args[@]}"
for f in "$out"/*.json; do
    [ -e "$f" ] || continue
    if command -v python3 >/dev/null; then
        python3 -m json.tool "$f" >/dev/null || { echo "malformed JSON: $f" >&2; exit 1; }
        echo "$(basename "$f"): well-formed JSON"
    fi
done
