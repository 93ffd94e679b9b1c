#!/usr/bin/env bash
# Rebuilds the small LLVM 19 OpenMP runtime bundle from the original one:
#   - lib/libz3.so.4 (23 MB) -> a stub with the same soname defining every Z3_* function the
#     real one exports (each aborts with a message if ever called; gen_z3_stub.sh, z3_stub.c);
#     libLLVM needs Z3 only for the static analyzer's SMT solver, never on libomptarget's path;
#   - lib/libicudata.so.72.1 (31 MB) -> a stub with the same soname defining icudt72_dat as a
#     valid but empty ICU data package (icudata_stub.c); libicuuc is only there for libxml2,
#     which libLLVM uses only for Windows manifests;
#   - everything else (libLLVM, libomptarget, libomp, the JIT-init library, bin/ptxas, the other
#     libraries and every symlink) unchanged; OMP_RUNTIME_MANIFEST gets the stubs' sizes and sums;
#   - repacked with xz's x86 BCJ filter and LZMA2 preset 9e (a plain .tar.xz; `tar xJf` unpacks it).
# Checks before packing: the stubs cover every symbol the original libraries are asked for,
# ldd finds every dependency inside the bundle, and libomptarget/libLLVM load with eager binding.
#
# usage: build_small_bundle.sh ORIGINAL.tar.xz SMALL.tar.xz
#   ORIGINAL: omp_runtime_bundle_llvm19.tar.xz (bazel build //tests/omp_gpu:omp_runtime_bundle_llvm19)
# environment: XZ_OPTS (default "--x86 --lzma2=preset=9e,dict=192MiB"), LIMIT (default 47000000
# bytes: fails if the result is larger), KEEP=1 keeps the unpacked small bundle (path printed).
# Takes about 4 minutes on one core (xz).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 2 ] || { echo "usage: $0 ORIGINAL.tar.xz SMALL.tar.xz" >&2; exit 2; }
orig=$1
out=$2
XZ_OPTS=${XZ_OPTS:---x86 --lzma2=preset=9e,dict=192MiB}
LIMIT=${LIMIT:-47000000}
die() { echo "build_small_bundle: $*" >&2; exit 1; }
for t in gcc nm readelf ldd tar xz sha256sum python3; do
    command -v "$t" >/dev/null || die "needs $t"
done
[ -f "$orig" ] || die "no original bundle at $orig"
case "$out" in /*) ;; *) out=$PWD/$out ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/small_bundle.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
b=$work/bundle
mkdir -p "$b" "$work/build"
tar -xJf "$orig" -C "$b"
lib=$b/lib
for f in libz3.so.4 libicudata.so.72.1 libicuuc.so.72.1 libLLVM.so.19.1 libomptarget.so.19.1 \
    libnvptx_jit_init.so; do
    [ -f "$lib/$f" ] && [ ! -L "$lib/$f" ] || die "the original bundle has no file lib/$f"
done
[ "$(readlink "$lib/libicudata.so.72")" = libicudata.so.72.1 ] || die "lib/libicudata.so.72 is not a link to libicudata.so.72.1"
soname() { readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'; }

# ---- Z3: what the real library exports and what the bundle imports from it ----
nm -D --defined-only "$lib/libz3.so.4" | awk '$2 == "T" && $3 ~ /^Z3_/ { print $3 }' | sort -u \
    >"$work/z3_exports.txt"
if nm -D --defined-only "$lib/libz3.so.4" | awk '$3 ~ /^Z3_/ && $2 != "T"' | grep -q .; then
    die "libz3 exports Z3_* symbols that are not functions; the stub does not cover data"
fi
cmp -s "$work/z3_exports.txt" "$here/z3_exports.txt" ||
    echo "build_small_bundle: note: this libz3 exports a different Z3_* set than z3_exports.txt; stub generated from it"
"$here/gen_z3_stub.sh" "$work/z3_exports.txt" >"$work/z3_stub.c"
importers=()
for f in "$lib"/* "$b"/bin/*; do
    [ -L "$f" ] && continue
    [ "$(basename "$f")" = libz3.so.4 ] && continue
    readelf -d "$f" 2>/dev/null | grep -q 'NEEDED.*\[libz3.so.4\]' && importers+=("$f")
done
for f in ${importers[@]+"${importers[@]}"}; do
    missing=$(nm -D --undefined-only "$f" | awk '{ print $NF }' | sed 's/@.*//' | grep '^Z3_' | sort -u |
        comm -23 - "$work/z3_exports.txt")
    [ -z "$missing" ] || die "$(basename "$f") imports Z3 symbols the real libz3 lacks: $missing"
    echo "build_small_bundle: $(basename "$f") imports $(nm -D --undefined-only "$f" | grep -c ' Z3_') Z3_* functions; the stub defines all $(wc -l <"$work/z3_exports.txt") the real libz3 exports"
done

# ---- ICU data: one object, asked for by libicuuc ----
icu_sym=$(nm -D --defined-only "$lib/libicudata.so.72.1" | awk '$3 ~ /^icudt[0-9]+_dat$/ { print $3 }')
[ "$icu_sym" = icudt72_dat ] || die "libicudata defines '$icu_sym', the stub defines icudt72_dat"
others=$(nm -D --defined-only "$lib/libicudata.so.72.1" | awk '$3 != "icudt72_dat"')
[ -z "$others" ] || die "libicudata exports more than icudt72_dat: $others"

