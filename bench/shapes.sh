#!/usr/bin/env bash
# CL.THROTTLE in other shapes than compare.sh's, reported without a target:
# one hot key, 1,000 and 1,000,000 keys (c=50 P=16, server pinned to CPU 0
# with GOMAXPROCS=1, client on CPU 1), 100,000 keys with GOMAXPROCS=2 and
# nothing pinned, and 1,000 connections at P=1. ROUNDS rounds, shapes
# interleaved within each, a fresh server per run; prints medians of ops/s,
# p50/p99 and the server's CPU per request. Needs redis-benchmark.
# Usage: bench/shapes.sh   (ROUNDS=3)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-7388}
BIN=$(mktemp -d)/rlserver
(cd "$ROOT" && go build -o "$BIN" ./cmd/rlserver)
OUT=$(mktemp)
CMD=(CL.THROTTLE rl:__rand_int__ 100 100 60 1)
# name | server pinning | GOMAXPROCS | client pinning | redis-benchmark options
SHAPES=(
  "1 key (c=50 P=16)|taskset -c 0|1|taskset -c 1|-c 50 -P 16 -n 2000000"
  "1,000 keys (c=50 P=16)|taskset -c 0|1|taskset -c 1|-c 50 -P 16 -n 2000000 -r 1000"
  "1,000,000 keys (c=50 P=16)|taskset -c 0|1|taskset -c 1|-c 50 -P 16 -n 2000000 -r 1000000"
  "100,000 keys, GOMAXPROCS=2 unpinned (c=50 P=16)||2||-c 50 -P 16 -n 2000000 -r 100000"
  "1,000 connections (P=1, 100,000 keys)|taskset -c 0|1|taskset -c 1|-c 1000 -P 1 -n 200000 -r 100000"
)
for r in $(seq "$ROUNDS"); do
  for s in "${SHAPES[@]}"; do
    IFS='|' read -r name spin procs cpin opts <<<"$s"
    $spin env GOMAXPROCS="$procs" "$BIN" --port "$PORT" --save-interval 0 --maxclients 2000 2>/dev/null &
    SPID=$!
    for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
    t0=$(awk '{print $14+$15}' /proc/$SPID/stat)
    # shellcheck disable=SC2086
    line=$($cpin redis-benchmark -p "$PORT" $opts --csv "${CMD[@]}" | tail -1)
    t1=$(awk '{print $14+$15}' /proc/$SPID/stat)
    kill "$SPID"; wait "$SPID" 2>/dev/null || true
    echo "$name|$line|$((t1 - t0))" >> "$OUT"
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
    n = None
    rows.setdefault(name, []).append((rps, p50, p99, int(ticks) / hz))
print("| shape | ops/s | p50 ms | p99 ms | server CPU s per run |")
print("|---|---|---|---|---|")
for name, v in rows.items():
    m = [statistics.median(x[i] for x in v) for i in range(4)]
    print(f"| {name} | {m[0]:,.0f} | {m[1]:.2f} | {m[2]:.2f} | {m[3]:.2f} |")
PY
rm -f "$OUT"
