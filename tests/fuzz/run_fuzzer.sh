#!/usr/bin/env bash
# run_fuzzer.sh FUZZER CORPUS_DIR: replays every input of CORPUS_DIR, then fuzzes for
# FUZZ_SECONDS (default 20) from FUZZ_SEED (default 1). Prints the executions and time.
set -euo pipefail
fuzzer=$1
corpus=$2
seconds=${FUZZ_SECONDS:-20}
seed=${FUZZ_SEED:-1}
work=${TEST_TMPDIR:-$(mktemp -d)}/fuzz
artifacts=${TEST_UNDECLARED_OUTPUTS_DIR:-$work}/
mkdir -p "$work/new"
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || { echo "no corpus in $corpus" >&2; exit 1; }
echo "replaying $(ls "$corpus" | wc -l) corpus inputs"
"$fuzzer" -runs=0 -artifact_prefix="$artifacts" "$corpus"
echo "fuzzing for $seconds s from seed $seed"
"$fuzzer" -seed="$seed" -max_total_time="$seconds" -max_len=3073 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "$work/new" "$corpus" 2>&1 | tail -n 20
