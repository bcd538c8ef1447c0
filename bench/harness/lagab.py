#!/usr/bin/env python3
"""Pools the lag of several bench/replication.sh runs: an A/B of rlserver builds in one sitting.

Usage: python3 bench/harness/lagab.py DIR...

Each DIR is one replication.sh OUT, named <label>-<n> (for example old-1 new-1 old-2 new-2, the
builds alternating). rlserver's rows are grouped by label, Redis's (every DIR's) as "redis".
A row is kept if both its noise gauges are within 10% of the median gauge of all the rows, as
replsummary.py does within one run. Prints, for each load and label: rows kept of those made,
then the medians over them of p50 [its range], p90, p99, the replica's round trip p50 (all µs)
and the share of probes seen at the first EXISTS [its range].
"""
import csv, sys, statistics, collections, os
rows=[]
for d in sys.argv[1:]:
    label=os.path.basename(d.rstrip('/')).rsplit('-',1)[0]
    for r in csv.DictReader(open(d+'/lag.csv')):
        r['label']=label if r['target']=='rlserver' else 'redis'
        rows.append(r)
g=[float(r[k]) for r in rows for k in ('gauge_before_ms','gauge_after_ms')]
med=statistics.median(g)
keep=lambda r: all(abs(float(r[k])-med)<=0.10*med for k in ('gauge_before_ms','gauge_after_ms'))
cells=collections.defaultdict(list)
for r in rows:
    cells[(r['clients']+':'+r['pipeline']+':'+r['paced_rps'], r['label'])].append(r)
print("gauge median %.1f ms"%med)
print("setting,label,kept/made,p50 med [min-max],p90,p99,rtt,first%")
for (s,l),rs in sorted(cells.items()):
    k=[r for r in rs if keep(r)]
    if not k: print(s,l,"0/%d"%len(rs)); continue
    f=lambda c:[float(r[c]) for r in k]
    m=lambda c:statistics.median(f(c))
    print(f"{s},{l},{len(k)}/{len(rs)},{m('lag_p50_us'):.0f} [{min(f('lag_p50_us')):.0f}-{max(f('lag_p50_us')):.0f}],{m('lag_p90_us'):.0f},{m('lag_p99_us'):.0f},{m('replica_rtt_p50_us'):.0f},{m('first_poll_pct'):.1f} [{min(f('first_poll_pct')):.0f}-{max(f('first_poll_pct')):.0f}]")
