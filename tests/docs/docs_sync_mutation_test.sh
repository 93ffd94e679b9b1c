#!/usr/bin/env bash
# Tests the test: docs_sync_test.sh must pass on the manual as it is, and fail, naming the
# culprit, on copies of the manual, the header and the sources with one thing broken each.
# usage: docs_sync_mutation_test.sh <docs_sync_test.sh> --header H --library SO --api MD
#                                   --hook MD --configuration MD [FILE...]
set -uo pipefail
[ $# -ge 11 ] || { echo "usage: $0 <docs_sync_test.sh> <its arguments>" >&2; exit 2; }
checker=$1
shift
header="" library="" api="" hook="" configuration=""
rest=()
while [ $# -gt 0 ]; do
    case "$1" in
    --header) header=$2; shift 2 ;;
    --library) library=$2; shift 2 ;;
    --api) api=$2; shift 2 ;;
    --hook) hook=$2; shift 2 ;;
    --configuration) configuration=$2; shift 2 ;;
    *) rest+=("$1"); shift ;;
    esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
passed=0

# A fresh copy of everything under $tmp/case: the pages and the header under their own names,
# the plugin sources under plugin/ (so the checker's plugin/*.c filter still applies).
fresh() {
    rm -rf "$tmp/case"
    mkdir -p "$tmp/case/docs" "$tmp/case/include" "$tmp/case/plugin"
    cp "$header" "$tmp/case/include/ompbatch.h"
    cp "$api" "$tmp/case/docs/api.md"
    cp "$hook" "$tmp/case/docs/hook.md"
    cp "$configuration" "$tmp/case/docs/configuration.md"
    sources=()
    for f in "${rest[@]}"; do
        case "$f" in
        *.c) cp "$f" "$tmp/case/plugin/" && sources+=("$tmp/case/plugin/$(basename "$f")") ;;
        esac
    done
    chmod -R u+w "$tmp/case"
}

run_checker() {
    bash "$checker" --header "$tmp/case/include/ompbatch.h" --library "$library" \
        --api "$tmp/case/docs/api.md" --hook "$tmp/case/docs/hook.md" \
        --configuration "$tmp/case/docs/configuration.md" "${sources[@]}" >"$tmp/out" 2>&1
}

# expect_failure <name> <text the failure must contain>: the checker, run on the mutated copy,
# must exit 1 and name the culprit.
expect_failure() {
    local name=$1 want=$2
    run_checker
    local rc=$?
    if [ $rc -ne 1 ]; then
        echo "FAIL: mutation '$name': docs_sync_test exited $rc, want 1" >&2
        sed 's/^/    /' "$tmp/out" >&2
        failures=$((failures + 1))
    elif ! grep -qF -- "$want" "$tmp/out"; then
        echo "FAIL: mutation '$name': the failure does not mention '$want':" >&2
        sed 's/^/    /' "$tmp/out" >&2
        failures=$((failures + 1))
    else
        passed=$((passed + 1))
        echo "ok: $name -> $(grep -F -- "$want" "$tmp/out" | head -1)"
    fi
}

# gone <word> <file>: guards a mutation that deletes lines: the word must have left the file.
gone() {
    if grep -qw -- "$1" "$2"; then
        echo "FAIL: the mutation did not remove '$1' from $2" >&2
        failures=$((failures + 1))
    fi
}

fresh
if run_checker; then
    passed=$((passed + 1))
    echo "ok: the unmutated copies pass"
else
    echo "FAIL: docs_sync_test fails on the unmutated copies:" >&2
    sed 's/^/    /' "$tmp/out" >&2
    exit 1
fi

fresh
sed -i -e '/^### `ompbatch_batch_wait`/d' -e '/^int ompbatch_batch_wait(/d' "$tmp/case/docs/api.md"
expect_failure "a function's section removed from api.md" \
    "function ompbatch_batch_wait ("

fresh
echo 'Call `ompbatch_batch_flush(batch)` first.' >>"$tmp/case/docs/api.md"
expect_failure "a function api.md names that the header lacks" \
    "names function ompbatch_batch_flush, which"

fresh
echo 'The options are an `ompbatch_batch_settings`.' >>"$tmp/case/docs/hook.md"
expect_failure "an identifier a page names that the header lacks" \
    "names ompbatch_batch_settings, which is not in"

fresh
sed -i 's/^OMPBATCH_API int ompbatch_batch_wait(/\n&/' "$tmp/case/include/ompbatch.h"
expect_failure "a blank line between a declaration and its comment" \
    "ompbatch_batch_wait: no doc comment directly above"

