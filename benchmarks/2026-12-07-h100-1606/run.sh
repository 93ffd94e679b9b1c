#!/usr/bin/env bash
# As run at 16:06 (one line, from the repository root of the device machine's copy, with the
# LLVM 16 runtime bundle and 4bee699's hook_bench_nvptx carried in .devp/): hook_bench with
# OMPBATCH_REGISTER_MB=4096, then with --contention, 5 repetitions each.
set -u; p=$(mktemp -d); tar xJf .devp/omp_runtime_bundle.tar.xz -C $p; export LD_LIBRARY_PATH=$p/lib OMP_TARGET_OFFLOAD=MANDATORY; mkdir -p $OUT/r; date -u; for m in register contention; do if [ $m = register ]; then OMPBATCH_REGISTER_MB=4096 timeout 100 .devp/hook_bench_woken --reps 5 --json $OUT/r/$m.json > $OUT/r/$m.txt 2>&1; else timeout 100 .devp/hook_bench_woken --reps 5 --contention --json $OUT/r/$m.json > $OUT/r/$m.txt 2>&1; fi; echo "$m rc=$?"; grep -E "^never|^inconclusive" $OUT/r/$m.txt | cut -c1-300; date -u +%T; done; tar czf $OUT/r2.tar.gz -C $OUT r && rm -rf $OUT/r
