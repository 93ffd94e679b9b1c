#!/usr/bin/env bash
# Keeps the reference manual (docs/) in step with the code. Fails, naming each thing missing or
# stale, when:
#   - a function declared OMPBATCH_API in the header is not documented in docs/api.md (a
#     heading naming it, or its signature in a code block), or lacks a doc comment directly
#     above its declaration with "Parameters:", "Returns:" and "Threads:";
#   - a page names an ompbatch_ function (`ompbatch_x(`) that the header does not declare, or
#     an ompbatch_ identifier the header does not have;
#   - an OMPBATCH_* variable the library reads (getenv, or the read_* helpers, in plugin/*.c;
#     every "OMPBATCH_*" argument of a call in config.c) has no heading in
#     docs/configuration.md, or a heading there names a variable the library does not read,
#     or the page's summary table and its headings name different variables;
#     another variable the library reads with getenv (NVTX_INJECTION64_PATH, ...) is not
#     mentioned there;
#   - a dynamic symbol of libompbatch.so (nm -D --defined-only) is in neither docs/api.md nor
#     docs/hook.md;
#   - a macro OMPBATCH_* defined in the header (not the include guard, not the helpers whose
#     names end in '_'), an enumerator, a status code or a type is not mentioned in
#     docs/api.md.
#
# usage: docs_sync_test.sh --header H --library SO --api MD --hook MD --configuration MD
#                          [FILE...]
#   FILE: *.md pages to scan for stale identifiers (api, hook and configuration are scanned
#   anyway) and the library's sources (only plugin/*.c are read; others are ignored).
set -uo pipefail
export LC_ALL=C # sort and comm must agree on the order

header="" library="" api="" hook="" configuration=""
pages=() sources=()
while [ $# -gt 0 ]; do
    case "$1" in
    --header) header=$2; shift 2 ;;
    --library) library=$2; shift 2 ;;
    --api) api=$2; shift 2 ;;
    --hook) hook=$2; shift 2 ;;
    --configuration) configuration=$2; shift 2 ;;
    --*) echo "usage: unknown option $1" >&2; exit 2 ;;
    *.md) pages+=("$1"); shift ;;
    *) case "$1" in
       plugin/*.c | */plugin/*.c)
           # plugin/*.c and plugin/<layer>/*.c: not the generated plugin/cuda/kernels/*.c
           case "${1##*plugin/}" in */*/*|*/kernels/*) ;; *) sources+=("$1") ;; esac ;;
       esac
       shift ;;
    esac
done
for f in "$header" "$library" "$api" "$hook" "$configuration"; do
    [ -n "$f" ] && [ -r "$f" ] || {
        echo "usage: $0 --header H --library SO --api MD --hook MD --configuration MD [FILE...]" >&2
        echo "  (cannot read '$f')" >&2
        exit 2
    }
done
pages=("$api" "$hook" "$configuration" "${pages[@]}")
command -v nm >/dev/null || { echo "FAIL: nm is not installed (binutils)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
# The identifiers (words of letters, digits and '_') of a file, one per line, sorted.
words() { grep -oE '[A-Za-z0-9_]+' "$1" | sort -u; }
# missing <wanted> <words>: the lines of sorted file $1 that are not in sorted file $2.
missing() { comm -23 "$1" "$2"; }

# ---- the header --------------------------------------------------------------------------

# Declarations may wrap: the name is the last word before the first '('.
sed -n '/^OMPBATCH_API /{s/(.*//;s/.*[ *]//;p}' "$header" | sort -u >"$tmp/functions"
n_functions=$(wc -l <"$tmp/functions")
[ "$n_functions" -ge 10 ] || { echo "FAIL: found only $n_functions OMPBATCH_API functions in $header" >&2; exit 1; }

# Every ompbatch_ identifier of the header (functions, types, struct and enum tags).
grep -oE '(^|[^A-Za-z0-9_])ompbatch_[A-Za-z0-9_]*[A-Za-z0-9]' "$header" |
    sed 's/^[^o]*//' | sort -u >"$tmp/identifiers"

# The doc comment directly above each declaration: the line before it must close a comment
# that starts at the beginning of a line, and that comment must have the three parts.
awk -v fail_file="$tmp/comment_failures" '
    /^\/\*/ && !in_comment { in_comment = 1; text = "" }
    in_comment { text = text "\n" $0 }
    in_comment && /\*\// { in_comment = 0; comment_end = NR; last = text; next }
    /^OMPBATCH_API / {
        name = $0
        sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
        if (comment_end != NR - 1) {
            print name ": no doc comment directly above its declaration (line " NR ")" >> fail_file
        } else {
            missing = ""
            if (last !~ /Parameters:/) missing = missing " Parameters:"
            if (last !~ /Returns:/) missing = missing " Returns:"
            if (last !~ /Threads:/) missing = missing " Threads:"
            if (missing != "")
                print name ": its doc comment (line " NR ") lacks" missing >> fail_file
        }
    }
