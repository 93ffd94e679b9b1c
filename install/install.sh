#!/usr/bin/env bash
# Installs ompbatch into a prefix (what `./run install [--prefix P]` runs, through
# `bazel run -c opt //install`; Bazel passes the built files' paths):
#
#   <prefix>/include/ompbatch.h
#   <prefix>/lib/libompbatch.so.X.Y.Z, libompbatch.so.X -> it, libompbatch.so -> libompbatch.so.X
#   <prefix>/lib/libompbatch.a
#   <prefix>/lib/pkgconfig/ompbatch.pc                         (C, C++, Make)
#   <prefix>/lib/cmake/ompbatch/ompbatch-config.cmake          (find_package(ompbatch))
#   <prefix>/lib/cmake/ompbatch/ompbatch-config-version.cmake
#   with --fortran-*: <prefix>/include/ompbatch.mod, <prefix>/lib/libompbatch_fortran.a,
#   <prefix>/lib/pkgconfig/ompbatch-fortran.pc, <prefix>/share/ompbatch/fortran/ompbatch.f90
#   with --doc: <prefix>/share/doc/ompbatch/<file's relative path> (README.md, docs/api.md)
#
# usage: install.sh --so F --static F --header F [--fortran-lib F --fortran-mod F
#                   --fortran-src F] [--doc F]... [--prefix DIR] [--destdir DIR]
#   --prefix   where the files go and what pkg-config reports (default /usr/local)
#   --destdir  stage under DIR/<prefix> instead (packagers), paths inside still say <prefix>
set -euo pipefail

die() {
    echo "install: $*" >&2
    exit 1
}

prefix=/usr/local destdir="" so="" static="" header="" f_lib="" f_mod="" f_src=""
docs=()
while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
    --so) so=$2; shift 2 ;;
    --static) static=$2; shift 2 ;;
    --header) header=$2; shift 2 ;;
    --fortran-lib) f_lib=$2; shift 2 ;;
    --fortran-mod) f_mod=$2; shift 2 ;;
    --fortran-src) f_src=$2; shift 2 ;;
    --doc) docs+=("$2"); shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[ -f "$so" ] && [ -f "$static" ] && [ -f "$header" ] || die "--so, --static and --header must name the built files"