fresh
# Drop the "Threads:" line(s) of the comment right above ompbatch_batch_reset.
awk '{ buf[NR] = $0 }
     /^OMPBATCH_API int ompbatch_batch_reset\(/ { target = NR }
     END {
         for (i = target - 1; i > 0 && buf[i] !~ /^\/\*/; i--)
             if (buf[i] ~ /Threads:/) { skip[i] = 1; if (buf[i + 1] ~ /^ \*   /) skip[i + 1] = 1 }
         for (i = 1; i <= NR; i++) if (!skip[i]) print buf[i]
     }' "$tmp/case/include/ompbatch.h" >"$tmp/header" && mv "$tmp/header" "$tmp/case/include/ompbatch.h"
expect_failure "a doc comment without its Threads: part" \
    "ompbatch_batch_reset: its doc comment"

fresh
sed -i 's/^#define OMPBATCH_HOST_DEVICE (-1)$/&\n#define OMPBATCH_MAP_EXTRA 0x4000ULL/' \
    "$tmp/case/include/ompbatch.h"
expect_failure "a new macro in the header, not in api.md" "macro OMPBATCH_MAP_EXTRA"

# Not every macro needs documenting: the include guard and the helpers ending in '_' do not.
fresh
sed -i 's/^#define OMPBATCH_HOST_DEVICE (-1)$/&\n#define OMPBATCH_PASTE_(a, b) a##b/' \
    "$tmp/case/include/ompbatch.h"
grep -q '^#define OMPBATCH_PASTE_' "$tmp/case/include/ompbatch.h" || {
    echo "FAIL: could not add a helper macro to the header copy" >&2
    failures=$((failures + 1))
}
if run_checker; then
    passed=$((passed + 1))
    echo "ok: a helper macro ending in '_' and the include guard need no documentation"
else
    echo "FAIL: docs_sync_test wants a helper macro documented:" >&2
    sed 's/^/    /' "$tmp/out" >&2
    failures=$((failures + 1))
fi

fresh
sed -i '/OMPBATCH_MAP_CLOSE/d' "$tmp/case/docs/api.md"
gone OMPBATCH_MAP_CLOSE "$tmp/case/docs/api.md"
expect_failure "a macro no longer mentioned in api.md" "macro OMPBATCH_MAP_CLOSE"

fresh
sed -i '/OMPBATCH_PATH_STAGED/d' "$tmp/case/docs/api.md"
gone OMPBATCH_PATH_STAGED "$tmp/case/docs/api.md"
expect_failure "an enumerator no longer mentioned in api.md" "constant OMPBATCH_PATH_STAGED"

fresh
sed -i '/OMPBATCH_ERR_NOT_MAPPED/d' "$tmp/case/docs/api.md"
gone OMPBATCH_ERR_NOT_MAPPED "$tmp/case/docs/api.md"
expect_failure "a status code no longer mentioned in api.md" "constant OMPBATCH_ERR_NOT_MAPPED"

fresh
sed -i '/__tgt_register_lib/d' "$tmp/case/docs/api.md" "$tmp/case/docs/hook.md"
gone __tgt_register_lib "$tmp/case/docs/hook.md"
expect_failure "an exported symbol documented nowhere" "symbol __tgt_register_lib, exported by"

fresh
sed -i '/^## `OMPBATCH_NVTX`/d' "$tmp/case/docs/configuration.md"
expect_failure "a variable's heading removed from configuration.md" \
    "variable OMPBATCH_NVTX is read by the library (plugin/*.c) but has no heading"

fresh
printf '\n## `OMPBATCH_TURBO`\n\nMakes everything faster.\n' >>"$tmp/case/docs/configuration.md"
expect_failure "a heading for a variable the library does not read" \
    "variable OMPBATCH_TURBO has a heading in"

fresh
sed -i '/^| \[`OMPBATCH_STATS`\]/d' "$tmp/case/docs/configuration.md"
expect_failure "a variable's row removed from configuration.md's summary table" \
    "variable OMPBATCH_STATS has a heading in"

fresh
if [ ! -f "$tmp/case/plugin/config.c" ]; then
    echo "FAIL: plugin/config.c is not among the sources" >&2
    failures=$((failures + 1))
else
    # A helper of any name: every call in config.c with an "OMPBATCH_*" first argument counts.
    echo 'static int knob(void) { return parse_flag("OMPBATCH_NEW_SWITCH", 0); }' \
        >>"$tmp/case/plugin/config.c"
    expect_failure "a variable read through a new helper of config.c" \
        "variable OMPBATCH_NEW_SWITCH is read by the library"
fi

fresh
echo 'static const char *knob(void) { return getenv("OMPBATCH_ELSEWHERE"); }' \
    >>"$tmp/case/plugin/nvtx.c"
expect_failure "a variable read with getenv in another file" \
    "variable OMPBATCH_ELSEWHERE is read by the library"

fresh
echo 'static const char *other(void) { return getenv("CUDA_MODULE_LOADING"); }' \
    >>"$tmp/case/plugin/driver.c"
expect_failure "another variable read with getenv, not mentioned" \
    "variable CUDA_MODULE_LOADING is read by the library (getenv in plugin/*.c) but not mentioned"

if [ $failures -gt 0 ]; then
    echo "docs_sync_mutation_test: $failures of $((passed + failures)) cases failed" >&2
    exit 1
fi
echo "docs_sync_mutation_test: $passed cases: the manual passes as it is, and each mutation" \
    "fails naming its culprit"
