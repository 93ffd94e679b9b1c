#!/usr/bin/env bash
# Installs ompbatch into a temporary prefix (install/install.sh with the files Bazel built, as
# `./run install` does) and consumes it the ways users do:
#   - the layout: libraries with soname links, header, pkg-config and CMake packages;
#   - --destdir stages under a directory while the packages still name the prefix;
#   - a Make project with plain cc + pkg-config (Makefile), linked against libompbatch.so;
#   - a CMake project with find_package(ompbatch 0.1), shared and static targets; versions it
#     must refuse (9.0, 0.2) are refused; the prefix still works after being moved;
#   - with the Fortran module: a Fortran program with gfortran + pkg-config ompbatch-fortran,
#     and through CMake's ompbatch::fortran.
# Each consumer copies random data through the library and checks every byte.
# usage: install_test.sh <install.args> <install.sh> <consumer dir file...>
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 <install.args> <install.sh> <consumer files...>" >&2; exit 2; }
args_file=$1 installer=$2
shift 2
work=${TEST_TMPDIR:-$(mktemp -d)}/install_test
rm -rf "$work"
mkdir -p "$work/src"
for f in "$@"; do cp -L "$f" "$work/src/"; done
mapfile -t lines <"$args_file"
built=()
for line in "${lines[@]}"; do
    # shellcheck disable=SC2206 # "--option path": split in two on purpose
    built+=($line)
done
fail=0
failed() { echo "FAIL: $*" >&2; fail=1; }
step() { echo "== $*"; }
export OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 # the host backend only, on any machine

step "install into $work/prefix"
prefix=$work/prefix
bash "$installer" "${built[@]}" --prefix "$prefix" || { echo "FAIL: install" >&2; exit 1; }
fortran=0
[ -f "$prefix/include/ompbatch.mod" ] && fortran=1
expected="include/ompbatch.h lib/libompbatch.a lib/libompbatch.so lib/libompbatch.so.0
lib/pkgconfig/ompbatch.pc lib/cmake/ompbatch/ompbatch-config.cmake
lib/cmake/ompbatch/ompbatch-config-version.cmake share/doc/ompbatch/README.md
share/doc/ompbatch/BENCHMARKS.md share/doc/ompbatch/docs/README.md
share/doc/ompbatch/docs/api.md share/doc/ompbatch/docs/install.md"
[ $fortran = 1 ] && expected="$expected include/ompbatch.mod lib/libompbatch_fortran.a
lib/pkgconfig/ompbatch-fortran.pc share/ompbatch/fortran/ompbatch.f90"
for f in $expected; do
    [ -e "$prefix/$f" ] || failed "$f was not installed"
done
# The project's README and the manual's index are both README.md: neither may replace the
# other, and the manual's links back to the README resolve.
grep -qx '# ompbatch' "$prefix/share/doc/ompbatch/README.md" ||
    failed "share/doc/ompbatch/README.md is not the project's README"
grep -qx '# ompbatch reference manual' "$prefix/share/doc/ompbatch/docs/README.md" ||
    failed "share/doc/ompbatch/docs/README.md is not the manual's index"
grep -q '](\.\./README\.md' "$prefix/share/doc/ompbatch/docs/README.md" ||
    failed "the manual's index no longer links ../README.md (this check's premise)"
real=$(readlink -f "$prefix/lib/libompbatch.so")
case "$real" in
"$prefix"/lib/libompbatch.so.0.*.*) ;;
*) failed "lib/libompbatch.so resolves to $real, not lib/libompbatch.so.0.X.Y" ;;
esac
soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libompbatch.so.0 ] || failed "the installed library's soname is '$soname'"

step "--destdir stages, the packages name the prefix"
bash "$installer" "${built[@]}" --prefix /opt/ompbatch --destdir "$work/stage" >/dev/null ||
    failed "install with --destdir"
grep -qx 'prefix=/opt/ompbatch' "$work/stage/opt/ompbatch/lib/pkgconfig/ompbatch.pc" ||
    failed "the staged ompbatch.pc does not say prefix=/opt/ompbatch"
[ -e "$work/stage/opt/ompbatch/include/ompbatch.h" ] &&
    [ -L "$work/stage/opt/ompbatch/lib/libompbatch.so.0" ] ||
    failed "--destdir did not stage the header and the libraries under DESTDIR/prefix"
if bash "$installer" "${built[@]}" --prefix relative/dir >/dev/null 2>"$work/relative.err"; then
    failed "a relative --prefix was accepted"
fi
grep -q "absolute path" "$work/relative.err" || failed "a relative --prefix was refused without saying why"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
step "pkg-config"
[ "$(pkg-config --modversion ompbatch)" = "$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/ompbatch.pc")" ] ||
    failed "pkg-config --modversion"
