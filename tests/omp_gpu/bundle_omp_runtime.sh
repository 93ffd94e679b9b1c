#!/usr/bin/env bash
# Copies LLVM's OpenMP offload runtime (libomptarget 16 or 19) into OUTDIR/lib, for running nvptx
# (sm_90) offload programs built here (build_defs/omp.bzl, target "nvptx") on a GPU machine that
# has the NVIDIA driver (a plain libcuda.so) but no clang and no LLVM runtime.
#
# usage: tests/omp_gpu/bundle_omp_runtime.sh [--version 16|19] [--llvm DIR] [--jit-init LIB]
#                                            [--ptxas FILE] [--tar FILE.tar.xz] OUTDIR
#   OUTDIR        created if missing; its lib/, bin/ and OMP_RUNTIME_MANIFEST are replaced
#   --version N   the LLVM release (default 16)
#   --llvm DIR    its runtime's installation (default /usr/lib/llvm-16, or for 19 the private
#                 prefix ./run unpacks it into, /opt/ompbatch/llvm-19/usr/lib/llvm-19)
#   --jit-init L  19: the library that registers LLVM's NVPTX target for the runtime's JIT
#                 (nvptx_jit_init.c), copied into lib/
#   --ptxas FILE  19: the ptxas the JIT runs, copied into bin/ (default
#                 /usr/local/cuda/bin/ptxas)
#   --tar FILE    also write FILE, a reproducible xz tarball of OUTDIR's lib/, bin/ and
#                 OMP_RUNTIME_MANIFEST (paths relative to OUTDIR: unpack it into a pack directory)
#
# What goes in OUTDIR/lib:
#   - libomp.so.5 and libomptarget.so.16 or .so.19.1 (what the programs link against);
#   - 16: the plugins libomptarget dlopens: libomptarget.rtl.cuda.nextgen.so and
#     libomptarget.rtl.cuda.so (LLVM 16 tries <name>.nextgen.so first and falls back to <name>.so
#     when that plugin fails to initialise), libomptarget.rtl.x86_64{.nextgen,}.so (the host
#     plugin, loaded at start-up whatever the program's images are; it needs libffi), each as the
#     versioned file plus the unversioned name libomptarget asks dlopen for; 19 has its plugins
#     built in;
#   - libLLVM (which all of those link) and every further library ldd finds, except the
#     base C runtime the GPU machine brings in a newer version: libc, libm, libdl, libpthread,
#     librt, libmvec, libresolv, libutil, ld-linux, libgcc_s, libstdc++ (and never libcuda);
#   - each library under its real file name with a symlink per soname, as on the build machine.
# 19 only: the JIT-init library in lib/ and ptxas in bin/. LLVM 19's runtime rejects the cubins
# CUDA 13's ptxas writes, so its programs carry LLVM bitcode that the runtime compiles at start-up
# (-fopenmp-target-jit), running ptxas from PATH; Debian's libomptarget.so.19.1 does not register
# the NVPTX target that needs, which the preloaded JIT-init library does. On the GPU machine:
#   LD_LIBRARY_PATH=OUTDIR/lib PATH=OUTDIR/bin:$PATH LD_PRELOAD=OUTDIR/lib/libnvptx_jit_init.so
# Not bundled: the AMDGPU plugins (they need ROCm's libhsa-runtime64), libarcher.so and
# libmemkind.so (optional loads of libomp; a miss is silent), the device runtime
# libomptarget-nvptx-sm_90.bc (linked into the program at build time; not opened at run time).
#
# Then it checks, from a clean environment with LD_LIBRARY_PATH=OUTDIR/lib, that ldd resolves
# every dependency of every bundled file either inside OUTDIR/lib or to the base set, and writes
# OUTDIR/OMP_RUNTIME_MANIFEST: the files, their sizes, sha256 sums and Debian packages, and the
# highest GLIBC_ / GLIBCXX_ / CXXABI_ symbol versions they require. It fails when those exceed
# what the GPU machine (Ubuntu 24.04: glibc 2.39, GCC 14's libstdc++ = GLIBCXX_3.4.33,
# CXXABI_1.3.15) provides; override with MAX_GLIBC, MAX_GLIBCXX, MAX_CXXABI.
#
# On the GPU machine: LD_LIBRARY_PATH=OUTDIR/lib ./program  (run_omp_gpu.sh does this).
set -euo pipefail

die() {
    echo "bundle_omp_runtime: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
}

version=16
llvm=""
jit_init=""
ptxas=/usr/local/cuda/bin/ptxas
tarball=""
outdir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version=${2:?--version needs 16 or 19}; shift 2 ;;
        --llvm) llvm=${2:?--llvm needs a directory}; shift 2 ;;
        --jit-init) jit_init=${2:?--jit-init needs a library}; shift 2 ;;
        --ptxas) ptxas=${2:?--ptxas needs a file}; shift 2 ;;
        --tar) tarball=${2:?--tar needs a file name}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) [ -z "$outdir" ] || die "more than one OUTDIR"; outdir=$1; shift ;;
    esac
