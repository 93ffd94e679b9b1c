#!/usr/bin/env bash
# Plots the copy strategies of one benchmark run: time against piece size, one line per way
# (per-copy, direct, staged, auto, bulk), from the JSON of examples/bench.c (--json FILE).
#
#   benchmarks/plot_strategies.sh bench.json plots/
#
# Writes into the output directory, for every direction and host kind measured:
#   strategies_<dir>_<host>_n1024.png   pieces of 1024 per cell
#   strategies_<dir>_<host>_n256.png    the same for 256 pieces, when the run has them
# and strategies.png (strategies_n256.png): H2D/D2H x pinned/pageable in one 2x2 figure.
# Times are the medians in microseconds (log scale), piece sizes in bytes (log scale).
# A JSON of the older two-way bench plots per-copy and ompbatch (as auto) only.
# Needs gnuplot (Debian: apt-get install gnuplot-nox) and python3 (to read the JSON).
set -euo pipefail

usage() {
    echo "usage: $0 BENCH.json OUTPUT_DIR" >&2
    echo "  BENCH.json: the file written by 'bench --json'; OUTPUT_DIR is created if missing" >&2
}

die() {
    echo "plot_strategies: $*" >&2
    exit 1
}

if [ $# -ne 2 ]; then
    usage
    exit 2
fi
json=$1
outdir=$2
[ -r "$json" ] || die "cannot read $json"
command -v gnuplot >/dev/null 2>&1 ||
    die "gnuplot not found: install it (Debian/Ubuntu: apt-get install gnuplot-nox) and run again"
command -v python3 >/dev/null 2>&1 || die "python3 not found: it reads the JSON; install it"

# A PNG terminal: cairo's where gnuplot has it, else libgd's.
terminals=$(gnuplot -e 'set terminal' 2>&1 </dev/null || true)
if grep -qw pngcairo <<<"$terminals"; then
    terminal='pngcairo enhanced font "sans,10"'
elif grep -qw png <<<"$terminals"; then
    terminal='png enhanced font "sans,10"'
else
    die "this gnuplot has no PNG terminal (neither pngcairo nor png)"
fi

mkdir -p "$outdir" || die "cannot create $outdir"
work=$(mktemp -d "${TMPDIR:-/tmp}/plot_strategies.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One data file per (direction, host kind, count) of interest: columns size per_copy direct
# staged auto bulk, sorted by size, NaN where the run has no figure. Prints one line per file:
# dir host count file xtics ways auto_title (xtics as a gnuplot tic list; ways: the columns with
# figures, 2-6 joined by commas; auto_title: "auto", or "ompbatch" for the two-way bench).
python3 - "$json" "$work" >"$work/manifest" <<'PY'
import json
import sys

path, work = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        run = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"plot_strategies: cannot read {path} as JSON: {e}")
if not run.get("gpu", False):
    reason = run.get("reason", "no reason given")
    sys.exit(f"plot_strategies: {path} is a run without a GPU: {reason}")
cells = run.get("cells") or []
if not cells:
    sys.exit(f"plot_strategies: {path} has no cells")

WAYS = ("per_copy", "direct", "staged", "auto", "bulk")


def figure(cell, way):
    # The two-way bench had per_copy_us and ompbatch_us (the library's default path).
    if way == "auto" and "auto_us" not in cell:
        return cell.get("ompbatch_us")
    return cell.get(way + "_us")


def size_name(size):
    for unit, name in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{name}"
    return str(size)


groups = {}
for c in cells:
    if c.get("count") not in (256, 1024):
        continue
    groups.setdefault((c["dir"], c["host"], c["count"]), []).append(c)
if not groups:
    sys.exit(f"plot_strategies: {path} has no cells of 256 or 1024 pieces")
for (direction, host, count), rows in sorted(groups.items()):
    rows.sort(key=lambda c: c["size"])
    name = f"{work}/{direction.lower()}_{host}_n{count}.dat"
    present = set()
    with open(name, "w") as out:
        out.write("# size " + " ".join(WAYS) + "\n")
        for c in rows:
            values = []
            for column, way in enumerate(WAYS, start=2):
                v = figure(c, way)
                if v is None or v <= 0:
                    values.append("NaN")
                else:
                    values.append(f"{v:.3f}")
                    present.add(column)
            out.write(f"{c['size']} " + " ".join(values) + "\n")
    if not present:
        continue
    tics = ", ".join(f'"{size_name(c["size"])}" {c["size"]}' for c in rows)
    ways = ",".join(str(column) for column in sorted(present))
    auto_title = "auto" if any("auto_us" in c for c in rows) else "ompbatch"
    print(direction, host, count, name, f"({tics})", ways, auto_title, sep="\t")
PY

# The gnuplot commands that draw one panel from a data file, one line per column with figures.
panel() { # dir host count file xtics ways auto_title
    local dir=$1 host=$2 count=$3 file=$4 tics=$5 ways=$6
    local -a titles=("" "" per-copy direct staged "$7" bulk)
    local plot="" column
    for column in ${ways//,/ }; do
        plot+="${plot:+, }\"$file\" using 1:$column title \"${titles[$column]}\""
        plot+=" with linespoints ls $((column - 1))"
    done
    cat <<GP
set title "$dir $host, $count pieces"
set logscale xy
set format y "%g"
set xtics $tics
set xlabel "piece size (bytes)"
set ylabel "median time (µs)"
set grid xtics ytics mytics
set key bottom right box opaque
set datafile missing "NaN"
plot $plot
GP
}

# An empty panel for a combination the run did not measure.
empty_panel() { # dir host count
    cat <<GP
set title "$1 $2, $3 pieces"
unset logscale
unset xlabel
unset ylabel
unset key
unset grid
set xrange [0:1]
set yrange [0:1]
set noxtics
set noytics
set label 1 "not measured" at 0.5,0.5 center
plot 2 notitle
unset label 1
set xrange [*:*]
set yrange [*:*]
set xtics
set ytics
set key
GP
}

styles() {
    cat <<'GP'
set style line 1 lc rgb "#888888" lw 1.5 pt 7 ps 0.8
set style line 2 lc rgb "#1f77b4" lw 1.5 pt 5 ps 0.8
set style line 3 lc rgb "#ff7f0e" lw 1.5 pt 9 ps 0.9
set style line 4 lc rgb "#000000" lw 2.5 pt 13 ps 0.9
set style line 5 lc rgb "#2ca02c" lw 1.5 dt 2 pt 3 ps 0.8
GP
}

written=()
while IFS=$'\t' read -r dir host count file tics ways auto_title; do
    png="$outdir/strategies_${dir,,}_${host}_n${count}.png"
    {
        echo "set terminal $terminal size 800,560"
        echo "set output \"$png\""
        styles
        panel "$dir" "$host" "$count" "$file" "$tics" "$ways" "$auto_title"
    } >"$work/one.gp"
    gnuplot "$work/one.gp" || die "gnuplot failed on $png"
    written+=("$png")
done <"$work/manifest"

# The 2x2 figures: rows H2D and D2H, columns pinned and pageable.
for count in 1024 256; do
    grep -q "	$count	" "$work/manifest" || continue
    png="$outdir/strategies.png"
    [ "$count" = 1024 ] || png="$outdir/strategies_n$count.png"
    {
        echo "set terminal $terminal size 1400,1000"
        echo "set output \"$png\""
        styles
        title="ompbatch copy strategies, $count pieces per cell (median µs)"
        echo "set multiplot layout 2,2 title \"$title\""
        for dir in H2D D2H; do
            for host in pinned pageable; do
                line=$(awk -F'\t' -v d="$dir" -v h="$host" -v n="$count" \
                    '$1 == d && $2 == h && $3 == n' "$work/manifest")
                if [ -n "$line" ]; then
                    IFS=$'\t' read -r _ _ _ file tics ways auto_title <<<"$line"
                    panel "$dir" "$host" "$count" "$file" "$tics" "$ways" "$auto_title"
                else
                    empty_panel "$dir" "$host" "$count"
                fi
            done
        done
        echo "unset multiplot"
    } >"$work/grid.gp"
    gnuplot "$work/grid.gp" || die "gnuplot failed on $png"
    written+=("$png")
done

printf 'plot_strategies: wrote %s\n' "${written[@]}"
