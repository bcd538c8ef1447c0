#!/usr/bin/env bash
# Latency under load with and without snapshots: the same redis-benchmark
# traffic (CL.THROTTLE on up to 1M random keys, so ~1% of the keyspace
# changes between snapshots at these rates) against rlserver with
# --save-interval 0 (memory only) and 1s, interleaved, RUNS times each.
# Server pinned to CPU 0 (GOMAXPROCS=1), client to CPU 1; every run first fills
# PREFILL keys so snapshots run against a large keyspace. Prints CSV.
# Knobs: PREFILL [1000000], PORT [7411], RLSERVER_BIN. Needs Go, taskset, redis-tools.
# Usage: bench/persist_latency.sh [RUNS=3] [REQUESTS=300000] > bench/data/persist_latency.csv
#        (a smoke run: PREFILL=20000 bench/persist_latency.sh 1 5000)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-cli redis-benchmark
RUNS=${1:-3}
N=${2:-300000}
PREFILL=${PREFILL:-1000000}
PORT=${PORT:-7411}
build_rlserver
run() { # $1 = save interval
  local dir out saves
  dir=$(mktemp -d -t rlbench-data.XXXXXX)
  OWN_DIRS+=("$dir")
  start_rlserver "$PORT" 0 1 --dir "$dir" --save-interval "$1"
  taskset -c 1 redis-benchmark -h "$HOST" -p "$PORT" -c 50 -P 64 -n "$PREFILL" -r 1000000 -q \
    CL.THROTTLE k:__rand_int__ 99 100 3600 >/dev/null
  out=$(taskset -c 1 redis-benchmark -h "$HOST" -p "$PORT" -c 50 -P 1 -n "$N" -r 1000000 --csv \
    CL.THROTTLE k:__rand_int__ 99 100 3600 | tail -1)
  saves=$(redis-cli -h "$HOST" -p "$PORT" INFO persistence | awk -F: '/^rdb_saves/ {print $2}' | tr -d '\r')
  stop_server "$RL_PID"
  rm -rf "$dir"
  echo "$1,$saves,$out"
}
echo "save_interval,snapshots_during_run,test,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms"
for _ in $(seq "$RUNS"); do
  run 0
  run 1s
done
