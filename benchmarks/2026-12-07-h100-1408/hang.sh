#!/usr/bin/env bash
# Why did `OMPBATCH_VERBOSE=1 ... fork_mapped_nvptx_hooked 7 2>&1 | grep` not finish? Each
# variant runs in the background with its output in files; after 20 s a live one is reported
# (threads' wait channels, children) and killed; leftover processes are listed after each.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
p=$(mktemp -d)
tar xzf omp_gpu_pack.tar.gz -C "$p" && tar xJf omp_runtime_bundle.tar.xz -C "$p"
cd "$p"; export LD_LIBRARY_PATH="$p/lib" OMP_TARGET_OFFLOAD=MANDATORY
watch_run() { # name, then the command
  local name=$1; shift
  echo "== $name"; date -u +%T
  "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" &
  local pid=$! i
  for i in $(seq 1 24); do sleep 0.5; kill -0 $pid 2>/dev/null || break; done
  if kill -0 $pid 2>/dev/null; then
    echo "HUNG after 12 s"
    for t in /proc/$pid/task/*; do echo "  thread ${t##*/} $(cut -d' ' -f3 $t/stat) $(cat $t/wchan)"; done
    for c in $(pgrep -P $pid); do echo "  child $c $(cut -d' ' -f3 /proc/$c/stat) $(cat /proc/$c/wchan)"; for t in /proc/$c/task/*; do echo "    thread ${t##*/} $(cat $t/wchan)"; done; done
    pkill -9 -P $pid; kill -9 $pid
  fi
  wait $pid; echo "exit $?"
  tail -2 "$OUT/$name.out"; grep -E "hook: registered|^ompbatch hook:" "$OUT/$name.err" | cut -c1-120 | head -3
  ps -eo pid,ppid,stat,cmd | grep -E "fork_mapped" | grep -v grep
}
for k in 1 2; do
watch_run verbose_reg$k env OMPBATCH_VERBOSE=1 OMPBATCH_REGISTER_MB=4096 OMPBATCH_STATS=1 ./bin/fork_mapped_nvptx_hooked 7
watch_run piped$k bash -c 'OMPBATCH_VERBOSE=1 OMPBATCH_REGISTER_MB=4096 OMPBATCH_STATS=1 ./bin/fork_mapped_nvptx_hooked 7 2>&1 | grep -E "registered|fork_mapped|ompbatch hook:"'
watch_run reg_seed$k env OMPBATCH_REGISTER_MB=4096 OMPBATCH_STATS=1 ./bin/fork_mapped_nvptx_hooked $((7 + k))
watch_run plain_piped$k bash -c './bin/fork_mapped_nvptx_plain 7 2>&1 | grep fork_mapped'
done
date -u +%T