# ---- build the stubs ----
cflags=(-std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -Wl,-z,now -Wl,--build-id=none)
gcc "${cflags[@]}" -Wl,-soname,libz3.so.4 -o "$work/build/libz3.so.4" "$work/z3_stub.c"
gcc "${cflags[@]}" -nostdlib -Wl,-soname,libicudata.so.72 -o "$work/build/libicudata.so.72.1" \
    "$here/icudata_stub.c"
[ "$(soname "$work/build/libz3.so.4")" = "$(soname "$lib/libz3.so.4")" ] || die "libz3 stub soname"
[ "$(soname "$work/build/libicudata.so.72.1")" = "$(soname "$lib/libicudata.so.72.1")" ] || die "icudata stub soname"
nm -D --defined-only "$work/build/libz3.so.4" | awk '$3 ~ /^Z3_/ { print $3 }' | sort -u |
    cmp -s - "$work/z3_exports.txt" || die "the libz3 stub does not export exactly the real Z3_* set"
nm -D --defined-only "$work/build/libicudata.so.72.1" | grep -q ' R icudt72_dat$' ||
    die "the icudata stub does not export icudt72_dat"
declare -A old_size=()
for f in libz3.so.4 libicudata.so.72.1; do
    old_size[$f]=$(stat -c %s "$lib/$f")
    install -m 0644 "$work/build/$f" "$lib/$f"
done

# ---- checks on the unpacked small bundle ----
problems=0
for f in "$lib"/* "$b"/bin/*; do
    [ -L "$f" ] && { [ -e "$f" ] || { echo "dangling link $f" >&2; problems=1; }; continue; }
    if env -i LD_LIBRARY_PATH="$lib" /usr/bin/ldd "$f" 2>&1 | grep -q 'not found'; then
        echo "$(basename "$f"): $(env -i LD_LIBRARY_PATH="$lib" /usr/bin/ldd "$f" | grep 'not found')" >&2
        problems=1
    fi
    # every bundled library ldd reports must come from lib/ (the base C runtime excepted)
    while read -r name path; do
        if [ -e "$lib/$name" ] && [ "$path" != "$lib/$name" ]; then
            echo "$(basename "$f"): $name from $path, not from the bundle" >&2
            problems=1
        fi
    done < <(env -i LD_LIBRARY_PATH="$lib" /usr/bin/ldd "$f" 2>/dev/null | awk '/=> \// { print $1, $3 }')
done
[ "$problems" = 0 ] || die "ldd: unresolved dependencies (above)"
env -i LD_LIBRARY_PATH="$lib" LD_BIND_NOW=1 python3 -c '
import ctypes, sys
lib = sys.argv[1]
for name in ("libLLVM.so.19.1", "libomptarget.so.19.1", "libnvptx_jit_init.so", "libxml2.so.2"):
    ctypes.CDLL(lib + "/" + name, mode=ctypes.RTLD_GLOBAL | 2)  # RTLD_NOW
print("build_small_bundle: libLLVM, libomptarget, libnvptx_jit_init, libxml2 load with RTLD_NOW + LD_BIND_NOW=1")
' "$lib" || die "the runtime does not load with eager binding"

# ---- manifest: the stubs' lines ----
python3 - "$b/OMP_RUNTIME_MANIFEST" "$lib" "${old_size[libz3.so.4]}" "${old_size[libicudata.so.72.1]}" <<'EOF'
import hashlib, os, re, sys
path, lib, z3_old, icu_old = sys.argv[1:]
what = {
    "libz3.so.4": "stub: every Z3_* function aborts; real libz3 (libz3-4, %s bytes) dropped, "
                  "libLLVM uses Z3 only for the static analyzer" % z3_old,
    "libicudata.so.72.1": "stub: icudt72_dat is an empty ICU data package; real ICU data (libicu72, "
                          "%s bytes) dropped, only libxml2's ICU converters could want it" % icu_old,
}
lines = open(path).read().split("\n")
for i, line in enumerate(lines):
    m = re.match(r"lib/(\S+)  \d+ bytes  sha256 [0-9a-f]+  from ", line)
    if m and m.group(1) in what:
        f = os.path.join(lib, m.group(1))
        sha = hashlib.sha256(open(f, "rb").read()).hexdigest()
        lines[i] = "lib/%s  %d bytes  sha256 %s  from tests/omp_gpu/small_bundle (%s)" % (
            m.group(1), os.path.getsize(f), sha, what.pop(m.group(1)))
if what:
    sys.exit("manifest has no line for " + ", ".join(what))
open(path, "w").write("\n".join(lines))
EOF

# ---- pack ----
tmp_out=$out.tmp.$$
# shellcheck disable=SC2086
tar --format=gnu --sort=name --mtime=@0 --owner=root:0 --group=root:0 -C "$b" \
    -cf - OMP_RUNTIME_MANIFEST bin lib | xz $XZ_OPTS -T1 -c >"$tmp_out"
xz -t "$tmp_out"
mv -f "$tmp_out" "$out"
size=$(stat -c %s "$out")
echo "build_small_bundle: $out: $size bytes (original $(stat -c %s "$orig"))"
[ "${KEEP:-0}" = 1 ] && echo "build_small_bundle: unpacked small bundle kept in $b"
[ "$size" -le "$LIMIT" ] || die "$size bytes is over the limit of $LIMIT"
