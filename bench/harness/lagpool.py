#!/usr/bin/env python3
"""Replication lag, and a replica's cost to its primary, pooled over several sittings of
bench/replication.sh:

  lagpool.py DIR...

Each DIR is a sitting's OUT directory (replsummary.py's input). Each sitting keeps the lag runs
its own summary keeps: a run whose noise gauge strayed more than GAUGE_TOL (env, default 0.10)
from the median over that whole sitting is dropped (harness/noise.py). Prints, per test and
setting, each target's median over the kept runs of every sitting of lag p50, p90 and p99 (µs),
with their range, and the runs kept of those made. Then, per test, the primary's CPU per request
(µs, unpaced) alone and with a replica, each the median over the kept throughput runs of every
sitting, their ratio, and each sitting's own ratio of medians (as replsummary.py prints it).
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
cpu = defaultdict(list)  # (target, test, side) -> µs a request of the kept throughput runs
cpumade = defaultdict(int)
sittings = defaultdict(list)  # (target, test) -> each sitting's ratio, with a replica over alone
for out in sys.argv[1:]:
    lag = rows(os.path.join(out, "lag.csv"))
    raws = {}  # (target, side) -> the sitting's throughput runs
    for t in ("redis", "rlserver"):
        for side in ("alone", "replica"):
            p = os.path.join(out, f"{t}-{side}", "raw.csv")
            if os.path.exists(p):
                raws[(t, side)] = rows(p)
    mid, _ = noise.sitting_median(lag, *raws.values())
    here = defaultdict(list)  # this sitting's kept runs: (target, test, side) -> µs a request
    for (t, side), rs in raws.items():
        for r in rs:
            cpumade[(t, r["test"], side)] += 1
            if noise.calm(r, mid, tol):
                here[(t, r["test"], side)].append(1e6 * float(r["server_cpu"]) / float(r["rps"]))
    for (t, test, side), v in here.items():
        cpu[(t, test, side)] += v
        if side == "alone" and here.get((t, test, "replica")):
            sittings[(t, test)].append(statistics.median(here[(t, test, "replica")]) / statistics.median(v))
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

print("replica cost, primary CPU us/request unpaced; target,test,alone median [min-max],with a replica,"
      "pooled ratio,each sitting's ratio,runs kept alone,with a replica")
for (t, test) in sorted({(k[0], k[1]) for k in cpumade}):
    a, b = cpu[(t, test, "alone")], cpu[(t, test, "replica")]
    spread = lambda v: f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]" if v else "-"
    ratio = f"{statistics.median(b) / statistics.median(a):.2f}" if a and b else "-"
    each = " ".join(f"{x:.2f}" for x in sittings[(t, test)])
    print(f"{t},{test},{spread(a)},{spread(b)},{ratio},{each},"
          f"{len(a)}/{cpumade[(t, test, 'alone')]},{len(b)}/{cpumade[(t, test, 'replica')]}")
