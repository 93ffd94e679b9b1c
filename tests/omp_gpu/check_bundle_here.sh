#!/usr/bin/env bash
# Checks an LLVM 16 runtime bundle (bundle_omp_runtime.sh OUTDIR) on this build machine, which
# has no GPU and no libcuda, and optionally assembles a pack to try on a GPU machine.
#
# usage: tests/omp_gpu/check_bundle_here.sh [--pack PACKDIR] BUNDLE_DIR
#   BUNDLE_DIR     the OUTDIR given to bundle_omp_runtime.sh (holds lib/)
#   --pack PACKDIR also write PACKDIR = run_omp_gpu.sh + lib/ (a copy of the bundle) + bin/ (the
#                  two smoke programs) + commands.txt; on the GPU machine: PACKDIR/run_omp_gpu.sh
#
# It builds offload_smoke.c twice with LLVM 16's clang and the flags of build_defs/omp.bzl
# (target "nvptx": sm_90; target "host": x86_64 host offload), then, each time from a clean
# environment (env -i) with LD_LIBRARY_PATH=BUNDLE_DIR/lib:
#   1. ldd: every library of both programs and of every bundled file resolves inside the bundle or
#      to the base C runtime (libc, libm, libstdc++, libgcc_s, ld-linux ...); none "not found";
#   2. the nvptx program with the default offload policy falls back to the host and is correct;
#   3. with OMP_TARGET_OFFLOAD=MANDATORY it fails with libomptarget's "offloading is mandatory"
#      error (there is no device here);
#   4. the host-offload program with OMP_TARGET_OFFLOAD=MANDATORY runs on a (host) device;
#   5. LD_DEBUG=libs: every object the nvptx run initialises, plugins included, comes from the
#      bundle or the base set; it prints the plugin names libomptarget asked the loader for.
set -euo pipefail

die() {
    echo "check_bundle_here: $*" >&2
    exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
llvm=/usr/lib/llvm-16
pack=""
bundle=""
while [ $# -gt 0 ]; do
    case "$1" in
        --pack) pack=${2:?--pack needs a directory}; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option '$1'" ;;
        *) bundle=$1; shift ;;
    esac
done
[ -n "$bundle" ] || die "usage: check_bundle_here.sh [--pack PACKDIR] BUNDLE_DIR"
bundle=$(cd "$bundle" && pwd)
lib=$bundle/lib
[ -d "$lib" ] || die "no $lib: run bundle_omp_runtime.sh $bundle first"

work=$(mktemp -d "${TMPDIR:-/tmp}/omp_gpu_check.XXXXXX")
trap 'rm -rf "$work"' EXIT

# build_defs/omp.bzl: OMP_COPTS, OMP_TARGET_FLAGS[target], OMP_LINKOPTS. -Wno-unknown-cuda-version
# is extra: clang 16 warns that CUDA 13 is newer than the 11.8 it knows, and -Werror makes that
# an error.
copts=(-std=c11 -O2 -g -Wall -Wextra -Werror -Wno-unknown-cuda-version)
nvptx=(-fopenmp -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda
    -march=sm_90 --cuda-path=/usr/local/cuda "--libomptarget-nvptx-bc-path=$llvm/lib")
host=(-fopenmp -fopenmp-targets=x86_64-pc-linux-gnu)
linkopts=(-ldl -pthread -lm "-L$llvm/lib" "-Wl,-rpath,$llvm/lib")
src=$here/offload_smoke.c
"$llvm/bin/clang" "${copts[@]}" "${nvptx[@]}" "$src" "${linkopts[@]}" -o "$work/offload_smoke_nvptx" \
    2> >(grep -v 'Wunknown-cuda-version' >&2)
"$llvm/bin/clang" "${copts[@]}" "${host[@]}" "$src" "${linkopts[@]}" -o "$work/offload_smoke_host"
echo "built offload_smoke_nvptx and offload_smoke_host (LLVM 16, build_defs/omp.bzl flags)"

clean() { env -i LD_LIBRARY_PATH="$lib" "$@"; }
is_base() {
    case "$1" in
        linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libdl.so.* | \
            libpthread.so.* | librt.so.* | libmvec.so.* | libresolv.so.* | libutil.so.* | \
            libgcc_s.so.* | libstdc++.so.*) return 0 ;;
        *) return 1 ;;
    esac
}

