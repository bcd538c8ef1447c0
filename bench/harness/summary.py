#!/usr/bin/env python3
"""Median tables of the harness's raw files.

  summary.py throughput raw.csv [raw.csv ...]   one target's redis-benchmark runs
  summary.py memory memory.csv [memory.csv ...] bytes per key

throughput: per (setting, test), over every row given: the median ops/s and its min-max
(so the noise shows), the share of the same target's PING_MBULK, ops/s per core of server
CPU, p50 and p99, the CPU used by the client and by the server (in cores), what else kept
the machine busy ("other", from /proc/stat less client and server), and steal.
memory: per case, the medians of used_memory, MEMORY USAGE (sampled) and RSS per key.
For rlserver against Redis + Lua side by side, see bench/ratios.py.
"""
import csv
import os
import statistics
import sys


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(v, digits=0):
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if digits == 0 else f"{v:.{digits}f}"


def groups(paths, key):
    out = {}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                out.setdefault(key(row), []).append(row)
    return out


def throughput(paths):
    g = groups(paths, lambda r: (r["setting"], r["test"]))
    ping = {s: med(num(r["rps"]) for r in rows) for (s, t), rows in g.items() if t == "ping_mbulk"}
    cores = int(os.environ.get("NPROC") or os.cpu_count() or 1)
    print("| setting (c:P) | test | runs | ops/s (median) | min-max ops/s | % of PING_MBULK | ops/s per server core "
          "| p50 ms | p99 ms | client CPU | server CPU | other CPU | steal % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (s, t), rows in g.items():
        rps = [x for x in (num(r["rps"]) for r in rows) if x is not None]
        m = med(rps)
        share = f"{100 * m / ping[s]:.0f}%" if m and ping.get(s) else "n/a"
        per_core = med(num(r["rps"]) / num(r["server_cpu"]) for r in rows
                       if num(r["rps"]) and (num(r["server_cpu"]) or 0) > 0.05)
        other = []
        for r in rows:
            busy, client, server = num(r["sys_busy_pct"]), num(r["client_cpu"]), num(r["server_cpu"])
            if None not in (busy, client, server):
                other.append(max(0.0, busy / 100 * cores - client - server))
        col = lambda name, d: fmt(med(num(r[name]) for r in rows), d)
        spread = f"{fmt(min(rps))}-{fmt(max(rps))}" if rps else "n/a"
        print(f"| {s} | {t} | {len(rps)} | {fmt(m)} | {spread} | {share} | {fmt(per_core)} | {col('p50_ms', 3)} | "
              f"{col('p99_ms', 3)} | {col('client_cpu', 2)} | {col('server_cpu', 2)} | {fmt(med(other), 2)} | "
              f"{col('steal_pct', 1)} |")


def memory(paths):
    g = groups(paths, lambda r: r["case"])
    print("| case | hits/key | keys | runs | used_memory B/key | MEMORY USAGE B/key (sampled) | RSS B/key | fill ops/s |")
    print("|---|---|---|---|---|---|---|---|")
    for case, rows in g.items():
        col = lambda name, d: fmt(med(num(r[name]) for r in rows), d)
        print(f"| {case} | {rows[0]['hits']} | {col('keys_after', 0)} | {len(rows)} | {col('used_per_key', 1)} | "
              f"{col('memusage_per_key', 1)} | {col('rss_per_key', 1)} | {col('fill_ops', 0)} |")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("throughput", "memory"):
        sys.exit(__doc__)
    {"throughput": throughput, "memory": memory}[sys.argv[1]](sys.argv[2:])
