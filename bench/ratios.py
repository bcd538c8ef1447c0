#!/usr/bin/env python3
"""Ratio table of rlserver over Redis + Lua from two redis_baseline.sh raw.csv files.

  ratios.py redis/raw.csv[,more.csv] rlserver/raw.csv[,more.csv]

Medians per (setting, test) over runs; ops/s and p50/p99, and the ratio of
medians. Test names are the harness's (gcra = CL.THROTTLE vs gcra.lua, ...).
"""
import csv
import statistics
import sys


def load(paths):
    rows = {}
    for path in paths.split(","):
      with open(path) as f:
        for r in csv.DictReader(f):
            try:
                key = (r["setting"], r["test"])
                rows.setdefault(key, []).append((float(r["rps"]), float(r["p50_ms"]), float(r["p99_ms"])))
            except (KeyError, ValueError):
                continue
    return {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in rows.items()}


redis, rl = load(sys.argv[1]), load(sys.argv[2])
names = {"ping_mbulk": "PING_MBULK", "set": "SET", "gcra": "CL.THROTTLE vs gcra.lua", "fixed": "RL.FIXED vs fixed.lua",
         "log": "RL.LOG vs log.lua", "slide": "RL.SLIDE vs slide.lua", "bucket": "RL.BUCKET vs bucket.lua"}
print("| setting | test | Redis ops/s (p50/p99 ms) | rlserver ops/s (p50/p99 ms) | ratio |")
print("|---|---|---|---|---|")
for key in sorted(set(redis) & set(rl), key=lambda k: (k[0], list(names).index(k[1]) if k[1] in names else 99)):
    a, b = redis[key], rl[key]
    print(f"| c{key[0].replace(':', ' P')} | {names.get(key[1], key[1])} | {a[0]:,.0f} ({a[1]:.2f}/{a[2]:.2f}) | "
          f"{b[0]:,.0f} ({b[1]:.2f}/{b[2]:.2f}) | {b[0] / a[0]:.1f}x |")
ping = {s: rl[(s, "ping_mbulk")][0] for (s, t) in rl if t == "ping_mbulk"}
print()
print("| setting | rlserver limiter ops/s as a share of its own PING_MBULK |")
print("|---|---|")
for (s, t), v in sorted(rl.items()):
    if t in ("gcra", "fixed", "log", "slide", "bucket") and s in ping:
        print(f"| c{s.replace(':', ' P')} {names[t].split(' vs')[0]} | {100 * v[0] / ping[s]:.0f}% |")
