#!/usr/bin/env python3
"""Where a request's server CPU goes, from CPU profiles (bench/RESULTS.md, "Where a request's CPU
goes"):

  cpusplit.py RUNS PROFDIR

RUNS has one line per profile, "p5-ALG-R: reqs N cpu_ticks T ...": the requests the server
counted (INFO total_commands_processed) and its CPU ticks over the profile's window;
PROFDIR/p5-ALG-R.pprof is the server's CPU profile of that window (--pprof-addr). Prints, per
command, the median CPU per request over the runs and the ns per request in each part: the
send(2), read(2) and epoll waits of the event loop, the prefetch pass (the keys' table slots and
records brought into the cache), the command (node.Exec, the decision included), the decision
in the engine alone, RESP parsing and the rest.
"""
import subprocess, sys, re, statistics
reqs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(p5-\S+): reqs (\d+) cpu_ticks (\d+)", line)
    if m: reqs[m.group(1)] = (int(m.group(2)), int(m.group(3)))
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
algs = ["ping","gcra","fixed","slide","bucket","log","all3"]
print("alg,us/req(cpu ticks) median [min-max]," + ",".join(c for c,_ in cats) + ",parse,other (ns/request, median of runs)")
for a in algs:
    rows = []
    per = []
    for tag in sorted(t for t in reqs if t.rsplit("-", 1)[0] == f"p5-{a}"):
        n, ticks = reqs[tag]
        per.append(ticks*1e4/n)
        tot, d = cum(f"{sys.argv[2]}/{tag}.pprof")
        get = lambda pat: max([v for k,v in d.items() if pat in k and (pat != "engine.Store." or k.endswith(("Store.Throttle","Store.Limit","Store.Decide")))] or [0])
        vals = {c: get(p) for c,p in cats}
        nxt = get("resp.(*Reader).Next")
        vals["parse"] = nxt - vals["read"]
        vals["other"] = tot - (vals["send"]+vals["read"]+vals["epoll wait"]+vals["prefetch"]+vals["command"]+vals["parse"])
        rows.append({k: v*1e9/n for k,v in vals.items()})
    if not rows:
        continue
    keys = [c for c,_ in cats]+["parse","other"]
    med = {k: statistics.median(r[k] for r in rows) for k in keys}
    print(f"{a},{statistics.median(per):.3f} [{min(per):.3f}-{max(per):.3f}]," + ",".join(f"{med[k]:.0f}" for k in keys))
