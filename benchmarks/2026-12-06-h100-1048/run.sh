#!/usr/bin/env bash
# The wait probe with the pinned staging cached (as the library allocates it) and
# write-combined, alternating, twice each, in the auto scheduling mode.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
for k in 1 2; do
  for s in cached wc; do
    echo "== round $k $s"
    timeout 60 ./wait_probe wait_probe.cubin auto $([ $s = wc ] && echo wc); echo "exit $?"
  done
done > "$OUT/wait_probe.txt" 2>&1
grep -E "^==|^to .*16 x|^to .* 1 x 4 KiB (engine-staged|kernel-word)|^from 16 x 4 KiB kernel-word|^exit|checked" "$OUT/wait_probe.txt"
date -u