' "$header"
if [ -s "$tmp/comment_failures" ]; then
    while IFS= read -r line; do
        fail "$header: $line"
    done <"$tmp/comment_failures"
fi

# ---- docs/api.md: every function, and nothing stale -----------------------------------------

# Documented: a heading that names the function, or a declaration in a code block (a line
# starting with a return type and the name: `int ompbatch_batch_wait(...`).
awk '
    /^```/ { fence = !fence; next }
    !fence && /^#/ { print; next }
    fence && /^(OMPBATCH_API +)?(const +)?[A-Za-z_][A-Za-z0-9_]* +\**ompbatch_[a-z0-9_]+\(/ { print }
' "$api" | grep -oE 'ompbatch_[a-z0-9_]+' | sort -u >"$tmp/api_documented"
while IFS= read -r fn; do
    fail "function $fn ($header) is not documented in $api: add a heading naming it or its declaration in a code block"
done < <(missing "$tmp/functions" "$tmp/api_documented")

sort -u "$tmp/identifiers" "$tmp/functions" >"$tmp/known"
: >"$tmp/stale"
for page in "${pages[@]}"; do
    # Named as a function: `ompbatch_x(` (calls and declarations); the header must declare it.
    grep -oE '(^|[^A-Za-z0-9_])ompbatch_[a-z0-9_]+ *\(' "$page" |
        sed -e 's/^[^o]*//' -e 's/ *($//' | sort -u >"$tmp/named_functions"
    missing "$tmp/named_functions" "$tmp/functions" |
        sed "s|.*|$page names function &, which $header does not declare (stale)|" >>"$tmp/stale"
    # Any other ompbatch_ identifier must exist in the header (a type, a tag). Prefixes in
    # globs (ompbatch_hook_*) end in '_' and are left alone, and so are link anchors
    # (#ompbatch_disable), which are headings of the page.
    grep -oE '(^|[^A-Za-z0-9_/.#-])ompbatch_[a-z0-9_]*' "$page" |
        sed 's/^[^o]*//' | grep -v '_$' | sort -u >"$tmp/named"
    missing "$tmp/named" "$tmp/known" |
        sed "s|.*|$page names &, which is not in $header (stale)|" >>"$tmp/stale"
done
if [ -s "$tmp/stale" ]; then
    sort -u "$tmp/stale" | while IFS= read -r line; do echo "FAIL: $line" >&2; done
    failures=$((failures + $(sort -u "$tmp/stale" | wc -l)))
fi

# ---- macros, enumerators, status codes and types: mentioned in docs/api.md ---------------

guard=$(sed -n 's/^#ifndef \(OMPBATCH_[A-Z0-9_]*\)$/\1/p' "$header" | head -1)
sed -n 's/^#define \(OMPBATCH_[A-Z0-9_]*\).*/\1/p' "$header" | grep -v '_$' |
    grep -vx -- "${guard:-NO_GUARD}" | sort -u >"$tmp/macros"
[ "$(wc -l <"$tmp/macros")" -ge 10 ] || fail "found only $(wc -l <"$tmp/macros") OMPBATCH_ macros in $header"
words "$api" >"$tmp/api_words"
while IFS= read -r macro; do
    fail "macro $macro ($header) is not mentioned in $api"
done < <(missing "$tmp/macros" "$tmp/api_words")

sed -n 's/^ *\(OMPBATCH_[A-Z0-9_]*\) *=.*/\1/p' "$header" | sort -u >"$tmp/enumerators"
sed -n 's/^ *X(\([A-Z0-9_]*\), *-\{0,1\}[0-9]*,.*/OMPBATCH_ERR_\1/p' "$header" |
    sort -u >>"$tmp/enumerators"
[ "$(grep -c '^OMPBATCH_ERR_' "$tmp/enumerators")" -ge 5 ] ||
    fail "found only $(grep -c '^OMPBATCH_ERR_' "$tmp/enumerators") status codes in $header's OMPBATCH_STATUS_LIST"
sort -u -o "$tmp/enumerators" "$tmp/enumerators"
while IFS= read -r constant; do
    fail "constant $constant ($header) is not mentioned in $api"
done < <(missing "$tmp/enumerators" "$tmp/api_words")

{
    sed -n 's/^typedef \(struct\|enum\) [A-Za-z0-9_]* \(ompbatch_[A-Za-z0-9_]*\);.*/\2/p' "$header"
    sed -n 's/^} *\(ompbatch_[A-Za-z0-9_]*\);.*/\1/p' "$header"
} | sort -u >"$tmp/types"
[ "$(wc -l <"$tmp/types")" -ge 5 ] || fail "found only $(wc -l <"$tmp/types") ompbatch_ types in $header"
while IFS= read -r type; do
    fail "type $type ($header) is not mentioned in $api"
done < <(missing "$tmp/types" "$tmp/api_words")

# ---- environment variables: docs/configuration.md -----------------------------------------

[ "${#sources[@]}" -gt 0 ] || { echo "FAIL: no plugin/*.c sources among the arguments" >&2; exit 2; }
{
    # getenv("X") and read_*("X", ...) anywhere in plugin/*.c ...
    grep -ohE '(^|[^A-Za-z0-9_])((secure_)?getenv|read_[a-z_]+) *\( *"[A-Za-z0-9_]+"' "${sources[@]}"
    # ... and every call with an "OMPBATCH_*" first argument in config.c, whatever the helper.
    for f in "${sources[@]}"; do
        case "$f" in */config.c | config.c)
            grep -ohE '(^|[^A-Za-z0-9_])[a-z_]+ *\( *"OMPBATCH_[A-Z0-9_]+"' "$f" ;;
        esac
    done
} | sed -n 's/.*"\([A-Za-z0-9_]*\)"$/\1/p' | sort -u >"$tmp/read"
grep '^OMPBATCH_' "$tmp/read" >"$tmp/read_ompbatch"
grep -v '^OMPBATCH_' "$tmp/read" >"$tmp/read_other"
[ "$(wc -l <"$tmp/read_ompbatch")" -ge 10 ] ||
    fail "found only $(wc -l <"$tmp/read_ompbatch") OMPBATCH_ variables read in ${#sources[@]} plugin/*.c files"

# Documented: a heading naming the variable ("## `OMPBATCH_STATS`").
awk '/^```/ { fence = !fence; next } !fence && /^#/' "$configuration" |
    grep -oE 'OMPBATCH_[A-Z0-9_]*[A-Z0-9]' | sort -u >"$tmp/documented_variables"
while IFS= read -r var; do
    fail "variable $var is read by the library (plugin/*.c) but has no heading in $configuration"
done < <(missing "$tmp/read_ompbatch" "$tmp/documented_variables")
while IFS= read -r var; do
    fail "variable $var has a heading in $configuration but the library (plugin/*.c) does not read it (stale)"
done < <(missing "$tmp/documented_variables" "$tmp/read_ompbatch")
# The summary table at the top: one row a variable with a heading ("| [`OMPBATCH_STATS`](#...").
grep -oE '^\| *\[`OMPBATCH_[A-Z0-9_]*[A-Z0-9]`\]' "$configuration" |
    grep -oE 'OMPBATCH_[A-Z0-9_]*[A-Z0-9]' | sort -u >"$tmp/tabled_variables"
while IFS= read -r var; do
    fail "variable $var has a heading in $configuration but no row in its summary table"
done < <(missing "$tmp/documented_variables" "$tmp/tabled_variables")
while IFS= read -r var; do
    fail "variable $var has a row in the summary table of $configuration but no heading"
done < <(missing "$tmp/tabled_variables" "$tmp/documented_variables")
words "$configuration" >"$tmp/configuration_words"
while IFS= read -r var; do
    fail "variable $var is read by the library (getenv in plugin/*.c) but not mentioned in $configuration"
done < <(missing "$tmp/read_other" "$tmp/configuration_words")

# ---- exported symbols: docs/api.md or docs/hook.md ----------------------------------------

nm -D --defined-only "$library" | awk '$2 != "A" { print $NF }' |
    grep -vxE '_edata|_end|__bss_start|_init|_fini' | sort -u >"$tmp/exported"
[ "$(wc -l <"$tmp/exported")" -ge 10 ] || fail "found only $(wc -l <"$tmp/exported") dynamic symbols in $library"
words "$hook" | sort -u - "$tmp/api_words" >"$tmp/api_hook_words"
while IFS= read -r sym; do
    fail "symbol $sym, exported by $library, is documented in neither $api nor $hook"
done < <(missing "$tmp/exported" "$tmp/api_hook_words")

if [ "$failures" -gt 0 ]; then
    echo "docs_sync: $failures problem(s); the manual is docs/ (see docs/README.md)" >&2
    exit 1
fi
echo "docs_sync: $n_functions functions, $(wc -l <"$tmp/macros") macros," \
    "$(wc -l <"$tmp/enumerators") constants, $(wc -l <"$tmp/types") types," \
    "$(wc -l <"$tmp/read") environment variables, $(wc -l <"$tmp/exported") exported symbols:" \
    "documented"
