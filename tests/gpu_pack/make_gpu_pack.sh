#!/usr/bin/env bash
# Builds the GPU pack archive (called by the gpu_pack genrule; see gpu_pack.bzl).
#
#   make_gpu_pack.sh --out FILE.tar.gz --runner run_gpu_tests.sh [--test BIN]... [--tool BIN]...
#
# Layout of the archive: gpu_pack/run_gpu_tests.sh, gpu_pack/tests/<BIN>, gpu_pack/tools/<BIN>,
# gpu_pack/MANIFEST. The archive is reproducible (sorted names, fixed times and owners).
# Every binary must run on its own: a shared library that ldd cannot find next to the copied
# binary, or one that resolves into Bazel's tree (a workspace .so from a dynamic-mode build),
# fails the pack with a message saying to build with --config=gpu.
set -euo pipefail

die() {
    echo "make_gpu_pack: $*" >&2
    exit 1
}

out=""
runner=""
tests=()
tools=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift 2 ;;
        --runner) runner=$2; shift 2 ;;
        --test) tests+=("$2"); shift 2 ;;
        --tool) tools+=("$2"); shift 2 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
[ -n "$out" ] || die "--out is required"
[ -n "$runner" ] || die "--runner is required"
[ ${#tests[@]} -gt 0 ] || die "no --test binary given: list them in GPU_PACK_TESTS"

stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu_pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/gpu_pack
mkdir -p "$root/tests" "$root/tools"

manifest=$root/MANIFEST
{
    echo "ompbatch GPU pack"
    echo "run: ./run_gpu_tests.sh   (see ./run_gpu_tests.sh --help)"
    echo
} >"$manifest"

# Copies one binary into the pack and checks that it needs nothing from Bazel's tree.
add_binary() {
    local kind=$1 src=$2
    local name
    name=$(basename "$src")
    local dst=$root/$kind/$name
    [ -e "$dst" ] && die "two $kind binaries are named '$name'; rename one of the targets"
    [ -f "$src" ] && [ -x "$src" ] || die "$src is not an executable file"
    cp -L "$src" "$dst"
    chmod 0755 "$dst"

    local needed=""
    if [ "$(head -c 2 "$dst")" = "#!" ]; then
        needed="(script)"
    elif command -v readelf >/dev/null 2>&1; then
        needed=$(readelf -d "$dst" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
            tr '\n' ' ')
    fi
    if [ "$needed" = "(script)" ]; then
        :
    elif command -v ldd >/dev/null 2>&1; then
        local deps
        deps=$(ldd "$dst" 2>&1 || true)
        if grep -q "not found" <<<"$deps" || grep -Eq "_solib_|bazel-out|/execroot/" <<<"$deps"; then
            echo "$deps" >&2
            die "$kind/$name needs shared libraries from Bazel's tree (above): build the pack" \
                "with --config=gpu (./run gpu-pack) and give GPU test targets linkstatic = True"
        fi
    else
        echo "make_gpu_pack: warning: no ldd; not checking $name's shared libraries" >&2
    fi
    local sum size
    sum=$(sha256sum "$dst" | cut -d' ' -f1)
    size=$(stat -c %s "$dst")
    echo "$kind/$name  $size bytes  sha256 $sum  needs: ${needed:-(static)}" >>"$manifest"
}

for t in "${tests[@]}"; do
    add_binary tests "$t"
done
for t in ${tools[@]+"${tools[@]}"}; do
    add_binary tools "$t"
done
rmdir "$root/tools" 2>/dev/null || true

cp "$runner" "$root/run_gpu_tests.sh"
chmod 0755 "$root/run_gpu_tests.sh"

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -cf - gpu_pack |
    gzip -n -6 >"$out"
