#!/usr/bin/env bash
# Runs a hooked test binary ($1) once on the host-offload target as `$1 <seed> [$2...]`, with a
# fresh seed (printed; OMPBATCH_TEST_SEED replays it), offloading mandatory and no CUDA
# driver, the host taken for idle, as compare.sh does.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 <hooked binary>" >&2; exit 2; }
seed=${OMPBATCH_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "seed $seed (OMPBATCH_TEST_SEED=$seed replays it)"
export OMP_TARGET_OFFLOAD=MANDATORY
export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1
# The host taken for idle unless the test says otherwise: what the hook does must not depend on
# what else the machine runs.
export OMPBATCH_HOST_BUSY=${OMPBATCH_HOST_BUSY:-0}
# Likewise every region on present data gets device addresses unless the test says otherwise,
# not what timing chooses.
export OMPBATCH_DIRECT_REGIONS=${OMPBATCH_DIRECT_REGIONS:-1}
exec "$1" "$seed" "${@:2}"
