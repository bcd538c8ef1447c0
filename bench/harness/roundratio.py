"""Per-round ratio of two tests' server CPU per request in bench/ab.sh sittings.

Usage: python3 bench/harness/roundratio.py NUM DEN OUTDIR...

For each OUTDIR (an ab.sh OUT, with A/raw.csv and B/raw.csv), every round
of each side whose runs of NUM and DEN both passed the noise check (the
sitting's gauge, 10%) gives NUM's CPU per request over DEN's. Adjacent
runs of one round share most of the machine's noise, so the ratio is
steadier than either figure. Prints the ratios, their median and count.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import noise  # noqa: E402


def ratios(out, num, den, tol=0.1):
    sides = [noise.read([os.path.join(out, s, "raw.csv")]) for s in ("A", "B")]
    mid, _ = noise.sitting_median(*sides)
    got = []
    for rows in sides:
        by = {}
        for r in rows:
            if noise.calm(r, mid, tol):
                by.setdefault(r["run"], {})[r["test"]] = noise.per_request_us(r)
        got += [t[num] / t[den] for t in by.values() if num in t and den in t]
    return sorted(got)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    num, den = sys.argv[1], sys.argv[2]
    for out in sys.argv[3:]:
        rs = ratios(out, num, den)
        if not rs:
            print(f"{out}: no round kept both {num} and {den}")
            continue
        print(f"{out}: {num}/{den} median {statistics.median(rs):.2f} "
              f"({rs[0]:.2f}-{rs[-1]:.2f}), {len(rs)} rounds: "
              + " ".join(f"{x:.2f}" for x in rs))


if __name__ == "__main__":
    main()
