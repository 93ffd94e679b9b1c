#!/usr/bin/env bash
# register_probe on whatever GPU comes; on an H200 then goal.sh (goal shapes, stats, wait probe,
# GPU tests, overlap probe, OpenMP pack at 9).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } > "$OUT/reg_host.txt"
timeout 120 ./register_probe > "$OUT/register_probe.txt" 2>&1; echo "register_probe exit $?" >> "$OUT/register_probe.txt"
cat "$OUT/register_probe.txt"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && OUT=$OUT bash goal.sh
exit 0
