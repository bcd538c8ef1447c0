#!/usr/bin/env python3
"""Replication lag pooled over several sittings of bench/replication.sh.

Each argument is a sitting's lag.csv. Within a sitting, a run whose noise gauge (before or after)
strays more than GAUGE_TOL (default 0.10) from the sitting's median gauge is dropped, as
replication.sh's own summary does. Prints, per test and setting, each target's median over the
kept runs of every sitting of lag p50, p90 and p99 (µs) with their range, and the runs kept.

Usage: python3 bench/harness/lagpool.py bench/data/<sitting>/lag.csv ...
"""
import csv
import os
import statistics
import sys
from collections import defaultdict

tol = float(os.environ.get("GAUGE_TOL", "0.10"))
runs = defaultdict(list)  # (test, setting, target) -> [(p50, p90, p99)]
made = defaultdict(int)
for path in sys.argv[1:]:
    rows = list(csv.DictReader(open(path)))
    gauges = [float(r[k]) for r in rows for k in ("gauge_before_ms", "gauge_after_ms")]
    mid = statistics.median(gauges)
    for r in rows:
        key = (r["test"], f"c{r['clients']} P{r['pipeline']} {r['paced_rps']}/s", r["target"])
        made[key] += 1
        if any(abs(float(r[k]) - mid) > tol * mid for k in ("gauge_before_ms", "gauge_after_ms")):
            continue
        runs[key].append(tuple(float(r[k]) for k in ("lag_p50_us", "lag_p90_us", "lag_p99_us")))

print(f"{len(sys.argv) - 1} sittings; test,setting,target,p50 median [min-max],p90,p99,runs kept")
for key in sorted(runs):
    cols = []
    for i in range(3):
        v = [r[i] for r in runs[key]]
        cols.append(f"{statistics.median(v):.0f} [{min(v):.0f}-{max(v):.0f}]")
    print(",".join(key) + "," + ",".join(cols) + f",{len(runs[key])}/{made[key]}")
