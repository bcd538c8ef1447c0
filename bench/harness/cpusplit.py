#!/usr/bin/env python3
"""Where a request's server CPU goes, from CPU profiles (bench/RESULTS.md, "Where a request's CPU
goes"):

  cpusplit.py RUNS PROFDIR

RUNS has one line per profile, "p5-LABEL-R: reqs N cpu_ticks T [gauge_ms G0 G1 ...]": the
requests the server counted (INFO total_commands_processed), its CPU ticks over the profile's
window and the noise gauge before and after the run; LABEL is the command, then the variant
(-b1, -b2 for BINS, -r0, -r1 for REPLICAS); PROFDIR/p5-LABEL-R.pprof is the server's CPU
profile of that window (--pprof-addr). A run whose gauge strayed more than GAUGE_TOL (env, 0.10)
from the median of every run's is dropped (harness/noise.py). Prints, per label, the runs kept,
the median CPU per request over them with its range, and the ns per request in each part: the
send(2), read(2) and epoll waits of the event loop, the prefetch pass (the keys' table slots and
records brought into the cache), the command (node.Exec, the decision included), the decision
in the engine alone, RESP parsing and the rest; and, a part of the rest, Go's scheduler looking
for work (runtime.findRunnable, its poll of the network included). That last is some 0.2-0.7% of
a busy server's CPU; at 19-36% it was a loop's epoll descriptor waking the poller's thread
(bench/RESULTS.md, "A busy loop out of the poller"), which an A/B of two builds that both had it
could not see.
"""
import os, subprocess, sys, re, statistics
import noise
# A run's gauge readings as noise.py reads them (none: from before the gauge, kept).
runs = noise.read_profile_runs(sys.argv[1])
reqs = {t: (n, ticks) for t, (n, ticks, _) in runs.items()}
gauge = {t: g for t, (_, _, g) in runs.items()}
tol = float(os.environ.get("GAUGE_TOL", "0.10"))
mid, _ = noise.sitting_median(gauge.values())
calm = lambda tag: noise.calm(gauge[tag], mid, tol)
def cum(prof):
    out = subprocess.run(["go","tool","pprof","-top","-cum","-nodecount=2000",prof],capture_output=True,text=True).stdout
    d = {}
    tot = None
    for l in out.splitlines():
        m = re.search(r"Total samples = ([\d.]+)(m?s)", l)
        if m: tot = float(m.group(1)) / (1000 if m.group(2)=="ms" else 1)
        f = l.split()
        if len(f) >= 6 and re.match(r"^[\d.]+m?s$", f[3]):
            v = f[3]; val = float(v[:-2])/1000 if v.endswith("ms") else float(v[:-1])
            d[" ".join(f[5:])] = val
    return tot, d
cats = [("send","resp.sysSend"),("read","resp.sysRead"),("epoll wait","resp.(*loop).wait"),("prefetch","resp.(*loop).prefetch"),("command","node.(*Node).Exec"),("engine","engine.Store.")]
order = ["ping","gcra","fixed","slide","bucket","log","all3"]
groups = sorted({t[3:].rsplit("-", 1)[0] for t in reqs}, key=lambda g: (order.index(g.split("-")[0]) if g.split("-")[0] in order else len(order), g))
if mid:
    print(f"noise gauge: sitting median {mid:.0f} ms, tolerance {tol:.0%}")
print("alg,runs kept,us/req(cpu ticks) median (min-max)," + ",".join(c for c,_ in cats) + ",parse,other,of which scheduler (ns/request, median of kept runs)")
for a in groups:
    rows = []
    per = []
    tags = sorted(t for t in reqs if t.rsplit("-", 1)[0] == f"p5-{a}")
    kept = [t for t in tags if calm(t)]
    for tag in kept:
        n, ticks = reqs[tag]
        per.append(ticks*1e4/n)
        tot, d = cum(f"{sys.argv[2]}/{tag}.pprof")
        get = lambda pat: max([v for k,v in d.items() if pat in k and (pat != "engine.Store." or k.endswith(("Store.Throttle","Store.Limit","Store.Decide")))] or [0])
        vals = {c: get(p) for c,p in cats}
        nxt = get("resp.(*Reader).Next")
        vals["parse"] = nxt - vals["read"]
        vals["other"] = tot - (vals["send"]+vals["read"]+vals["epoll wait"]+vals["prefetch"]+vals["command"]+vals["parse"])
        vals["scheduler"] = get("runtime.findRunnable")
        rows.append({k: v*1e9/n for k,v in vals.items()})
    if not rows:
        print(f"{a},0/{len(tags)},-")
        continue
    keys = [c for c,_ in cats]+["parse","other","scheduler"]
    med = {k: statistics.median(r[k] for r in rows) for k in keys}
    print(f"{a},{len(kept)}/{len(tags)},{noise.spread(per, lambda x: f'{x:.3f}')}," + ",".join(f"{med[k]:.0f}" for k in keys))
