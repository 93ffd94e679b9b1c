#!/usr/bin/env bash
# Runs null_arrays_test ($1) with no CUDA driver to find, so only the hook's own handling is
# under test, whatever the machine has.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <binary>" >&2; exit 2; }
OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 exec "$1"