# 1. ldd
bad=0
checked=0
for f in "$work"/offload_smoke_* "$lib"/*; do
    [ -L "$f" ] && continue
    checked=$((checked + 1))
    while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        if [ "$path" = not ]; then
            echo "  $(basename "$f"): $name not found" >&2
            bad=1
        elif ! is_base "$name" && [ "$(dirname "$path")" != "$lib" ]; then
            echo "  $(basename "$f"): $name from $path, outside the bundle" >&2
            bad=1
        fi
    done < <(clean /usr/bin/ldd "$f")
done
[ "$bad" = 0 ] || die "ldd: the bundle does not cover everything (above)"
echo "1. ldd: $checked files resolve from $lib or the base C runtime"

# 2. default policy: host fallback, correct
out=$(clean "$work/offload_smoke_nvptx" 2>&1) || die "default policy run failed: $out"
if ! grep -q 'ran on the host (fallback)' <<<"$out" || ! grep -q 'offload_smoke: ok' <<<"$out"; then
    die "default policy run: unexpected output: $out"
fi
echo "2. default offload policy: $(head -n 1 <<<"$out")"

# 3. MANDATORY: libomptarget's fatal error
set +e
out=$(clean OMP_TARGET_OFFLOAD=MANDATORY "$work/offload_smoke_nvptx" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || die "OMP_TARGET_OFFLOAD=MANDATORY run succeeded on a machine without a GPU: $out"
grep -q 'failure of target construct while offloading is mandatory' <<<"$out" ||
    die "OMP_TARGET_OFFLOAD=MANDATORY: unexpected failure (exit $rc): $out"
echo "3. OMP_TARGET_OFFLOAD=MANDATORY: exit $rc, stderr:"
# shellcheck disable=SC2001
sed 's/^/     /' <<<"$out"

# 4. host offload through the bundled x86_64 plugin
out=$(clean OMP_TARGET_OFFLOAD=MANDATORY "$work/offload_smoke_host" 2>&1) ||
    die "host-offload run failed: $out"
grep -q 'ran on a device' <<<"$out" || die "host-offload run did not offload: $out"
echo "4. host offload, MANDATORY: $(head -n 1 <<<"$out")"

# 5. what the loader opened
trace=$(clean LD_DEBUG=libs "$work/offload_smoke_nvptx" 2>&1 >/dev/null)
bad=0
while read -r path; do
    name=$(basename "$path")
    is_base "$name" && continue
    [ "$(dirname "$path")" = "$lib" ] || { echo "  initialised $path, outside the bundle" >&2; bad=1; }
done < <(sed -n 's/.*calling init: //p' <<<"$trace")
[ "$bad" = 0 ] || die "LD_DEBUG: objects from outside the bundle (above)"
echo "5. LD_DEBUG=libs: libomptarget asked the loader for"
sed -n 's/.*find library=\(libomptarget\.rtl[^ ]*\|libcuda[^ ]*\|libhsa[^ ]*\) .*/\1/p' <<<"$trace" |
    awk '!seen[$0]++' | while read -r name; do
    if grep -q "calling init: $lib/$name\$" <<<"$trace"; then
        echo "     $name  (in the bundle, loaded)"
    elif [ -e "$lib/$name" ]; then
        echo "     $name  (in the bundle, not loaded)"
    else
        echo "     $name  (not in the bundle)"
    fi
done

if [ -n "$pack" ]; then
    mkdir -p "$pack"
    pack=$(cd "$pack" && pwd)
    rm -rf "${pack:?}/lib" "${pack:?}/bin"
    mkdir -p "$pack/bin"
    cp -a "$lib" "$pack/lib"
    [ -f "$bundle/OMP_RUNTIME_MANIFEST" ] && cp "$bundle/OMP_RUNTIME_MANIFEST" "$pack/"
    cp "$work/offload_smoke_nvptx" "$work/offload_smoke_host" "$pack/bin/"
    cp "$here/run_omp_gpu.sh" "$pack/run_omp_gpu.sh"
    chmod 0755 "$pack/run_omp_gpu.sh" "$pack"/bin/*
    cat >"$pack/commands.txt" <<'EOF'
# name  command (run from the pack directory; run_omp_gpu.sh sets OMP_TARGET_OFFLOAD=MANDATORY)
smoke_nvptx             LIBOMPTARGET_INFO=1 ./bin/offload_smoke_nvptx
smoke_nvptx_old_plugin  LIBOMPTARGET_NEXTGEN_PLUGINS=0 ./bin/offload_smoke_nvptx
smoke_host_offload      ./bin/offload_smoke_host
EOF
    echo "pack: $pack (run ./run_omp_gpu.sh there)"
fi
echo "check_bundle_here: all checks passed"
