#!/usr/bin/env python3
"""Ratio tables of rlserver over Redis + Lua from compare.sh's raw.csv files.

  ratios.py [--tol F] [--short N] redis/raw.csv[,more.csv] rlserver/raw.csv[,more.csv]

The Redis side's CSVs first, then rlserver's, each a comma-separated list. Both sides are one
sitting for the noise check (harness/noise.py): a run whose gauge strays more than F (default
0.1) from the sitting's median is dropped, and every table says how many runs it kept. Medians
per (setting, test) over the kept runs, with their range; the ratio is of medians. Test names
are the harness's (gcra = CL.THROTTLE vs harness/lua/gcra.lua, ...). With --short N it prints
only how many kept runs the worst (setting, test) lacks of N (compare.sh's repeat loop).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
import noise  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--tol", type=float, default=0.1)
ap.add_argument("--short", type=int)
ap.add_argument("redis")
ap.add_argument("rl")
args = ap.parse_args()
rows_redis, rows_rl = noise.read(args.redis.split(",")), noise.read(args.rl.split(","))
mid, readings = noise.sitting_median(rows_redis, rows_rl)
redis, rl = noise.split(rows_redis, mid, args.tol), noise.split(rows_rl, mid, args.tol)
if args.short is not None:
    print(noise.lack(args.short, redis, rl))
    sys.exit(0)


def col(rows, field):
    return [float(r[field]) for r in rows]


def med(rows, field):
    return statistics.median(col(rows, field)) if rows else float("nan")


ops = lambda z: f"{z:,.0f}"  # noqa: E731
us = lambda z: f"{z:.2f}"  # noqa: E731
names = {"ping_mbulk": "PING_MBULK", "set": "SET", "gcra": "CL.THROTTLE vs gcra.lua", "fixed": "RL.FIXED vs fixed.lua",
         "log": "RL.LOG vs log.lua", "slide": "RL.SLIDE vs slide.lua", "bucket": "RL.BUCKET vs bucket.lua",
         "all3": "RL.ALL (3) vs all3.lua"}
order = lambda k: (k[0], list(names).index(k[1]) if k[1] in names else 99)  # noqa: E731
short = lambda t: names.get(t, t).split(" vs")[0]  # noqa: E731

print(f"noise gauge: median {mid:.1f} ms over {readings} readings; runs more than {args.tol:.0%} away dropped")
print()
print("| setting | test | runs kept Redis, rlserver | Redis ops/s | rlserver ops/s | ratio | Redis p50/p99 ms | rlserver p50/p99 ms |")
print("|---|---|---|---|---|---|---|---|")
for key in sorted(set(redis) & set(rl), key=order):
    (na, a), (nb, b) = redis[key], rl[key]
    ratio = med(b, "rps") / med(a, "rps") if a and b else float("nan")
    print(f"| c{key[0].replace(':', ' P')} | {names.get(key[1], key[1])} | {len(a)}/{na}, {len(b)}/{nb} | "
          f"{noise.spread(col(a, 'rps'), ops)} | {noise.spread(col(b, 'rps'), ops)} | {ratio:.1f}x | "
          f"{med(a, 'p50_ms'):.2f}/{med(a, 'p99_ms'):.2f} | {med(b, 'p50_ms'):.2f}/{med(b, 'p99_ms'):.2f} |")

print()
print("| setting | test | runs kept | rlserver server CPU µs/request | / its PING_MBULK | Redis server CPU µs/request | Redis / rlserver |")
print("|---|---|---|---|---|---|---|")
for key in sorted(rl, key=order):
    b = rl[key][1]
    cb = [noise.per_request_us(r) for r in b]
    ping = rl.get((key[0], "ping_mbulk"), (0, []))[1]
    cp = [noise.per_request_us(r) for r in ping]
    a = redis.get(key, (0, []))[1]
    ca = [noise.per_request_us(r) for r in a]
    rel = f"{statistics.median(cb) / statistics.median(cp):.2f}" if cb and cp else "-"
    vs = f"{statistics.median(ca) / statistics.median(cb):.1f}x" if ca and cb else "-"
    print(f"| c{key[0].replace(':', ' P')} | {short(key[1])} | {len(b)}/{rl[key][0]} | {noise.spread(cb, us)} | {rel} | "
          f"{noise.spread(ca, us)} | {vs} |")

print()
print("| c=50 P=1 test | rlserver p99 ms | Redis PING_MBULK p99 ms (same sitting) | no worse? |")
print("|---|---|---|---|")
for (s, t), (_, b) in sorted(rl.items(), key=lambda kv: order(kv[0])):
    if s.endswith(":1") and redis.get((s, "ping_mbulk"), (0, []))[1] and b:
        r99 = med(redis[(s, "ping_mbulk")][1], "p99_ms")
        print(f"| {short(t)} | {med(b, 'p99_ms'):.2f} | {r99:.2f} | {'yes' if med(b, 'p99_ms') <= r99 else 'no'} |")
