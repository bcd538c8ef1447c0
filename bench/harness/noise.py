"""The noise check shared by bench/ab.sh and bench/ratios.py.

Every run in a harness raw.csv is framed by the noise gauge: a fixed CPU loop on the server's
CPU, timed before and after it (gauge_before_ms, gauge_after_ms). A sitting is every run of one
invocation, both sides together. A run whose gauge readings are not all within tol of the
sitting's median gauge ran on a disturbed machine: it is dropped, and the harness runs more
rounds until each (setting, test) has its rounds kept.
"""
import csv
import re
import statistics

GAUGE_FIELDS = ("gauge_before_ms", "gauge_after_ms")


def read(paths):
    """The rows of every raw.csv in paths, in order."""
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def read_profile_runs(path):
    """bench/cpuprofile.sh's runs.txt: {tag: (requests, CPU ticks, gauge row)} per line
    "p5-LABEL-R: reqs N cpu_ticks T [gauge_ms G0 G1]"; the gauge row reads as a raw.csv row
    (empty for a run from before the gauge)."""
    runs = {}
    for line in open(path):
        m = re.match(r"(p5-\S+): reqs (\d+) cpu_ticks (\d+)(?: gauge_ms (\S+) (\S+))?", line)
        if m:
            g = dict(zip(GAUGE_FIELDS, m.group(4, 5))) if m.group(4) else {}
            runs[m.group(1)] = (int(m.group(2)), int(m.group(3)), g)
    return runs


def gauges(row):
    """A run's gauge readings in ms (none for a row from before the gauge)."""
    return [float(row[k]) for k in GAUGE_FIELDS if row.get(k)]


def sitting_median(*sides):
    """The median gauge reading over every run of every side (0 when there is none)."""
    g = [x for rows in sides for r in rows for x in gauges(r)]
    return (statistics.median(g), len(g)) if g else (0, 0)


def calm(row, mid, tol):
    """Whether a run's gauge stayed within tol (a fraction) of the sitting's median."""
    return not mid or all(abs(x - mid) <= tol * mid for x in gauges(row))


def split(rows, mid, tol):
    """Per (setting, test): [runs in all, the calm rows]."""
    out = {}
    for r in rows:
        e = out.setdefault((r["setting"], r["test"]), [0, []])
        e[0] += 1
        if calm(r, mid, tol):
            e[1].append(r)
    return out


def lack(want, *splits):
    """How many kept runs the worst (setting, test) of any side still lacks."""
    return max([want - len(e[1]) for s in splits for e in s.values()] + [0])


def spread(xs, f):
    """'median (min-max)' of xs, each formatted by f; '-' when empty."""
    return f"{f(statistics.median(xs))} ({f(min(xs))}-{f(max(xs))})" if xs else "-"


def per_request_us(row):
    """The server's CPU per request in µs (nan without a CPU reading)."""
    rps, cpu = float(row["rps"]), float(row.get("server_cpu") or "nan")
    return cpu / rps * 1e6 if rps else float("nan")
