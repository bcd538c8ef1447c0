#!/usr/bin/env python3
"""Replication lag pooled over several sittings of bench/replication.sh:

  lagpool.py DIR...

Each DIR is a sitting's OUT directory (replsummary.py's input). Each sitting keeps the lag runs
its own summary keeps: a run whose noise gauge strayed more than GAUGE_TOL (env, default 0.10)
from the median over that whole sitting is dropped (harness/noise.py). Prints, per test and
setting, each target's median over the kept runs of every sitting of lag p50, p90 and p99 (µs),
with their range, and the runs kept of those made.
"""
import csv, os, statistics, sys
from collections import defaultdict
import noise

tol = float(os.environ.get("GAUGE_TOL", "0.10"))
QUANTILES = ("lag_p50_us", "lag_p90_us", "lag_p99_us")


def rows(p):
    with open(p) as f:
        return list(csv.DictReader(f))


kept, made = defaultdict(list), defaultdict(int)  # (test, setting, target) -> runs
for out in sys.argv[1:]:
    lag = rows(os.path.join(out, "lag.csv"))
    raws = [rows(os.path.join(out, f"{t}-{side}", "raw.csv"))
            for t in ("redis", "rlserver") for side in ("alone", "replica")
            if os.path.exists(os.path.join(out, f"{t}-{side}", "raw.csv"))]
    mid, _ = noise.sitting_median(lag, *raws)
    for r in lag:
        key = (r["test"], f"c{r['clients']} P{r['pipeline']} {r.get('paced_rps', 'max')}/s", r["target"])
        made[key] += 1
        if noise.calm(r, mid, tol):
            kept[key].append(r)

print(f"{len(sys.argv) - 1} sittings; test,setting,target,p50 us median [min-max],p90,p99,runs kept")
for key in sorted(made):
    cols = []
    for q in QUANTILES:
        v = [float(r[q]) for r in kept[key]]
        cols.append(f"{statistics.median(v):.0f} [{min(v):.0f}-{max(v):.0f}]" if v else "-")
    print(",".join(key + tuple(cols)) + f",{len(kept[key])}/{made[key]}")
