#!/usr/bin/env bash
# The planner's bound (tests/BUILD.bazel, plan_bound_test): each run checks its own bytes and
# bounds and exits non-zero when either fails; a run that hangs is stopped after 60 s. The time
# bound catches a planner gone quadratic (a million copies would take hours), not a slow machine:
# an unoptimised build takes about 1-2 s here on a loaded two-core machine, so 6 s.
set -euo pipefail
bench=$1
run() { timeout 60 "$bench" "$@"; }
run --shape one-dst --copies 1000000 --max-seconds 6 --max-mb 300
run --shape one-src --copies 1000000 --max-seconds 6 --max-mb 300
run --shape random --copies 100000 --seed 7 --max-seconds 6 --max-mb 300
