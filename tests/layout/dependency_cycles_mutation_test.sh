#!/usr/bin/env bash
# dependency_cycles_test.sh must fail on a cycle it has not been told of, and name its
# modules: run on a copy of plugin/ in which the forwarding header includes the constructs'
# header, whose module includes it (hook_forward -> hook_construct -> hook_forward), on one
# where a header declares a function another module defines that includes it back, and on one
# where a file of the bottom layer includes a header of the top one.
# The copies are real files (cp -L): the runfiles are links into the source tree.
# Usage: dependency_cycles_mutation_test.sh <dependency_cycles_test.sh>
set -u
check=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect_cycle() { # what, directory, modules that must be named
    local what=$1 dir=$2 out
    shift 2
    if out=$(bash "$check" "$dir" 2>&1); then
        echo "FAIL: $what: the check passed"; failures=$((failures + 1)); return
    fi
    for m in "$@"; do
        if ! grep -q "cycle:.*\b$m\b" <<<"$out"; then
            echo "FAIL: $what: $m not named"; echo "$out"; failures=$((failures + 1)); return
        fi
    done
    echo "ok: $what"
}
bash "$check" plugin >/dev/null || { echo "FAIL: the check fails on plugin/ itself"; exit 1; }
cp -rL plugin "$work/include" && chmod -R u+w "$work/include"
echo '#include "plugin/hook/hook_construct.h"' >>"$work/include/hook/hook_forward.h"
expect_cycle "an include cycle" "$work/include" hook_forward hook_construct
cp -rL plugin "$work/declare" && chmod -R u+w "$work/declare"
# sort.h declares a function that hook_region.c defines, and hook_region.c includes sort.h.
printf 'int ob_sort_cycle_probe(void);\n' >>"$work/declare/core/sort.h"
printf '#include "plugin/core/sort.h"\nint ob_sort_cycle_probe(void)\n{\n    return 0;\n}\n' \
    >>"$work/declare/hook/hook_region.c"
expect_cycle "a function declared by one module and defined by another" "$work/declare" sort hook_region
cp -rL plugin "$work/upward" && chmod -R u+w "$work/upward"
# The clock (core) includes the hook's state: no cycle, but a dependency on a higher layer.
echo '#include "plugin/hook/hook_state.h"' >>"$work/upward/core/clock.c"
if out=$(bash "$check" "$work/upward" 2>&1); then
    echo "FAIL: an upward dependency: the check passed"; failures=$((failures + 1))
elif ! grep -q "clock (core) depends on hook_state (hook), a higher layer" <<<"$out"; then
    echo "FAIL: an upward dependency: not named"; echo "$out"; failures=$((failures + 1))
else
    echo "ok: an upward dependency"
fi
echo "dependency_cycles_mutation_test: $failures failed"
[ $failures = 0 ]
