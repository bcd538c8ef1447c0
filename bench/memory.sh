#!/usr/bin/env bash
# Bytes per key for each limiter on rlserver: a fresh server per case (so
# RSS deltas are comparable), filled through the real commands by
# ../shared/bench/redis_memory.sh (PROFILE=native). Compare with the same
# script run against Redis + Lua (START_REDIS=1, the default there).
# Usage: bench/memory.sh   (KEYS_N=1000000 RUNS=1 by default)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HARNESS=${HARNESS:-$ROOT/../shared/bench}
OUT=${OUT:-$ROOT/bench-results}
export KEYS_N=${KEYS_N:-1000000} RUNS=${RUNS:-1}
BIN=$(mktemp -d)/rlserver
(cd "$ROOT" && go build -o "$BIN" ./cmd/rlserver)
PORT=${PORT:-7381}
for c in ${CASES:-gcra fixed log1 log60 slide bucket}; do
  GOMAXPROCS=1 "$BIN" --port "$PORT" --save-interval 0 2>/dev/null &
  SPID=$!
  for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  START_REDIS=0 PORT=$PORT SERVER_PID=$SPID PROFILE=native CASES=$c TAG=rl-memory-$c OUT_DIR="$OUT/rl-memory-$c" \
    "$HARNESS/redis_memory.sh" || true
  kill "$SPID"; wait "$SPID" 2>/dev/null || true
done
for c in ${CASES:-gcra fixed log1 log60 slide bucket}; do
  cat "$OUT/rl-memory-$c/memory.csv" 2>/dev/null | tail -n +2
done
