#!/usr/bin/env python3
"""The tables bench/replication.sh prints, from its OUT directory (or a copy in bench/data):

  replsummary.py DIR

DIR holds lag.csv, fullsync.csv and {redis,rlserver}-{alone,replica}/raw.csv. Medians over
the rounds: throughput alone and with a replica, with the primary's CPU per request; the
lag quantiles under each load; the full sync time. Every throughput and lag run carries the
noise gauge read before and after it (a directory from before the gauge has none): a run whose
gauge strayed more than GAUGE_TOL (env, default 0.10) from the median over the whole sitting is
dropped (harness/noise.py), and each cell says how many runs it kept.
"""
import csv, os, statistics, sys
import noise

out = sys.argv[1]
tol = float(os.environ.get("GAUGE_TOL", "0.10"))


def rows(p):
    with open(p) as f:
        return list(csv.DictReader(f))


targets = [t for t in ("redis", "rlserver") if os.path.exists(os.path.join(out, t + "-alone"))]
runs = {(t, side): rows(os.path.join(out, f"{t}-{side}", "raw.csv")) for t in targets for side in ("alone", "replica")}
lag = rows(os.path.join(out, "lag.csv"))
mid, _ = noise.sitting_median(lag, *runs.values())
calm = lambda r: noise.calm(r, mid, tol)
if mid:
    print(f"noise gauge: sitting median {mid:.0f} ms, tolerance {tol:.0%}; (k/n) is the runs kept of those made")


def spread(v, fmt):
    return (fmt % statistics.median(v)) + ("" if len(v) == 1 else f" [{fmt % min(v)}-{fmt % max(v)}]") if v else "-"


print("throughput, medians over rounds [min-max]: target,test,ops/s alone,ops/s with a replica,ratio,"
      "primary CPU us/request alone,with a replica,ratio,runs kept alone,with a replica")
for target in targets:
    alone, repl = runs[(target, "alone")], runs[(target, "replica")]
    for t in sorted({r["test"] for r in alone}):
        made = lambda rs: [r for r in rs if r["test"] == t]
        kept = lambda rs: [r for r in made(rs) if calm(r)]
        a, b = [float(r["rps"]) for r in kept(alone)], [float(r["rps"]) for r in kept(repl)]
        ca = [1e6 * float(r["server_cpu"]) / float(r["rps"]) for r in kept(alone)]
        cb = [1e6 * float(r["server_cpu"]) / float(r["rps"]) for r in kept(repl)]
        ratio = lambda x, y: f"{statistics.median(y) / statistics.median(x):.2f}" if x and y else "-"
        print(f"{target},{t},{spread(a, '%.0f')},{spread(b, '%.0f')},{ratio(a, b)},"
              f"{spread(ca, '%.2f')},{spread(cb, '%.2f')},{ratio(ca, cb)},"
              f"{len(kept(alone))}/{len(made(alone))},{len(kept(repl))}/{len(made(repl))}")
print("lag under load, medians over rounds [min-max]: target,test,setting,load ops/s,p50 us,p90 us,p99 us,max us,"
      "replica rtt p50 us,% seen at the first EXISTS,runs kept")
for target in targets:
    keyof = lambda r: (r["test"], r["clients"], r["pipeline"], r.get("paced_rps", "max"))
    for key in sorted({keyof(r) for r in lag}):
        made = [r for r in lag if r["target"] == target and keyof(r) == key]
        if not made:
            continue
        rs = [r for r in made if calm(r)]
        q = lambda k: spread([float(r[k]) for r in rs if r.get(k)], "%.0f") if any(r.get(k) for r in rs) else "-"
        paced = "" if key[3] == "max" else f" paced {key[3]}/s"
        print(f"{target},{key[0]},c{key[1]} P{key[2]}{paced},{q('load_rps')},{q('lag_p50_us')},{q('lag_p90_us')},"
              f"{q('lag_p99_us')},{q('lag_max_us')},{q('replica_rtt_p50_us')},{q('first_poll_pct')},{len(rs)}/{len(made)}")
print("full sync (median s over rounds)")
sync = rows(os.path.join(out, "fullsync.csv"))
for target in targets:
    rs = [r for r in sync if r["target"] == target]
    print(f"{target},{rs[0]['keys']},{statistics.median(float(r['sync_s']) for r in rs):.2f},{rs[-1]['replica_keys']}")
