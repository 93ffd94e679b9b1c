#!/usr/bin/env bash
# Builds the OpenMP part of the GPU pack (called by the omp_gpu_pack genrule, BUILD.bazel):
# the hook tests' nvptx programs with their compare.sh options, the examples, libompbatch.so and
# the runner. The LLVM 16 runtime travels separately (omp_runtime_bundle.tar.xz): unpack both
# into one directory on the GPU machine and run ./run_omp_pack.sh there.
#
#   make_omp_pack.sh --out F.tar.gz --runner R --compare C --lib L [--runtime 16|19]
#                    [--test NAME:PROGRAM:ARGSFILE]... [--bin FILE]...
# --test: compare.sh runs bin/PROGRAM_nvptx_plain against bin/PROGRAM_nvptx_hooked with the
# options in ARGSFILE (copied to args/NAME.args); --bin: any program to copy into bin/.
# --runtime: the libomptarget the programs were built for (default 16), written to RUNTIME;
# under 19 the programs' names lose their `_llvm19` in bin/, so one runner serves both packs.
set -euo pipefail

die() {
    echo "make_omp_pack: $*" >&2
    exit 1
}

out="" runner="" compare="" lib="" runtime=16
tests=() bins=()
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    --runner) runner=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --test) tests+=("$2"); shift 2 ;;
    --bin) bins+=("$2"); shift 2 ;;
    *) die "unknown argument '$1'" ;;
    esac
done
[ -n "$out" ] && [ -n "$runner" ] && [ -n "$compare" ] && [ -n "$lib" ] ||
    die "--out, --runner, --compare and --lib are required"

stage=$(mktemp -d "${TMPDIR:-/tmp}/omp_pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/args"
cp -L "$runner" "$stage/run_omp_pack.sh"
cp -L "$compare" "$stage/compare.sh"
cp -L "$lib" "$stage/bin/libompbatch.so"
case "$runtime" in 16 | 19) ;; *) die "--runtime must be 16 or 19, not '$runtime'" ;; esac
echo "$runtime" >"$stage/RUNTIME"
for b in ${bins[@]+"${bins[@]}"}; do
    name=$(basename "$b")
    name=${name/_llvm$runtime/}
    [ -e "$stage/bin/$name" ] && die "two programs are named $name"
    cp -L "$b" "$stage/bin/$name"
done
: >"$stage/tests.txt"
for t in ${tests[@]+"${tests[@]}"}; do
    IFS=: read -r name program args <<<"$t"
    [ -n "$name" ] && [ -n "$program" ] && [ -f "$args" ] || die "bad --test '$t'"
    [ -x "$stage/bin/${program}_nvptx_plain" ] && [ -x "$stage/bin/${program}_nvptx_hooked" ] ||
        die "--test $name: bin/${program}_nvptx_{plain,hooked} not given with --bin"
    cp -L "$args" "$stage/args/$name.args"
    echo "$name $program" >>"$stage/tests.txt"
done
chmod -R u+rwX,go+rX "$stage"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -czf "$out" .
