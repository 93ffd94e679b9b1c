#!/usr/bin/env bash
# Builds the OpenMP part of the GPU pack (called by the omp_gpu_pack genrule, BUILD.bazel):
# the hook tests' nvptx programs with their compare.sh options, the examples, libompbatch.so and
# the runner. The LLVM 16 runtime travels separately (omp_runtime_bundle.tar.xz): unpack both
# into one directory on the GPU machine and run ./run_omp_pack.sh there.
#
#   make_omp_pack.sh --out F.tar.gz --runner R --compare C --lib L
#                    [--test NAME:PROGRAM:ARGSFILE]... [--bin FILE]...
# --test: compare.sh runs bin/PROGRAM_nvptx_plain against bin/PROGRAM_nvptx_hooked with the
# options in ARGSFILE (copied to args/NAME.args); --bin: any program to copy into bin/.
set -euo pipefail

die() {
    echo "make_omp_pack: $*" >&2
    exit 1
}

out="" runner="" compare="" lib=""
tests=() bins=()
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    --runner) runner=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
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
for b in ${bins[@]+"${bins[@]}"}; do
    [ -e "$stage/bin/$(basename "$b")" ] && die "two programs are named $(basename "$b")"
    cp -L "$b" "$stage/bin/"
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
