#!/usr/bin/env bash
# `bazel run //install -- [--prefix P] [--destdir D]`: install.sh with the built files named in
# install.args ($1; one "--option path" per line, paths relative to the runfiles root).
set -euo pipefail
args_file=$1
shift
cd "${RUNFILES_DIR:-$0.runfiles}/ompbatch" 2>/dev/null || cd "$(dirname "$args_file")/.."
mapfile -t lines <"$args_file"
built=()
for line in "${lines[@]}"; do
    # shellcheck disable=SC2206 # "--option path": split in two on purpose
    built+=($line)
done
exec bash install/install.sh "${built[@]}" "$@"
