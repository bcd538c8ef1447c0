#!/usr/bin/env python3
"""Summarize bench/rls.sh's runs.txt: per target and mode, the median and the range
(min-max) of each figure over the rounds, the noise gauges, and rlserver over upstream.

Usage: python3 bench/harness/rlssummary.py runs.txt
"""
import statistics
import sys

FIELDS = ["calls_per_sec", "calls_per_cpu_sec", "us_cpu_per_call", "p50_ms", "p90_ms", "p99_ms"]


def main(path):
    runs = {}
    for line in open(path):
        f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        target, mode, _ = f["label"].rsplit("-", 2)
        runs.setdefault((target, mode), []).append(f)
    med = {}
    print(f"{'target':9} {'mode':8} {'runs':>4} " + " ".join(f"{k:>26}" for k in FIELDS) + "  errors  gauge_ms")
    for (target, mode), rs in sorted(runs.items()):
        cells = []
        for k in FIELDS:
            v = [float(r[k]) for r in rs if k in r]
            if not v:
                cells.append(f"{'-':>26}")
                continue
            m = statistics.median(v)
            med[(target, mode, k)] = m
            cells.append(f"{m:>11.2f} ({min(v):.2f}-{max(v):.2f})".rjust(26))
        errors = sum(int(r["errors"]) for r in rs)
        g = [float(r[k]) for r in rs for k in ("gauge_before_ms", "gauge_after_ms")]
        print(f"{target:9} {mode:8} {len(rs):>4} " + " ".join(cells) + f"  {errors:>6}  {min(g):.0f}-{max(g):.0f}")
    print()
    for mode in ("unpaced", "paced"):
        def r(k):
            a, b = med.get(("rlserver", mode, k)), med.get(("upstream", mode, k))
            return f"{a / b:.2f}" if a and b else "-"
        print(f"{mode}: rlserver / upstream (medians): calls/s {r('calls_per_sec')}, calls per CPU-second "
              f"{r('calls_per_cpu_sec')}, p50 {r('p50_ms')}, p99 {r('p99_ms')}")


if __name__ == "__main__":
    main(sys.argv[1])