done
[ -n "$outdir" ] || { usage >&2; exit 2; }

MAX_GLIBC=${MAX_GLIBC:-2.39}
MAX_GLIBCXX=${MAX_GLIBCXX:-3.4.33}
MAX_CXXABI=${MAX_CXXABI:-1.3.15}

for tool in ldd readelf objdump sha256sum sort; do
    command -v "$tool" >/dev/null 2>&1 || die "needs '$tool' (binutils / libc-bin / coreutils)"
done
# Files of $llvm/lib the runtime is made of: name (as linked or as dlopen'ed) and whether the
# unversioned name is what libomptarget passes to dlopen.
case "$version" in
    16)
        llvm=${llvm:-/usr/lib/llvm-16}
        roots=(libomp.so.5 libomptarget.so.16)
        plugins=(
            libomptarget.rtl.cuda.nextgen.so
            libomptarget.rtl.cuda.so
            libomptarget.rtl.x86_64.nextgen.so
            libomptarget.rtl.x86_64.so
        )
        ;;
    19)
        llvm=${llvm:-/opt/ompbatch/llvm-19/usr/lib/llvm-19}
        roots=(libomp.so.5 libomptarget.so.19.1)
        plugins=()
        [ -n "$jit_init" ] && [ -f "$jit_init" ] || die "--version 19 needs --jit-init LIB"
        [ -x "$ptxas" ] || die "no ptxas at $ptxas (--ptxas FILE)"
        ;;
    *) die "--version must be 16 or 19, not '$version'" ;;
esac
[ -d "$llvm/lib" ] || die "no LLVM $version runtime at $llvm (./run test installs it)"

# Sonames the GPU machine provides itself (glibc, GCC's runtime) or that must come from its
# driver. Anything else ldd reports goes into the bundle.
is_base() {
    case "$1" in
        linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libdl.so.* | \
            libpthread.so.* | librt.so.* | libmvec.so.* | libresolv.so.* | libutil.so.* | \
            libgcc_s.so.* | libstdc++.so.*) return 0 ;;
        *) return 1 ;;
    esac
}
is_driver() {
    case "$1" in
        libcuda.so* | libnvidia*.so* | libnvcuvid.so* | libhsa-runtime64.so*) return 0 ;;
        *) return 1 ;;
    esac
}

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
lib=$outdir/lib
rm -rf "${lib:?}" "$outdir/bin" "$outdir/OMP_RUNTIME_MANIFEST"
mkdir -p "$lib"

soname_of() {
    readelf -d "$1" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'
}

# Copies the library at $1 (any path or link to it) into $lib under its real file name, and links
# its soname and the name it was asked for ($2, optional) to that file.
add_lib() {
    local path=$1 asked=${2:-}
    local real base soname
    real=$(readlink -f "$path") || die "cannot resolve $path"
    [ -f "$real" ] || die "$path: no such file"
    base=$(basename "$real")
    soname=$(soname_of "$real")
    is_driver "$base" && die "refusing to bundle driver library $real"
    if [ ! -e "$lib/$base" ]; then
        source_of[$base]=$real
        cp "$real" "$lib/$base"
        chmod 0644 "$lib/$base"
    fi
    local name
    for name in "$soname" "$(basename "$path")" "$asked"; do
        [ -n "$name" ] && [ "$name" != "$base" ] && [ ! -e "$lib/$name" ] &&
            ln -s "$base" "$lib/$name"
    done
    return 0
}

# The dependencies ldd finds for $1 on this machine, as "soname path" lines (path "not found"
# when missing).
deps_of() {
    ldd "$1" 2>&1 | awk '
        /=> not found/ { print $1, "not-found"; next }
        /=>/ { print $1, $3; next }
        /^[ \t]*\// { n = split($1, p, "/"); print p[n], $1 }'
}

declare -A source_of=()
queue=()
for r in "${roots[@]}"; do
    [ -e "$llvm/lib/$r" ] || die "$llvm/lib/$r is missing (libomp-$version-dev / libomp5-$version)"
    add_lib "$llvm/lib/$r"
    queue+=("$llvm/lib/$r")
done
for p in ${plugins[@]+"${plugins[@]}"}; do
    [ -e "$llvm/lib/$p" ] || die "$llvm/lib/$p is missing (install libomp-16-dev)"
    add_lib "$llvm/lib/$p" "$p"
    queue+=("$llvm/lib/$p")
done
if [ "$version" = 19 ]; then
    add_lib "$jit_init"
    queue+=("$jit_init")
    mkdir -p "$outdir/bin"
    cp "$(readlink -f "$ptxas")" "$outdir/bin/ptxas"
    chmod 0755 "$outdir/bin/ptxas"
fi

# ldd lists the transitive closure, so one pass over the roots finds everything.
for f in "${queue[@]}"; do
    while read -r name path; do
        is_base "$name" && continue
        is_driver "$name" && continue
        [ "$path" = not-found ] && die "$f needs $name, which ldd cannot find on this machine"
        add_lib "$path" "$name"
    done < <(deps_of "$f")
