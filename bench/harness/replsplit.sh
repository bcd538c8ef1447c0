#!/usr/bin/env bash
# replsplit.sh DIR: what replication costs a primary, from cpuprofile.sh's profiles of runs
# with a replica (REPLICA=1, or the r1 runs of REPLICAS="0 1"): for each run, ns per request
# in the pump (reading the change feed into the stream), the write path's marking and encoding
# of changes (engine.(*shard).markDirtyLocked), the link's writer (mostly its write(2)) and its
# ack reader. Needs the binaries named in DIR/runs.txt (pprof reads their symbols).
set -euo pipefail
d=$1
for f in "$d"/p5-*.pprof; do
  [ -e "$f" ] || continue
  case $f in *-r0-*) continue ;; esac # REPLICAS="0 1": the runs alone
  n=$(basename "$f" .pprof)
  reqs=$(awk -v n="$n:" '$1 == n {print $3}' "$d/runs.txt")
  bin=$(awk -v n="$n:" '$1 == n {print $NF}' "$d/runs.txt")
  go tool pprof -top -cum "$bin" "$f" 2>/dev/null | awk -v n="$n" -v r="$reqs" -v b="$(basename "$bin")" '
    function sec(x) { if (x ~ /ms$/) { sub(/ms$/, "", x); return x / 1000 } sub(/s$/, "", x); return x + 0 }
    /replication.\(\*Manager\).pump$/ { p = sec($4) }
    /engine.\(\*shard\).markDirtyLocked$/ { m = sec($4) }
    /replication.\(\*link\).run$/ { l = sec($4) }
    /replication.\(\*link\).readAcks$/ { a = sec($4) }
    END { printf "%s %s pump %.0f mark %.0f pump+mark %.0f link %.0f acks %.0f\n", n, b, p/r*1e9, m/r*1e9, (p+m)/r*1e9, l/r*1e9, a/r*1e9 }'
done
