#!/usr/bin/env bash
# Bytes per key for each limiter: a fresh server per case (so RSS deltas compare), filled
# with KEYS_N keys through the real command (harness/fill.py | redis-cli --pipe), then
# RSS delta per key, used_memory delta per key and MEMORY USAGE on a sample of the keys.
# TARGET=rlserver (the default: native commands) or TARGET=redis (Redis 7 with the Lua
# scripts of harness/lua), the same keys and hits for both.
#
# Cases: gcra fixed slide bucket (one request per key), log1 (one admitted entry per
# key), log60 (60 entries per key, on LOG60_KEYS keys as a fill is at most 50M
# requests; the per-entry cost is (log60 - log1) / 59). Windows are one day, so nothing
# expires during the fill. Key names are 16 bytes by default (rlg:000000000042);
# NAMES=harness gives the 19-22 byte names of compare.sh (rl:gcra:000000000042).
#
# Knobs (environment), defaults in brackets: TARGET [rlserver]  KEYS_N [1000000]
#   LOG60_KEYS [500000, at most KEYS_N]  CASES [gcra fixed log1 log60 slide bucket]
#   NAMES [short]  RUNS [1]  SAMPLE [2000]  PORT [7381]  OUT [bench-results/memory-<date>]
#   RLSERVER_BIN [] a built rlserver (default: build this checkout)
# Prints the rows of memory.csv and the summary table (harness/summary.py).
# Usage: bench/memory.sh   (a smoke run: KEYS_N=10000 bench/memory.sh)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-cli python3
TARGET=${TARGET:-rlserver}
export KEYS_N=${KEYS_N:-1000000}
LOG60_KEYS=${LOG60_KEYS:-500000}
[ "$LOG60_KEYS" -gt "$KEYS_N" ] && LOG60_KEYS=$KEYS_N
CASES=${CASES:-"gcra fixed log1 log60 slide bucket"}
export NAMES=${NAMES:-short}
RUNS=${RUNS:-1}
PORT=${PORT:-7381}
OUT=${OUT:-$ROOT/bench-results/memory-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CSV=$OUT/memory.csv
case $TARGET in
  rlserver) build_rlserver ;;
  redis) need redis-server ;;
  *) die "TARGET must be rlserver or redis" ;;
esac
for run in $(seq "$RUNS"); do
  for c in $CASES; do
    if [ "$TARGET" = redis ]; then
      start_redis "$PORT"; pid=$REDIS_PID
      load_scripts "$PORT"
    else
      start_rlserver "$PORT" "" 1 --save-interval 0; pid=$RL_PID
    fi
    n=$KEYS_N
    [ "$c" = log60 ] && n=$LOG60_KEYS
    KEYS_N=$n measure_memory "$TARGET" "$PORT" "$pid" "$c" "$CSV" "$run"
    stop_server "$pid"
  done
done
cat "$CSV"
echo
python3 "$HARNESS/summary.py" memory "$CSV" | tee "$OUT/summary.md"