done

# ---- checks: every file resolves from the bundle or the base set, from a clean environment ----
problems=0
for f in "$lib"/*; do
    [ -L "$f" ] && { [ -e "$f" ] || { echo "dangling link $f" >&2; problems=1; }; continue; }
    while read -r name path; do
        if [ "$path" = not-found ]; then
            is_driver "$name" && continue
            echo "$(basename "$f"): $name not found" >&2
            problems=1
        elif ! is_base "$name" && [ "$(dirname "$path")" != "$lib" ]; then
            echo "$(basename "$f"): $name resolves outside the bundle ($path)" >&2
            problems=1
        fi
    done < <(env -i LD_LIBRARY_PATH="$lib" /bin/sh -c 'ldd "$1"' sh "$f" | awk '
        /=> not found/ { print $1, "not-found"; next }
        /=>/ { print $1, $3; next }
        /^[ \t]*\// { n = split($1, p, "/"); print p[n], $1 }')
done
[ "$problems" = 0 ] || die "the bundle in $lib is incomplete (above)"

# ---- symbol versions required of the base libraries ----
# "GLIBC_2.34" etc. from each file's version references (objdump -p), highest first.
max_version() { # prefix, files...
    local prefix=$1
    shift
    objdump -p "$@" 2>/dev/null | awk -v p="$prefix" '$NF ~ "^" p "_[0-9]" { print $NF }' |
        sed "s/^${prefix}_//" | sort -V -u | tail -n 1
}
version_gt() { # a > b ?
    [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1)" = "$1" ]
}
files=()
for f in "$lib"/*; do
    [ -L "$f" ] || files+=("$f")
done
glibc=$(max_version GLIBC "${files[@]}")
glibcxx=$(max_version GLIBCXX "${files[@]}")
cxxabi=$(max_version CXXABI "${files[@]}")
too_new=""
version_gt "${glibc:-0}" "$MAX_GLIBC" && too_new+=" GLIBC_$glibc>$MAX_GLIBC"
version_gt "${glibcxx:-0}" "$MAX_GLIBCXX" && too_new+=" GLIBCXX_$glibcxx>$MAX_GLIBCXX"
version_gt "${cxxabi:-0}" "$MAX_CXXABI" && too_new+=" CXXABI_$cxxabi>$MAX_CXXABI"

# ---- manifest ----
manifest=$outdir/OMP_RUNTIME_MANIFEST
{
    echo "LLVM $version OpenMP offload runtime for nvptx programs (tests/omp_gpu/bundle_omp_runtime.sh)"
    echo "source: $llvm ($(dpkg-query -W -f '${Package} ${Version}' "libomp5-$version" 2>/dev/null ||
        echo "libomp5-$version unpacked by ./run, not installed"))"
    if [ "$version" = 19 ]; then
        echo "use: LD_LIBRARY_PATH=<this dir>/lib PATH=<this dir>/bin:\$PATH LD_PRELOAD=<this dir>/lib/$(basename "$jit_init") ./program"
        echo "bin/ptxas  $(stat -c %s "$outdir/bin/ptxas") bytes  from $ptxas"
    else
        echo "use: LD_LIBRARY_PATH=<this dir>/lib ./program   (the GPU machine provides libcuda.so)"
    fi
    echo "needs of the base system: GLIBC_${glibc:-none} GLIBCXX_${glibcxx:-none} CXXABI_${cxxabi:-none}"
    echo
    for f in "$lib"/*; do
        name=$(basename "$f")
        if [ -L "$f" ]; then
            echo "lib/$name -> $(readlink "$f")"
        else
            src=${source_of[$name]}
            # Debian registers some files under /lib, others under /usr/lib (merged /usr).
            pkg=$({ dpkg -S "$src" || dpkg -S "${src#/usr}"; } 2>/dev/null | head -n 1 |
                cut -d: -f1 || true)
            printf 'lib/%s  %s bytes  sha256 %s  from %s (%s)\n' "$name" "$(stat -c %s "$f")" \
                "$(sha256sum "$f" | cut -d' ' -f1)" "$src" "${pkg:-package unknown}"
        fi
    done
} >"$manifest"

total=$(du -sb "$lib" | cut -f1)
echo "bundle_omp_runtime: $lib: $(ls "$lib" | wc -l) entries, $total bytes"
echo "bundle_omp_runtime: requires GLIBC_${glibc:-none} GLIBCXX_${glibcxx:-none} CXXABI_${cxxabi:-none}"
[ -z "$too_new" ] || die "the bundle needs newer base libraries than the GPU machine has:$too_new"

if [ -n "$tarball" ]; then
    case "$tarball" in /*) ;; *) tarball=$PWD/$tarball ;; esac
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$outdir" \
        -cf - lib $([ -d "$outdir/bin" ] && echo bin) OMP_RUNTIME_MANIFEST | xz -6 -T1 >"$tarball"
    echo "bundle_omp_runtime: $tarball: $(stat -c %s "$tarball") bytes"
fi
