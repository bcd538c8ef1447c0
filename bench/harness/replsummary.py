#!/usr/bin/env python3
"""The tables bench/replication.sh prints, from its OUT directory (or a copy in bench/data):

  replsummary.py DIR

DIR holds lag.csv, fullsync.csv and {redis,rlserver}-{alone,replica}/raw.csv. Medians over
the rounds: throughput alone and with a replica, with the primary's CPU per request; the
lag quantiles under each load; the full sync time.
"""
import csv, statistics, sys, os
out = sys.argv[1]
def rows(p):
    with open(p) as f:
        return list(csv.DictReader(f))
print("throughput, medians over rounds [min-max]: target,test,ops/s alone,ops/s with a replica,ratio,"
      "primary CPU us/request alone,with a replica,ratio")
for target in [t for t in ("redis", "rlserver") if os.path.exists(os.path.join(out, t + "-alone"))]:
    alone = rows(os.path.join(out, target + "-alone", "raw.csv"))
    repl = rows(os.path.join(out, target + "-replica", "raw.csv"))
    for t in sorted({r["test"] for r in alone}):
        vals = lambda rs, f: [f(r) for r in rs if r["test"] == t]
        spread = lambda v, fmt: (fmt % statistics.median(v)) + ("" if len(v) == 1 else f" [{fmt % min(v)}-{fmt % max(v)}]")
        a, b = vals(alone, lambda r: float(r["rps"])), vals(repl, lambda r: float(r["rps"]))
        ca = vals(alone, lambda r: 1e6 * float(r["server_cpu"]) / float(r["rps"]))
        cb = vals(repl, lambda r: 1e6 * float(r["server_cpu"]) / float(r["rps"]))
        print(f"{target},{t},{spread(a, '%.0f')},{spread(b, '%.0f')},{statistics.median(b) / statistics.median(a):.2f},"
              f"{spread(ca, '%.2f')},{spread(cb, '%.2f')},{statistics.median(cb) / statistics.median(ca):.2f}")
print("lag under load, medians over rounds [min-max]: target,test,setting,load ops/s,p50 us,p90 us,p99 us,max us,replica rtt p50 us")
lag = rows(os.path.join(out, "lag.csv"))
for target in [t for t in ("redis", "rlserver") if os.path.exists(os.path.join(out, t + "-alone"))]:
    keyof = lambda r: (r["test"], r["clients"], r["pipeline"], r.get("paced_rps", "max"))
    for key in sorted({keyof(r) for r in lag}):
        rs = [r for r in lag if r["target"] == target and keyof(r) == key]
        if not rs:
            continue
        def q(k):
            v = [float(r[k]) for r in rs]
            m = f"{statistics.median(v):.0f}"
            return m if len(v) == 1 else f"{m} [{min(v):.0f}-{max(v):.0f}]"
        paced = "" if key[3] == "max" else f" paced {key[3]}/s"
        print(f"{target},{key[0]},c{key[1]} P{key[2]}{paced},{q('load_rps')},{q('lag_p50_us')},{q('lag_p90_us')},"
              f"{q('lag_p99_us')},{q('lag_max_us')},{q('replica_rtt_p50_us')}")
print("full sync (median s over rounds)")
sync = rows(os.path.join(out, "fullsync.csv"))
for target in [t for t in ("redis", "rlserver") if os.path.exists(os.path.join(out, t + "-alone"))]:
    rs = [r for r in sync if r["target"] == target]
    print(f"{target},{rs[0]['keys']},{statistics.median(float(r['sync_s']) for r in rs):.2f},{rs[-1]['replica_keys']}")
