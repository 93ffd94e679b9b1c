#!/usr/bin/env python3
"""Per shape and variant: the ratio of medians, the pairs with the hook over 3% slower, and
the hook's extra time a construct (median of the paired differences over the constructs a
repetition), for each process; run beside hook_bench's JSON files, named
<variant>_<round>.json (ab_hook_bench.sh writes them so)."""
import collections
import glob
import json
import statistics as st

rows = collections.defaultdict(list)
for path in sorted(glob.glob("*_[0-9].json")):
    variant = path.split("_")[0]
    run = json.load(open(path))
    for s in run["results"]:
        off, on = s["off_us"]["reps"], s["on_us"]["reps"]
        extra = st.median(b - a for a, b in zip(off, on)) / s["constructs"]
        rows[(s["shape"], variant)].append((s["speedup"], s["pairs_over_3pct_slower"], extra,
                                            s["pairs"]))
for (shape, variant), r in sorted(rows.items()):
    print(f"{shape:15s} {variant:4s} ratio {' '.join(f'{x[0]:.2f}' for x in r)} | "
          f"pairs>3% {' '.join(str(x[1]) for x in r)} of {r[0][3]} | "
          f"extra us/construct {' '.join(f'{x[2]:+.1f}' for x in r)} | mean {st.mean(x[2] for x in r):+.2f}")