grep -qF -- "-I$prefix/include" <<<"$(pkg-config --cflags ompbatch)" || failed "pkg-config --cflags"
grep -qF -- "-ldl" <<<"$(pkg-config --static --libs ompbatch)" ||
    failed "pkg-config --static --libs lacks -ldl"

step "Make project: cc + pkg-config"
cp -r "$work/src" "$work/make"
if make -C "$work/make" consumer_make >"$work/make.log" 2>&1; then
    "$work/make/consumer_make" || failed "the Make consumer failed"
    # ldd's output is captured first: grep -q stops reading at its match, and under pipefail
    # the writer's SIGPIPE would fail the check.
    libs=$(ldd "$work/make/consumer_make")
    grep -qF "libompbatch.so.0 => $prefix/lib/libompbatch.so.0" <<<"$libs" ||
        failed "the Make consumer does not run with the installed libompbatch.so.0: $(grep ompbatch <<<"$libs")"
else
    cat "$work/make.log" >&2
    failed "the Make project did not build"
fi

cmake_configure() { # cmake_configure <build dir> <prefix path> [cmake args...]
    local build=$1 path=$2
    shift 2
    cmake -S "$work/src" -B "$build" -DCMAKE_PREFIX_PATH="$path" -DCMAKE_BUILD_TYPE=Release "$@" \
        >"$build.log" 2>&1
}

step "CMake project: find_package(ompbatch 0.1)"
cmake_args=()
[ $fortran = 1 ] && cmake_args+=(-DOMPBATCH_FORTRAN=ON)
if cmake_configure "$work/cmake" "$prefix" "${cmake_args[@]}" &&
    cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1; then
    "$work/cmake/consumer_cmake" || failed "the CMake consumer (ompbatch::ompbatch) failed"
    "$work/cmake/consumer_cmake_static" || failed "the CMake consumer (ompbatch::ompbatch_static) failed"
    libs=$(ldd "$work/cmake/consumer_cmake")
    grep -qF "libompbatch.so.0 => $prefix/lib/libompbatch.so.0" <<<"$libs" ||
        failed "the CMake consumer does not run with the installed libompbatch.so.0"
    libs=$(ldd "$work/cmake/consumer_cmake_static")
    grep -q ompbatch <<<"$libs" && failed "the static CMake consumer still needs libompbatch.so"
    if [ $fortran = 1 ]; then
        "$work/cmake/consumer_cmake_fortran" || failed "the CMake Fortran consumer (ompbatch::fortran) failed"
    fi
else
    cat "$work/cmake.log" >&2
    failed "the CMake project did not configure or build"
fi
for want in 9.0 0.2 1; do
    if cmake_configure "$work/cmake_want_$want" "$prefix" -DOMPBATCH_WANT="$want"; then
        failed "find_package(ompbatch $want) accepted version $(pkg-config --modversion ompbatch)"
    elif ! grep -q "ompbatch-config-version.cmake\|version: $(pkg-config --modversion ompbatch)" "$work/cmake_want_$want.log"; then
        failed "find_package(ompbatch $want) failed for another reason:"
        cat "$work/cmake_want_$want.log" >&2
    fi
done
cmake_configure "$work/cmake_want_0" "$prefix" -DOMPBATCH_WANT=0 ||
    failed "find_package(ompbatch 0) refused $(pkg-config --modversion ompbatch)"

step "the prefix moved: the CMake package follows"
mv "$prefix" "$work/moved"
if cmake_configure "$work/cmake_moved" "$work/moved" && cmake --build "$work/cmake_moved" >>"$work/cmake_moved.log" 2>&1; then
    "$work/cmake_moved/consumer_cmake_static" || failed "the consumer built against the moved prefix failed"
else
    cat "$work/cmake_moved.log" >&2
    failed "CMake could not use the moved prefix"
fi
mv "$work/moved" "$prefix"

if [ $fortran = 1 ]; then
    step "Fortran: gfortran + pkg-config ompbatch-fortran"
    cp -r "$work/src" "$work/fortran"
    # shellcheck disable=SC2046 # pkg-config's flags are words
    if (cd "$work/fortran" && gfortran -O2 -Wall -Werror $(pkg-config --cflags ompbatch-fortran) \
        -o consumer_fortran consumer.f90 $(pkg-config --libs ompbatch-fortran) \
        -Wl,-rpath,"$prefix/lib") >"$work/fortran.log" 2>&1; then
        "$work/fortran/consumer_fortran" || failed "the Fortran consumer failed"
    else
        cat "$work/fortran.log" >&2
        failed "the Fortran consumer did not build"
    fi
else
    echo "(no Fortran module installed: the Fortran consumers were not built)"
fi

[ $fail = 0 ] && echo "install test: passed (Fortran module: $([ $fortran = 1 ] && echo yes || echo no))"
exit $fail
