#!/usr/bin/env bash
# CL.THROTTLE in other shapes than compare.sh's, reported without a target:
# one hot key, 1,000 and 1,000,000 keys (c=50 P=16, server pinned to CPU 0
# with GOMAXPROCS=1, client on CPU 1), 100,000 keys with GOMAXPROCS=2 and
# nothing pinned, and 1,000 connections at P=1. ROUNDS rounds, shapes
# interleaved within each, a fresh server per run; prints medians of ops/s,
# p50/p99 and the server's CPU per run.
# Knobs: ROUNDS [3], N [2000000] requests per P=16 run (the 1,000-connection run
# takes a tenth), PORT [7388], RLSERVER_BIN. Needs Go, python3, taskset, redis-tools.
# Usage: bench/shapes.sh   (a smoke run: ROUNDS=1 N=50000 bench/shapes.sh)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-cli redis-benchmark python3
ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
PORT=${PORT:-7388}
build_rlserver
OUT=$(mktemp)
OWN_DIRS+=("$OUT")
CMD=(CL.THROTTLE rl:__rand_int__ 100 100 60 1)
# name | server CPUs | GOMAXPROCS | client CPUs | redis-benchmark options
SHAPES=(
  "1 key (c=50 P=16)|0|1|1|-c 50 -P 16 -n $N"
  "1,000 keys (c=50 P=16)|0|1|1|-c 50 -P 16 -n $N -r 1000"
  "1,000,000 keys (c=50 P=16)|0|1|1|-c 50 -P 16 -n $N -r 1000000"
  "100,000 keys, GOMAXPROCS=2 unpinned (c=50 P=16)||2||-c 50 -P 16 -n $N -r 100000"
  "1,000 connections (P=1, 100,000 keys)|0|1|1|-c 1000 -P 1 -n $((N / 10)) -r 100000"
)
for _ in $(seq "$ROUNDS"); do
  for s in "${SHAPES[@]}"; do
    IFS='|' read -r name scpus procs ccpus opts <<<"$s"
    start_rlserver "$PORT" "$scpus" "$procs" --save-interval 0 --maxclients 2000
    t0=$(proc_ticks "$RL_PID")
    # shellcheck disable=SC2086
    line=$($(pin "$ccpus") redis-benchmark -h "$HOST" -p "$PORT" $opts --csv "${CMD[@]}" | tail -1)
    t1=$(proc_ticks "$RL_PID")
    stop_server "$RL_PID"
    echo "$name|$line|$((t1 - t0))" >>"$OUT"
  done
done
python3 - "$OUT" <<'PY'
import statistics, sys, os
rows = {}
hz = os.sysconf("SC_CLK_TCK")
for l in open(sys.argv[1]):
    name, csv, ticks = l.rstrip("\n").split("|")
    f = [x.strip('"') for x in csv.split(",")]
    rps, p50, p99 = float(f[1]), float(f[4]), float(f[6])
    rows.setdefault(name, []).append((rps, p50, p99, int(ticks) / hz))
print("| shape | ops/s | p50 ms | p99 ms | server CPU s per run |")
print("|---|---|---|---|---|")
for name, v in rows.items():
    m = [statistics.median(x[i] for x in v) for i in range(4)]
    print(f"| {name} | {m[0]:,.0f} | {m[1]:.2f} | {m[2]:.2f} | {m[3]:.2f} |")
PY
