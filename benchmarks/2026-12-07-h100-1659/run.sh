#!/usr/bin/env bash
# The forwarded region shapes under contention: HEAD (v0) against the busy-host forward path
# (v1) and that path with 1000 ns of spinning added (v1s, OBX_SPIN_NS), rotating, six rounds.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT/x"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u;
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource; lscpu | grep -E "Model name|Thread|Core"; } | tee "$OUT/host.txt"
p=$(mktemp -d); tar xJf omp_runtime_bundle.tar.xz -C "$p"
export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
S=r-one-to,r-present,r-floor-naive,r-floor-tofrom
run() { # variant round order
  local v=$1 k=$2 env=()
  [ "$v" = v1s ] && env=(OBX_SPIN_NS=1000)
  env "${env[@]}" timeout 60 ./hook_bench_$v --only $S --reps 31 --contention --json "$OUT/x/${v}_$k.json" > "$OUT/x/${v}_$k.txt" 2>&1
  echo "$v $k rc=$?"; grep -E "^r-" "$OUT/x/${v}_$k.txt" | awk '{print $1}' | tr '\n' ' ' ; grep -oE "[0-9.]+x " "$OUT/x/${v}_$k.txt" | tr '\n' ' '; echo
}
for k in 1 2 3 4 5 6; do
  case $((k % 3)) in
    1) o="v0 v1 v1s";; 2) o="v1 v1s v0";; 0) o="v1s v0 v1";;
  esac
  for v in $o; do run $v $k; done
done
tar czf "$OUT/x.tar.gz" -C "$OUT" x && rm -rf "$OUT/x"
date -u
