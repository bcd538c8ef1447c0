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
print("throughput, medians over rounds: target,test,ops/s alone,ops/s with a replica,ratio,"
      "primary CPU us/request alone,with a replica,ratio")
for target in [t for t in ("redis", "rlserver") if os.path.exists(os.path.join(out, t + "-alone"))]:
    alone = rows(os.path.join(out, target + "-alone", "raw.csv"))
    repl = rows(os.path.join(out, target + "-replica", "raw.csv"))
    for t in sorted({r["test"] for r in alone}):
        med = lambda rs, f: statistics.median(f(r) for r in rs if r["test"] == t)
        a, b = med(alone, lambda r: float(r["rps"])), med(repl, lambda r: float(r["rps"]))
        ca = med(alone, lambda r: 1e6 * float(r["server_cpu"]) / float(r["rps"]))
        cb = med(repl, lambda r: 1e6 * float(r["server_cpu"]) / float(r["rps"]))
        print(f"{target},{t},{a:.0f},{b:.0f},{b / a:.2f},{ca:.2f},{cb:.2f},{cb / ca:.2f}")
print("lag under load, medians over rounds: target,test,setting,load ops/s,p50 us,p90 us,p99 us,max us,replica rtt p50 us")
lag = rows(os.path.join(out, "lag.csv"))
for target in [t for t in ("redis", "rlserver") if os.path.exists(os.path.join(out, t + "-alone"))]:
    for key in sorted({(r["test"], r["clients"], r["pipeline"]) for r in lag}):
        rs = [r for r in lag if r["target"] == target and (r["test"], r["clients"], r["pipeline"]) == key]
        q = lambda k: statistics.median(float(r[k]) for r in rs)
        print(f"{target},{key[0]},c{key[1]} P{key[2]},{q('load_rps'):.0f},{q('lag_p50_us'):.0f},{q('lag_p90_us'):.0f},"
              f"{q('lag_p99_us'):.0f},{q('lag_max_us'):.0f},{q('replica_rtt_p50_us'):.0f}")
print("full sync (median s over rounds)")
sync = rows(os.path.join(out, "fullsync.csv"))
for target in [t for t in ("redis", "rlserver") if os.path.exists(os.path.join(out, t + "-alone"))]:
    rs = [r for r in sync if r["target"] == target]
    print(f"{target},{rs[0]['keys']},{statistics.median(float(r['sync_s']) for r in rs):.2f},{rs[-1]['replica_keys']}")
