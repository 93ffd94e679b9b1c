#!/usr/bin/env bash
# The fork tests of the OpenMP pack (plain and with OMPBATCH_REGISTER_MB, the GPU's extra
# expectation registrations>=1 for the latter), one verbose hooked run showing the
# registrations, then hook_bench k-from,h-to,r-naive with registration (three processes) and
# without (one), idle, to see whether h-to after registered k-from is slow.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r
  lscpu | grep -E "Model name|^Core" ; } | tee "$OUT/host.txt"
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p"
( cd "$p" && export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  for t in fork_mapped_test fork_mapped_registered_test; do
    extra=""; [ $t = fork_mapped_registered_test ] && extra="registrations>=1"
    OMPBATCH_COMPARE_GPU=1 OMPBATCH_COMPARE_EXPECT="$extra" OMPBATCH_COMPARE_KEEP=1 bash ./compare.sh bin/fork_mapped_nvptx_plain bin/fork_mapped_nvptx_hooked bin/libompbatch.so --args-file args/$t.args
    echo "exit $?"
  done
  echo "== verbose"
  OMPBATCH_VERBOSE=1 OMPBATCH_REGISTER_MB=4096 OMPBATCH_STATS=1 ./bin/fork_mapped_nvptx_hooked 7 2>&1 | grep -E "registered|fork_mapped|ompbatch hook:" | sed 's/at 0x[0-9a-f]*/at ADDR/'
  echo "exit ${PIPESTATUS[0]}"
) > "$OUT/fork.txt" 2>&1
grep -E "^FAIL|compare|^exit|registered|registrations=" "$OUT/fork.txt" | cut -c1-220
( export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
  for k in 1 2 3; do
    echo "== register $k"; OMPBATCH_REGISTER_MB=4096 timeout 100 ./hook_bench_head --reps 5 --only k-from,h-to,r-naive; echo "exit $?"
  done
  echo "== plain"; timeout 100 ./hook_bench_head --reps 5 --only k-from,h-to,r-naive; echo "exit $?"
  echo "== register, h-to and r-naive alone"; OMPBATCH_REGISTER_MB=4096 timeout 100 ./hook_bench_head --reps 5 --only h-to,r-naive; echo "exit $?"
) > "$OUT/hto.txt" 2>&1
grep -E "^== |^(k-from|h-to|r-naive) |exit" "$OUT/hto.txt" | cut -c1-170
date -u
