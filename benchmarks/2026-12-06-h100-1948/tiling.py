#!/usr/bin/env python3
"""Reads tgt_<shape>.txt (device address, size, name of each map entry the runtime created, in
order, from LIBOMPTARGET_INFO=8) and counts, over the constructs of 16 arrays of 4 KiB, how
many have device copies that tile one range without gaps (in any order) and how many in the
order of their items. Usage: tiling.py tgt_a.txt [tgt_e.txt ...]"""
import sys

for path in sys.argv[1:]:
    addresses = [int(a, 16) for a, size, _ in (line.split() for line in open(path))
                 if size == "4096"]
    groups = [addresses[i:i + 16] for i in range(0, len(addresses) - 15, 16)]
    tiled = sum(all(b - a == 4096 for a, b in zip(sorted(g), sorted(g)[1:])) for g in groups)
    ordered = sum(all(b - a == 4096 for a, b in zip(g, g[1:])) for g in groups)
    print(f"{path}: {len(addresses)} arrays of 4 KiB, {len(groups)} constructs of 16: "
          f"{tiled} tile one range, {ordered} of them in item order")
