#!/usr/bin/env bash
# The library's files depend on each other without cycles, and each layer only on the layers
# below it. A file depends on the module of every header it includes ("batch.c" and "batch.h"
# are module batch), and a header depends on the module of every .c file that defines a
# function the header declares (a header whose functions another file defines makes that file
# part of the header's module's world). The layers are the folders of the plugin directory,
# LAYERS from the bottom up ("core cuda plan exec api hook"). Fails with the modules of each
# cycle and each dependency on a higher layer.
# Usage: dependency_cycles_test.sh [plugin directory]
set -u
dir=${1:-plugin}
[ -d "$dir" ] || { echo "FAIL: no directory $dir" >&2; exit 1; }
edges=$(mktemp)
layers=$(mktemp)
defs=$(mktemp)
trap 'rm -f "$edges" "$layers" "$defs"' EXIT
module() { local b=${1##*/}; echo "${b%.*}"; }
mapfile -t files < <(find -L "$dir" -mindepth 1 -maxdepth 2 -type f \( -name '*.c' -o -name '*.h' \) | sort)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no sources in $dir" >&2; exit 1; }
# Each module and its layer (the folder it lies in, "." at the top).
for f in "${files[@]}"; do
    rel=${f#"$dir"/}
    case "$rel" in */*) echo "$(module "$f") ${rel%%/*}" ;; *) echo "$(module "$f") ." ;; esac
done | sort -u >"$layers"
# One awk a step over all files, not one a file or a name: the check runs four times in the
# mutation test on a machine of two cores.
AWK_MODULE='function module(p,   b) { b = p; sub(/.*\//, "", b); sub(/\.[^.]*$/, "", b); return b }'
# Which module defines each non-static function: a line at column 0 that starts a definition
# (the name, an open parenthesis, no semicolon at the end of the declaration's last line).
awk "$AWK_MODULE"'
    FNR == 1 { m = module(FILENAME) }
    FILENAME ~ /\.c$/ && /^[A-Za-z_]/ && !/^static/ && !/^typedef/ && !/;[[:space:]]*$/ &&
    match($0, /(ob|ompbatch)_[A-Za-z0-9_]*\(/) {
        print substr($0, RSTART, RLENGTH - 1), m
    }' "${files[@]}" >"$defs"
# A file depends on the module of each header it includes that is a module here.
awk -v layers="$layers" "$AWK_MODULE"'
    BEGIN { while ((getline line <layers) > 0) { split(line, x, " "); known[x[1]] = 1 } }
    FNR == 1 { m = module(FILENAME) }
    /^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.h"/ {
        inc = $0
        sub(/^[[:space:]]*#[[:space:]]*include[[:space:]]*"/, "", inc)
        sub(/\.h".*/, "", inc)
        dep = module(inc)
        if (dep != m && (dep in known)) print m, dep
    }' "${files[@]}" >"$edges"
# A header depends on the modules that define the functions it declares. Declarations: names
# followed by "(" on lines that are not comments, macros or inline bodies; a prototype may span
# lines, so every such name at the start of a declaration.
headers=()
for f in "${files[@]}"; do [ "${f%.h}" = "$f" ] || headers+=("$f"); done
[ ${#headers[@]} = 0 ] || awk -v defs="$defs" "$AWK_MODULE"'
    BEGIN { while ((getline line <defs) > 0) { split(line, x, " "); where[x[1]] = where[x[1]] " " x[2] } }
    FNR == 1 { m = module(FILENAME); skip = 0 }
    /^[[:space:]]*(\/\*|\*|#)/ { next }
    /^static inline/ { skip = 1 }
    skip && /^}/ { skip = 0; next }
    !skip && /^[A-Za-z_]/ && match($0, /(ob|ompbatch)_[A-Za-z0-9_]*\(/) {
        n = split(where[substr($0, RSTART, RLENGTH - 1)], in_module, " ")
        for (k = 1; k <= n; k++)
            if (in_module[k] != m) print m, in_module[k]
    }' "${headers[@]}" >>"$edges"
sort -u -o "$edges" "$edges"
# The strongly connected components of the graph (Tarjan): each of more than one module is a
# cycle. KNOWN_CYCLES names components that are allowed for now, their modules sorted and
# joined by spaces, one per line; any other, or a known one grown, fails.
cycles=$(awk '
    { out[$1] = out[$1] " " $2; node[$1]; node[$2] }
    function visit(v,    list, n, k, w) {
        index_of[v] = low[v] = counter++; stack[++top] = v; on[v] = 1
        n = split(out[v], list, " ")
        for (k = 1; k <= n; k++) {
            w = list[k]
            if (!(w in index_of)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
            else if (on[w] && index_of[w] < low[v]) low[v] = index_of[w]
        }
        if (low[v] == index_of[v]) {
            comp = ""; size = 0
            do { w = stack[top--]; on[w] = 0; comp = comp " " w; size++ } while (w != v)
            if (size > 1) print comp
        }
    }
    END { for (v in node) if (!(v in index_of)) visit(v) }' "$edges" |
    while read -r line; do echo "$line" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//'; echo; done)
failed=0
while read -r comp; do
    [ -n "$comp" ] || continue
    if printf '%s\n' "${KNOWN_CYCLES:-}" | grep -qxF "$comp"; then
        echo "known cycle, to be removed: $comp"
        continue
    fi
    failed=1
    echo "FAIL: these modules of $dir depend on each other in a cycle: $comp"
    for n in $comp; do
        awk -v n="$n" -v c=" $comp " '$1 == n && index(c, " " $2 " ") { print "  " $1 " -> " $2 }' "$edges"
    done
done <<<"$cycles"
# Layers: a dependency may go down or stay in its layer, never up. A module name found in two
# folders has no one layer and fails as a folder that is not one.
if [ -n "${LAYERS:-}" ]; then
    awk -v order="$LAYERS" -v layers="$layers" '
        BEGIN {
            n = split(order, names, " ")
            for (k = 1; k <= n; k++) rank[names[k]] = k
            while ((getline line <layers) > 0) {
                split(line, x, " ")
                if (x[1] in layer) layer[x[1]] = layer[x[1]] "," x[2]
                else layer[x[1]] = x[2]
            }
        }
        {
            lf = layer[$1]; lt = layer[$2]
            if (!(lf in rank) || !(lt in rank)) {
                print "FAIL: " $1 " (" lf ") -> " $2 " (" lt "): a folder that is not one of the layers (" order ")"
                bad = 1
            } else if (rank[lf] < rank[lt]) {
                print "FAIL: " $1 " (" lf ") depends on " $2 " (" lt "), a higher layer"
                bad = 1
            }
        }
        END { exit bad }' "$edges" || failed=1
fi
[ $failed = 0 ] || exit 1
echo "ok: $(wc -l <"$edges") dependencies between $(tr ' ' '\n' <"$edges" | sort -u | wc -l) modules of $dir, no cycle but the known ones${LAYERS:+, none upwards through $LAYERS}"
