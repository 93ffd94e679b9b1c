#!/usr/bin/env bash
# The mapping fuzzer at length (map_fuzz.c): seeds 1..SEEDS, COUNT constructs each, the plain
# and the hooked build compared run by run (stdout and exit status); prints the seeds whose runs
# differ and a closing count. Host-offload builds by default (the CUDA driver kept away from
# the library); OMPBATCH_COMPARE_GPU=1 for nvptx builds on a GPU machine.
# Usage: fuzz_many.sh <map_fuzz_plain> <map_fuzz_hooked> SEEDS COUNT [edges]
set -u
[ $# -eq 4 ] || [ $# -eq 5 ] || { echo "usage: $0 <plain> <hooked> SEEDS COUNT [edges]" >&2; exit 2; }
plain=$1 hooked=$2 seeds=$3 count=$4 mode=${5:-}
export OMP_TARGET_OFFLOAD=MANDATORY
[ "${OMPBATCH_COMPARE_GPU:-0}" = 1 ] || export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1
bad=0 total=0 broken=0
for seed in $(seq 1 $seeds); do
  a=$($plain $seed $count $mode 2>/dev/null; echo "rc=$?")
  b=$($hooked $seed $count $mode 2>/dev/null; echo "rc=$?")
  total=$((total + count))
  # A plain run that fails means the fuzzer's own model went wrong: the comparison of that
  # seed proves little, so it is counted apart.
  if [ "${a##*rc=}" != 0 ]; then broken=$((broken+1)); echo "seed $seed: the plain run failed (${a##*rc=})"; fi
  if [ "$a" != "$b" ]; then bad=$((bad+1)); echo "seed $seed differs"; diff <(echo "$a") <(echo "$b") | head -5; fi
done
echo "fuzz: $seeds runs, $total constructs, $bad differing, $broken plain runs failed"
[ "$bad" = 0 ] && [ "$broken" = 0 ]
