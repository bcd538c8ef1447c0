#!/usr/bin/env python3
"""Ratio table of rlserver over Redis + Lua from compare.sh's raw.csv files.

  ratios.py redis/raw.csv[,more.csv] rlserver/raw.csv[,more.csv]

Medians per (setting, test) over runs (the Redis side's CSVs first, then rlserver's,
each a comma-separated list); ops/s and p50/p99, and the ratio of
medians. Test names are the harness's (gcra = CL.THROTTLE vs harness/lua/gcra.lua, ...).
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
                rows.setdefault(key, []).append((float(r["rps"]), float(r["p50_ms"]), float(r["p99_ms"]),
                                                 float(r.get("client_cpu") or "nan"), float(r.get("server_cpu") or "nan")))
            except (KeyError, ValueError):
                continue
    return {k: tuple(statistics.median(x[i] for x in v) for i in range(5)) for k, v in rows.items()}


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

print()
print("| c=50 P=1 test | rlserver p99 ms | Redis PING_MBULK p99 ms (same session) | no worse? |")
print("|---|---|---|---|")
for (s_, t), v in sorted(rl.items()):
    if s_.endswith(":1") and (s_, "ping_mbulk") in redis:
        r99 = redis[(s_, "ping_mbulk")][2]
        print(f"| {names.get(t, t).split(' vs')[0]} | {v[2]:.2f} | {r99:.2f} | {'yes' if v[2] <= r99 else 'no'} |")
print()
print("| setting | test | rlserver server CPU µs/request | client (redis-benchmark) CPU, cores |")
print("|---|---|---|---|")
for (s_, t), v in sorted(rl.items()):
    if v[4] == v[4] and v[0] > 0:
        print(f"| c{s_.replace(':', ' P')} | {names.get(t, t).split(' vs')[0]} | {1e6 * v[4] / v[0]:.2f} | {v[3]:.2f} |")
