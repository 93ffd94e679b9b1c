#!/usr/bin/env bash
# Runs the OpenMP host-offload test binary given as $1 (see BUILD.bazel) with offloading made
# mandatory, so that a runtime that cannot offload fails loudly instead of running the target
# regions on the host, and with no CUDA driver, so that OpenMP device 0 (the host-offload
# device) is not taken for CUDA device 0 by the library on machines that have a GPU.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 <omp_mapped_test binary> [args...]" >&2; exit 2; }
export OMP_TARGET_OFFLOAD=MANDATORY
export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1
exec "$@"
