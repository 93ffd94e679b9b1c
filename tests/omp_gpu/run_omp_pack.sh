#!/usr/bin/env bash
# Runs the OpenMP part of the GPU pack on a GPU machine (see make_omp_pack.sh): from a
# directory holding this script, bin/, args/, tests.txt, compare.sh and lib/ (the unpacked
# runtime bundle of the pack's LLVM version).
#   1. every hook test: compare.sh on the nvptx builds, with the CPU test's options plus
#      paths~kernel|batch for the programs whose constructs carry several pieces to the device
#      (BATCH_CALL_TESTS): they must reach the copy kernel or cuMemcpyBatchAsync, not only
#      per-copy cuMemcpyAsync; and registrations>=1 for those run with OMPBATCH_REGISTER_MB
#      (REGISTER_TESTS);
#   2. the hook's allocation-failure test (CUDA paths: staging, batches handed back);
#   3. NVTX: the hooked maps_basic under a recording NVTX tool (tests/nvtx), its batches must
#      appear as named ranges;
#   4. the stencil and halo examples (hook off and on, checked against a host reference);
#   5. the hook benchmark (every shape hook off and on, ending with the never-slower summary),
#      --json into $OUT (when set) or the current directory, and again with --contention (the
#      program's other OpenMP threads busy on every other core) into hook_bench_contention.json.
# Ends with "omp pack: N passed, M failed"; exits non-zero when anything failed.
# A pack for LLVM 19 (RUNTIME says 19) runs with its bundle's ptxas on PATH (the runtime
# compiles the programs' bitcode when they start) and its JIT-init library preloaded.
# usage: run_omp_pack.sh [--bench-args "ARGS"]   (default "--reps 10")
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench_args="--reps 10"
[ "${1:-}" = --bench-args ] && bench_args=$2
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
runtime=$(cat "$here/RUNTIME" 2>/dev/null || echo 16)
echo "omp pack: libomptarget $runtime"
if [ "$runtime" = 19 ]; then
    [ -f "$here/lib/libnvptx_jit_init.so" ] && [ -x "$here/bin/ptxas" ] || {
        echo "omp pack: no LLVM 19 bundle here (lib/libnvptx_jit_init.so, bin/ptxas)" >&2
        exit 1
    }
    export PATH="$here/bin:$PATH"
    export LD_PRELOAD="$here/lib/libnvptx_jit_init.so"
    export OMPBATCH_COMPARE_PRELOAD="$LD_PRELOAD"
fi
export OMP_TARGET_OFFLOAD=${OMP_TARGET_OFFLOAD:-MANDATORY}
out=${OUT:-$PWD}
BATCH_CALL_TESTS="maps_basic_test many_small_test entry_points_test"
# Run with OMPBATCH_REGISTER_MB (their args say so): on a GPU the hook must have registered.
REGISTER_TESTS="fork_mapped_registered_test"
passed=0
failed=0
record() {
    if [ "$1" = 0 ]; then passed=$((passed + 1)); echo "PASS $2"; else failed=$((failed + 1)); echo "FAIL $2 (exit $1)"; fi
}
command -v nvidia-smi >/dev/null && nvidia-smi -L
while read -r name program; do
    [ -n "$name" ] || continue
    # Programs whose constructs carry several copies to the device must reach the copy kernel
    # (staged) or cuMemcpyBatchAsync (direct); the others batch single copies, which go per
    # copy.
    case " $BATCH_CALL_TESTS " in
    *" $name "*) extra="paths~kernel|batch" ;;
    *) extra="" ;;
    esac
    case " $REGISTER_TESTS " in
    *" $name "*) extra="$extra registrations>=1" ;;
    esac
    OMPBATCH_COMPARE_GPU=1 OMPBATCH_COMPARE_EXPECT="$extra" \
        bash "$here/compare.sh" "$here/bin/${program}_nvptx_plain" "$here/bin/${program}_nvptx_hooked" \
        "$here/bin/libompbatch.so" --args-file "$here/args/$name.args" >"$out/$name.log" 2>&1
    rc=$?
    tail -n 1 "$out/$name.log"
    [ $rc = 0 ] || grep -E "^FAIL|^ +FAIL" "$out/$name.log" | head -n 20
    record $rc "$name"
done <"$here/tests.txt"
if [ -x "$here/bin/alloc_failures_nvptx_hooked" ]; then
    "$here/bin/alloc_failures_nvptx_hooked" "$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')" \
        >"$out/alloc_failures.log" 2>&1
    rc=$?
    tail -n 2 "$out/alloc_failures.log"
    record $rc alloc_failures
fi
if [ -f "$here/bin/nvtx_test.sh" ] && [ -f "$here/bin/libnvtx_recorder.so" ]; then
    # The hook's batches as NVTX ranges, seen by a recording tool loaded the way Nsight Systems
    # loads its own (NVTX_INJECTION64_PATH).
    bash "$here/bin/nvtx_test.sh" "$here/bin/libnvtx_recorder.so" hook \
        "$here/bin/maps_basic_nvptx_hooked" >"$out/nvtx.log" 2>&1
    rc=$?
    grep -A6 "^nvtx" "$out/nvtx.log" || tail -n 20 "$out/nvtx.log"
    record $rc nvtx_ranges
fi
if [ -x "$here/bin/stencil_nvptx" ]; then
    OMPBATCH_STATS=1 "$here/bin/stencil_nvptx" >"$out/stencil.log" 2>&1
    rc=$?
    cat "$out/stencil.log"
    record $rc stencil
fi
if [ -x "$here/bin/halo_nvptx" ]; then
    OMPBATCH_STATS=1 "$here/bin/halo_nvptx" >"$out/halo.log" 2>&1
    rc=$?
    cat "$out/halo.log"
    record $rc halo
fi
if [ -x "$here/bin/hook_bench_nvptx" ]; then
    # shellcheck disable=SC2086
    "$here/bin/hook_bench_nvptx" $bench_args --json "$out/hook_bench.json" >"$out/hook_bench.log" 2>&1
    rc=$?
    cat "$out/hook_bench.log"
    record $rc hook_bench
    # shellcheck disable=SC2086
    "$here/bin/hook_bench_nvptx" $bench_args --contention --json "$out/hook_bench_contention.json" \
        >"$out/hook_bench_contention.log" 2>&1
    rc=$?
    grep -E '^never slower|^inconclusive' "$out/hook_bench_contention.log"
    record $rc hook_bench_contention
fi
echo "omp pack: $passed passed, $failed failed"
[ "$failed" = 0 ]
