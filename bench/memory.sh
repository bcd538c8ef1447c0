#!/usr/bin/env bash
# Bytes per key for each limiter on rlserver: a fresh server per case (so
# RSS deltas are comparable), filled through the real commands by
# ../shared/bench/redis_memory.sh (PROFILE=native). Compare with the same
# script run against Redis + Lua (START_REDIS=1, the default there).
# Key names are 16 bytes by default (rlg:000000000042, the issue's 10-16
# byte range at its top); NAMES=harness keeps the harness's 20-22 byte
# names (rl:gcra:000000000042).
# Usage: bench/memory.sh   (KEYS_N=1000000 RUNS=1 NAMES=short by default)
set -euo pipefail
if [ "${NAMES:-short}" = short ]; then
  export MCMD_gcra='CL.THROTTLE rlg:__rand_int__ 100 100 86400 1'
  export MCMD_fixed='RL.FIXED rlf:__rand_int__ 100 1d'
  export MCMD_log='RL.LOG rll:__rand_int__ 100 1d'
  export MCMD_slide='RL.SLIDE rls:__rand_int__ 100 1d'
  export MCMD_bucket='RL.BUCKET rlb:__rand_int__ 100 100 1d'
fi
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
  n=$KEYS_N
  # The harness fills at most 50M requests: log60 (60 per key) on fewer keys.
  [ "$c" = log60 ] && n=${LOG60_KEYS:-500000}
  KEYS_N=$n START_REDIS=0 PORT=$PORT SERVER_PID=$SPID PROFILE=native CASES=$c TAG=rl-memory-$c OUT_DIR="$OUT/rl-memory-$c" \
    "$HARNESS/redis_memory.sh" || true
  kill "$SPID"; wait "$SPID" 2>/dev/null || true
done
for c in ${CASES:-gcra fixed log1 log60 slide bucket}; do
  cat "$OUT/rl-memory-$c/memory.csv" 2>/dev/null | tail -n +2
done
