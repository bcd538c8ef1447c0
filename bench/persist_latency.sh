#!/usr/bin/env bash
# Latency under load with and without snapshots: the same redis-benchmark
# traffic (CL.THROTTLE on up to 1M random keys, so ~1% of the keyspace
# changes between snapshots at these rates) against rlserver with
# --save-interval 0 (memory only) and 1s, interleaved, RUNS times each.
# Needs redis-benchmark (Debian: redis-tools). Usage: bench/persist_latency.sh [RUNS] [REQUESTS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
N=${2:-300000}
PORT=${PORT:-7411}
BIN=$(mktemp -d)/rlserver
go build -o "$BIN" ./cmd/rlserver
run() { # $1 = save interval
  local dir; dir=$(mktemp -d)
  taskset -c 0 env GOMAXPROCS=1 "$BIN" --port "$PORT" --dir "$dir" --save-interval "$1" 2>/dev/null &
  local pid=$!
  for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  # Pre-fill 1M keys so snapshots run against a large keyspace.
  taskset -c 1 redis-benchmark -p "$PORT" -c 50 -P 64 -n 1000000 -r 1000000 -q CL.THROTTLE k:__rand_int__ 99 100 3600 >/dev/null
  local out
  out=$(taskset -c 1 redis-benchmark -p "$PORT" -c 50 -P 1 -n "$N" -r 1000000 --csv CL.THROTTLE k:__rand_int__ 99 100 3600 | tail -1)
  local saves
  saves=$(redis-cli -p "$PORT" info persistence | awk -F: '/^rdb_saves/ {print $2}' | tr -d '\r')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  echo "$1,$saves,$out"
}
echo "save_interval,snapshots_during_run,test,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms"
for i in $(seq "$RUNS"); do
  run 0
  run 1s
done
