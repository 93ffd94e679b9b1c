#!/usr/bin/env bash
# The benchmark on the fake driver (its times mean nothing here): every way of every cell of
# the quick grid runs and has its bytes checked, and the rounds' orders give every way each
# other way as its predecessor equally often ("follows": [fewest, most] in the JSON).
set -euo pipefail
bench=$1
json=${TEST_TMPDIR:-/tmp}/bench.json
out=$("$bench" --require-gpu --quick --json "$json")
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }
cells=$(grep -c '"dir": ' "$json" || true)
[ "$cells" -eq 16 ] || fail "expected 16 cells in the JSON, found $cells"
verified=$(grep -o '"verified": true' "$json" | wc -l)
[ "$verified" -eq 16 ] || fail "only $verified of 16 cells verified"
follows=$(grep -o '"follows": \[[0-9]*, [0-9]*\]' "$json")
[ "$(echo "$follows" | wc -l)" -eq 16 ] || fail "a cell has no follows counts"
while read -r line; do
    fewest=$(echo "$line" | sed 's/.*\[\([0-9]*\), .*/\1/')
    most=$(echo "$line" | sed 's/.*, \([0-9]*\)\]/\1/')
    [ "$fewest" -gt 0 ] && [ "$fewest" -eq "$most" ] ||
        fail "unbalanced predecessors: $line"
done <<<"$follows"
# auto_on_best_plan says whether auto's per-way stats equal the best single strategy's.
while read -r line; do
    best=$(echo "$line" | grep -o '"best_single": "[a-z]*"' | sed 's/.*: "\(.*\)"/\1/')
    best_stats=$(echo "$line" | grep -o "\"$best\": {\"paths\": [^}]*}" | sed 's/^"[a-z]*": //')
    auto_stats=$(echo "$line" | grep -o '"auto": {"paths": [^}]*}' | sed 's/^"[a-z]*": //')
    [ -n "$best_stats" ] && [ -n "$auto_stats" ] || fail "no stats for $best or auto: $line"
    expected=false
    [ "$best_stats" = "$auto_stats" ] && expected=true
    echo "$line" | grep -q "\"auto_on_best_plan\": $expected" ||
        fail "auto_on_best_plan is not $expected for $best $best_stats, auto $auto_stats"
done < <(grep '"dir": ' "$json")
own=$(grep '"dir": ' "$json" | grep '"auto_within_5pct": false' | grep -c '"auto_on_best_plan": false' || true)
grep -q "\"auto_slower_on_own_plan\": $own," "$json" ||
    fail "the summary's auto_slower_on_own_plan is not $own"
# The table's rows ("H2D  pinned  16  8 B ... reps"), not the summary's lines.
reps=$(echo "$out" | awk '/^(H2D|D2H)  +(pinned|pageable) / { print $NF }')
[ "$(echo "$reps" | wc -l)" -eq 16 ] || fail "expected 16 table rows"
for r in $reps; do
    [[ "$r" =~ ^[0-9]+$ ]] || fail "a row's rounds column reads '$r'"
    [ $((r % 4)) -eq 0 ] || fail "a cell ran $r rounds, not whole cycles of 4"
done
echo "PASS: 16 cells, every way verified, predecessors balanced ($(echo "$follows" | head -1)), $own slower on its own plan"
