#!/usr/bin/env bash
# The shared library's interface: its dynamic symbols must be exactly the public API (the
# OMPBATCH_API functions of ompbatch.h) and the hook's entry points (OB_HOOK_EXPORT in
# omp_hook.c), and its soname must carry the header's major version.
# usage: symbols_test.sh <libompbatch.so> <ompbatch.h> <omp_hook.c> <BUILD.bazel>
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 <libompbatch.so> <ompbatch.h> <omp_hook.c> <BUILD.bazel>" >&2; exit 2; }
lib=$1 header=$2 hook=$3 build=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Declarations may wrap: join each OMPBATCH_API declaration up to its '(' and take the name.
sed -n '/^OMPBATCH_API /{s/(.*//;s/.*[ *]//;p}' "$header" >"$tmp/api"
sed -n '/^OB_HOOK_EXPORT /{s/(.*//;s/.*[ *]//;p}' "$hook" >"$tmp/hook"
sort -u "$tmp/api" "$tmp/hook" >"$tmp/expected"
[ "$(wc -l <"$tmp/api")" -ge 10 ] || { echo "FAIL: found only $(wc -l <"$tmp/api") OMPBATCH_API functions in $header" >&2; exit 1; }
[ "$(wc -l <"$tmp/hook")" -ge 5 ] || { echo "FAIL: found only $(wc -l <"$tmp/hook") hook entry points in $hook" >&2; exit 1; }

nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u >"$tmp/exported"
if ! diff -u "$tmp/expected" "$tmp/exported" >"$tmp/diff"; then
    echo "FAIL: $lib exports a different set than the header and the hook declare" >&2
    echo "  (- declared but not exported, + exported but not declared)" >&2
    sed -n '3,$p' "$tmp/diff" | grep '^[-+]' >&2
    fail=1
fi

major=$(sed -n 's/^#define OMPBATCH_VERSION_MAJOR \([0-9]*\)$/\1/p' "$header")
minor=$(sed -n 's/^#define OMPBATCH_VERSION_MINOR \([0-9]*\)$/\1/p' "$header")
patch=$(sed -n 's/^#define OMPBATCH_VERSION_PATCH \([0-9]*\)$/\1/p' "$header")
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "libompbatch.so.$major" ]; then
    echo "FAIL: soname '$soname', want libompbatch.so.$major (OMPBATCH_VERSION_MAJOR)" >&2
    fail=1
fi
build_version=$(sed -n 's/^OMPBATCH_VERSION = "\(.*\)"$/\1/p' "$build")
if [ "$build_version" != "$major.$minor.$patch" ]; then
    echo "FAIL: BUILD.bazel's OMPBATCH_VERSION '$build_version', the header's $major.$minor.$patch" >&2
    fail=1
fi
[ $fail = 0 ] && echo "symbols: $(wc -l <"$tmp/exported") exported, as declared; soname $soname; version $build_version"
exit $fail
