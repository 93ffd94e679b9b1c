#!/bin/sh
# Offline stand-in: Bazel's coverage tools are not downloaded on these machines.
echo "remote_coverage_tools: not available (offline stand-in; ompbatch does not use bazel coverage)" >&2
exit 1
