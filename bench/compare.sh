#!/usr/bin/env bash
# Side-by-side throughput: Redis 7 + the Lua limiters of ../shared/bench, and
# rlserver with its native commands, the same redis-benchmark traffic, in one
# session, interleaved (Redis run, rlserver run, ROUNDS times) so machine
# noise hits both alike. Server pinned to CPU 0 (rlserver with GOMAXPROCS=1),
# client on CPU 1. Needs Debian's redis-server and redis-tools, python3,
# taskset. Prints the ratio table (medians over rounds).
# Usage: bench/compare.sh   (ROUNDS=3 DURATION=3 SETTINGS="50:1 50:16")
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HARNESS=${HARNESS:-$ROOT/../shared/bench}
OUT=${OUT:-$ROOT/bench-results/compare-$(date +%Y%m%d-%H%M%S)}
ROUNDS=${ROUNDS:-3}
export RUNS=1 DURATION=${DURATION:-3} SETTINGS=${SETTINGS:-"50:1 50:16"}
BIN=$(mktemp -d)/rlserver
(cd "$ROOT" && go build -o "$BIN" ./cmd/rlserver)
PORT=${PORT:-7379}
redis_csv=() rl_csv=()
for r in $(seq "$ROUNDS"); do
  SERVER_CPUS=0 CLIENT_CPUS=1 TAG=redis-$r OUT_DIR="$OUT/redis-$r" "$HARNESS/redis_baseline.sh" >/dev/null
  redis_csv+=("$OUT/redis-$r/raw.csv")
  taskset -c 0 env GOMAXPROCS=1 "$BIN" --port "$PORT" --save-interval 0 2>/dev/null &
  SPID=$!
  for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  # No SET: rlserver's SET stores CL.THROTTLE TATs only, and redis-benchmark's value is "xxx".
  TESTS="ping_mbulk gcra fixed log slide bucket" START_REDIS=0 PORT=$PORT SERVER_PID=$SPID PROFILE=native \
    CLIENT_CPUS=1 TAG=rl-$r OUT_DIR="$OUT/rl-$r" "$HARNESS/redis_baseline.sh" >/dev/null
  kill $SPID; wait $SPID 2>/dev/null || true
  rl_csv+=("$OUT/rl-$r/raw.csv")
done
python3 "$ROOT/bench/ratios.py" "$(IFS=,; echo "${redis_csv[*]}")" "$(IFS=,; echo "${rl_csv[*]}")"
