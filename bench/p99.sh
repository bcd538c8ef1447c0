#!/usr/bin/env bash
# c=50 P=1 tail latency, rlserver's commands against Redis's own PING (the
# issue's target: a limiter's p99 no worse than Redis's PING p99 in the same
# session). ROUNDS rounds, each: Redis PING_MBULK, then a fresh rlserver and
# its PING_MBULK and every limiter (100,000 random keys); server pinned to
# CPU 0 (rlserver GOMAXPROCS=1), client to CPU 1. Prints medians and each
# round's p99 (single p99s move by ±50% on a shared machine).
# Usage: bench/p99.sh   (ROUNDS=5 N=150000; needs redis-server, redis-benchmark)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-5}
N=${N:-150000}
RPORT=${RPORT:-7392}
PORT=${PORT:-7391}
BIN=$(mktemp -d)/rlserver
(cd "$ROOT" && go build -o "$BIN" ./cmd/rlserver)
OUT=$(mktemp)
taskset -c 0 redis-server --port "$RPORT" --save "" --appendonly no >/dev/null 2>&1 &
RPID=$!
trap 'kill $RPID 2>/dev/null || true' EXIT
for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
bench() { taskset -c 1 redis-benchmark -p "$1" -c 50 -P 1 -n "$N" --csv "${@:2}" | tail -1; }
for _ in $(seq "$ROUNDS"); do
  taskset -c 0 env GOMAXPROCS=1 "$BIN" --port "$PORT" --save-interval 0 2>/dev/null &
  SPID=$!
  for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "Redis PING_MBULK|$(bench "$RPORT" -t ping_mbulk)" >>"$OUT"
  echo "rlserver PING_MBULK|$(bench "$PORT" -t ping_mbulk)" >>"$OUT"
  echo "rlserver CL.THROTTLE|$(bench "$PORT" -r 100000 CL.THROTTLE rl:gcra:__rand_int__ 100 100 60 1)" >>"$OUT"
  echo "rlserver RL.FIXED|$(bench "$PORT" -r 100000 RL.FIXED rl:fixed:__rand_int__ 100 60s)" >>"$OUT"
  echo "rlserver RL.LOG|$(bench "$PORT" -r 100000 RL.LOG rl:log:__rand_int__ 100 60s)" >>"$OUT"
  echo "rlserver RL.SLIDE|$(bench "$PORT" -r 100000 RL.SLIDE rl:slide:__rand_int__ 100 60s)" >>"$OUT"
  echo "rlserver RL.BUCKET|$(bench "$PORT" -r 100000 RL.BUCKET rl:bucket:__rand_int__ 100 100 60s)" >>"$OUT"
  kill "$SPID"; wait "$SPID" 2>/dev/null || true
done
python3 - "$OUT" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    name, csv = l.rstrip("\n").split("|")
    f = [x.strip('"') for x in csv.split(",")]
    rows.setdefault(name, []).append((float(f[1]), float(f[4]), float(f[6])))
print("| c=50 P=1 | ops/s | p50 ms | p99 ms (median) | p99 per round |")
print("|---|---|---|---|---|")
for name, v in rows.items():
    print(f"| {name} | {statistics.median(x[0] for x in v):,.0f} | {statistics.median(x[1] for x in v):.2f} | "
          f"{statistics.median(x[2] for x in v):.2f} | {', '.join(f'{x[2]:.2f}' for x in v)} |")
PY
rm -f "$OUT"