case "$prefix" in
/*) ;;
*) die "--prefix must be an absolute path, not '$prefix'" ;;
esac
prefix=${prefix%/}
[ -n "$prefix" ] || prefix=/
fortran=0
if [ -n "$f_lib$f_mod$f_src" ]; then
    [ -f "$f_lib" ] && [ -f "$f_mod" ] && [ -f "$f_src" ] ||
        die "--fortran-lib, --fortran-mod and --fortran-src go together"
    fortran=1
fi

version_part() { sed -n "s/^#define OMPBATCH_VERSION_$1 \([0-9]*\)\$/\1/p" "$header"; }
major=$(version_part MAJOR) minor=$(version_part MINOR) patch=$(version_part PATCH)
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || die "no OMPBATCH_VERSION_* in $header"
version=$major.$minor.$patch
soname=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libompbatch.so.$major" ] ||
    die "$so has soname '$soname', the header says version $version (want libompbatch.so.$major)"

root=$destdir$prefix
lib=$root/lib include=$root/include
mkdir -p "$lib/pkgconfig" "$lib/cmake/ompbatch" "$include"
install -m 0644 "$header" "$include/ompbatch.h"
install -m 0755 "$so" "$lib/libompbatch.so.$version"
ln -sfn "libompbatch.so.$version" "$lib/libompbatch.so.$major"
ln -sfn "libompbatch.so.$major" "$lib/libompbatch.so"
install -m 0644 "$static" "$lib/libompbatch.a"

# Libs.private: what the static library needs besides (the shared one records it itself).
cat >"$lib/pkgconfig/ompbatch.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: ompbatch
Description: Batched host/device data movement for OpenMP offload programs on NVIDIA GPUs
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lompbatch
Libs.private: -ldl -pthread
PC

# The CMake package finds its files relative to itself, so a moved prefix still works.
cat >"$lib/cmake/ompbatch/ompbatch-config.cmake" <<'CMAKE'
# ompbatch CMake package: find_package(ompbatch [version]) gives the imported targets
#   ompbatch::ompbatch          the shared library (libompbatch.so)
#   ompbatch::ompbatch_static   the static library (libompbatch.a, with -ldl and threads)
#   ompbatch::fortran           the Fortran module (ompbatch.mod) and its library, when installed
# and ompbatch_VERSION. Linking either C target ahead of the OpenMP runtime also installs the
# link-in hook into an offload program (see docs/hook.md).
get_filename_component(_ompbatch_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
include(CMakeFindDependencyMacro)
find_dependency(Threads)

if(NOT TARGET ompbatch::ompbatch)
  add_library(ompbatch::ompbatch SHARED IMPORTED)
  set_target_properties(ompbatch::ompbatch PROPERTIES
    IMPORTED_LOCATION "${_ompbatch_prefix}/lib/libompbatch.so.@VERSION@"
    IMPORTED_SONAME "libompbatch.so.@MAJOR@"
    INTERFACE_INCLUDE_DIRECTORIES "${_ompbatch_prefix}/include")
endif()
if(NOT TARGET ompbatch::ompbatch_static)
  add_library(ompbatch::ompbatch_static STATIC IMPORTED)
  set_target_properties(ompbatch::ompbatch_static PROPERTIES
    IMPORTED_LOCATION "${_ompbatch_prefix}/lib/libompbatch.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "${_ompbatch_prefix}/include"
    INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS};Threads::Threads")
endif()
if(NOT TARGET ompbatch::fortran AND EXISTS "${_ompbatch_prefix}/lib/libompbatch_fortran.a")
  add_library(ompbatch::fortran STATIC IMPORTED)
  set_target_properties(ompbatch::fortran PROPERTIES
    IMPORTED_LOCATION "${_ompbatch_prefix}/lib/libompbatch_fortran.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "Fortran"
    INTERFACE_INCLUDE_DIRECTORIES "${_ompbatch_prefix}/include"
    INTERFACE_LINK_LIBRARIES "ompbatch::ompbatch")
endif()
set(ompbatch_VERSION "@VERSION@")
unset(_ompbatch_prefix)
CMAKE
sed -i -e "s/@VERSION@/$version/g" -e "s/@MAJOR@/$major/g" "$lib/cmake/ompbatch/ompbatch-config.cmake"

# Same major and at least the version asked for: 0.x releases may change the interface, so
# there a request is met by the same minor only.
cat >"$lib/cmake/ompbatch/ompbatch-config-version.cmake" <<CMAKE
set(PACKAGE_VERSION "$version")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(PACKAGE_FIND_VERSION_MAJOR EQUAL $major AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  if($major GREATER 0 OR PACKAGE_FIND_VERSION_MINOR EQUAL $minor OR "\${PACKAGE_FIND_VERSION_COUNT}" LESS 2)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
endif()
if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
if(NOT CMAKE_SIZEOF_VOID_P EQUAL 8)
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE

if [ $fortran = 1 ]; then
    install -m 0644 "$f_mod" "$include/ompbatch.mod"
    install -m 0644 "$f_lib" "$lib/libompbatch_fortran.a"
    mkdir -p "$root/share/ompbatch/fortran"
    install -m 0644 "$f_src" "$root/share/ompbatch/fortran/ompbatch.f90"
    cat >"$lib/pkgconfig/ompbatch-fortran.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: ompbatch-fortran
Description: Fortran module for ompbatch (ompbatch.mod, built with gfortran)
Version: $version
Requires: ompbatch = $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lompbatch_fortran
PC
fi
# A document keeps its path in the source tree (README.md, docs/api.md), so that two of the
# same name stay apart and the links between them still resolve; one named by an absolute or
# climbing path goes in by its name alone.
if [ ${#docs[@]} -gt 0 ]; then
    for d in "${docs[@]}"; do
        case "$d" in
        /* | ../* | */../*) rel=$(basename "$d") ;;
        *) rel=${d#./} ;;
        esac
        mkdir -p "$(dirname "$root/share/doc/ompbatch/$rel")"
        install -m 0644 "$d" "$root/share/doc/ompbatch/$rel"
    done
fi
echo "install: ompbatch $version installed into ${destdir:+$destdir (staged for) }$prefix" \
    "($( [ $fortran = 1 ] && echo "with" || echo "without") the Fortran module)"
