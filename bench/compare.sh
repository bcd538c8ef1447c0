#!/usr/bin/env bash
# Side-by-side throughput: Redis 7 + the Lua limiters of ../shared/bench, and
# rlserver with its native commands, the same redis-benchmark traffic, in one
# session. Server pinned to CPU 0 (rlserver with GOMAXPROCS=1), client on
# CPU 1. Needs Debian's redis-server and redis-tools, python3, taskset.
# Usage: bench/compare.sh   (RUNS, DURATION, SETTINGS as in redis_baseline.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HARNESS=${HARNESS:-$ROOT/../shared/bench}
OUT=${OUT:-$ROOT/bench-results}
export RUNS=${RUNS:-3} DURATION=${DURATION:-3} SETTINGS=${SETTINGS:-"50:1 50:16"}
BIN=$(mktemp -d)/rlserver
(cd "$ROOT" && go build -o "$BIN" ./cmd/rlserver)

if [ "${SKIP_REDIS:-0}" != 1 ]; then
  SERVER_CPUS=0 CLIENT_CPUS=1 TAG=redis-pinned OUT_DIR="$OUT/redis-pinned" "$HARNESS/redis_baseline.sh"
fi

PORT=${PORT:-7379}
taskset -c 0 env GOMAXPROCS=1 "$BIN" --port "$PORT" --save-interval 0 2>/dev/null &
SPID=$!
trap 'kill $SPID 2>/dev/null || true' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
# No SET: rlserver's SET stores CL.THROTTLE TATs only, and redis-benchmark's value is "xxx".
TESTS="ping_mbulk gcra fixed log slide bucket" \
START_REDIS=0 PORT=$PORT SERVER_PID=$SPID PROFILE=native CLIENT_CPUS=1 TAG=rl-pinned OUT_DIR="$OUT/rl-pinned" \
  "$HARNESS/redis_baseline.sh"
kill $SPID; wait $SPID 2>/dev/null || true
python3 "$ROOT/bench/ratios.py" "$OUT/redis-pinned/raw.csv" "$OUT/rl-pinned/raw.csv"
