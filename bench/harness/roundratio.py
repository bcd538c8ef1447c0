"""Per-round ratio of two tests' server CPU per request, in one or more sittings.

Usage: python3 bench/harness/roundratio.py NUM DEN OUTDIR...

An OUTDIR is bench/ab.sh's OUT (A/raw.csv and B/raw.csv) or bench/cpuprofile.sh's
(runs.txt). Every round whose runs of NUM and DEN both passed the noise check (the
sitting's gauge, 10%) gives NUM's CPU per request over DEN's. Adjacent runs of one
round share most of the machine's noise, so the ratio is steadier than either figure.
Prints, per OUTDIR and pooled over all of them, the ratios, their median and count.
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import noise  # noqa: E402

TOL = 0.1


def ab_rounds(out):
    """ab.sh: {(side, round): {test: µs per request}} over the calm runs."""
    sides = {s: noise.read([os.path.join(out, s, "raw.csv")]) for s in ("A", "B")}
    mid, _ = noise.sitting_median(*sides.values())
    rounds = {}
    for side, rows in sides.items():
        for r in rows:
            if noise.calm(r, mid, TOL):
                rounds.setdefault((side, r["run"]), {})[r["test"]] = noise.per_request_us(r)
    return rounds


def profile_rounds(out):
    """cpuprofile.sh: {(variant, round): {test: µs per request}} over the calm runs; a
    label "p5-TEST[-VARIANT]-ROUND" (VARIANT: b1, r0, ... for BINS and REPLICAS)."""
    runs = noise.read_profile_runs(os.path.join(out, "runs.txt"))
    mid, _ = noise.sitting_median([g for _, _, g in runs.values()])
    rounds = {}
    for tag, (reqs, ticks, g) in runs.items():
        test, variant, rnd = re.match(r"p5-([^-]+)(?:-(\S+))?-(\d+)$", tag).groups()
        if noise.calm(g, mid, TOL):
            rounds.setdefault((variant, rnd), {})[test] = ticks * 1e4 / reqs  # a tick is 10 ms
    return rounds


def ratios(out, num, den):
    has_runs = os.path.exists(os.path.join(out, "runs.txt"))
    rounds = profile_rounds(out) if has_runs else ab_rounds(out)
    return sorted(t[num] / t[den] for t in rounds.values() if num in t and den in t)


def show(name, num, den, rs):
    if not rs:
        print(f"{name}: no round kept both {num} and {den}")
        return
    print(f"{name}: {num}/{den} median {statistics.median(rs):.2f} "
          f"({rs[0]:.2f}-{rs[-1]:.2f}), {len(rs)} rounds: " + " ".join(f"{x:.2f}" for x in rs))


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    num, den = sys.argv[1], sys.argv[2]
    pooled = []
    for out in sys.argv[3:]:
        rs = ratios(out, num, den)
        show(out, num, den, rs)
        pooled += rs
    if len(sys.argv) > 4:
        show("pooled", num, den, sorted(pooled))


if __name__ == "__main__":
    main()
