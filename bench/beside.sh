#!/usr/bin/env bash
# What waits beside the request traffic: while a paced load (c=50 P=16, RATE commands a second of
# the limiter line) runs against a primary with one replica, how soon a new connection gets its
# first reply, how long WAIT 1 takes after a write (bench/cmd/beside), and, for rlserver, one
# caller's ShouldRateLimit on the Envoy front (bench/cmd/rlsload -c 1 -conns 1 -rate 500).
# Redis and each rlserver of BINS alternate in every round, on fresh servers: primary on
# SERVER_CPUS (rlserver with GOMAXPROCS=1, as the other scripts run it), replica, load and probes on
# CLIENT_CPUS. Writes OUT/runs.csv (one line a probe kind a run, with the noise gauge before
# and after) and prints the medians over the rounds, with their range.
#
# Knobs (environment), defaults in brackets:
#   BINS [this checkout] rlserver builds, labelled by their path
#   ROUNDS [3]  RATE [20000]  PROBES [500]  TEST [gcra]  KEYSPACE [100000]
#   TARGETS ["redis rlserver"]  SERVER_CPUS [0] CLIENT_CPUS [1]
#   RPORT [16379] RPORT2 [16380] PORT [7379] PORT2 [7380] RLSPORT [18081]  OUT [bench-results/beside-<date>]
# Needs Go, python3, taskset, Debian's redis-server and redis-tools.
# Usage: bench/beside.sh   (a smoke run: ROUNDS=1 PROBES=50 bench/beside.sh)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-server redis-cli python3
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-20000}
PROBES=${PROBES:-500}
TEST=${TEST:-gcra}
KEYSPACE=${KEYSPACE:-100000}
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
RPORT=${RPORT:-16379}
RPORT2=${RPORT2:-16380}
PORT=${PORT:-7379}
PORT2=${PORT2:-7380}
RLSPORT=${RLSPORT:-18081}
OUT=${OUT:-$ROOT/bench-results/beside-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -z "${BINS:-}" ]; then build_rlserver; BINS=$RLSERVER; fi
build_cmd beside
build_cmd rlsload
build_cmd pacedload

CONF=$(mktemp -d -t rlbench-conf.XXXXXX)
OWN_DIRS+=("$CONF")
mkdir -p "$CONF/ratelimit/config"
cat >"$CONF/ratelimit/config/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100000000}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 1000000000}
YAML

CSV=$OUT/runs.csv
echo "round,target,probe,probes,p50_us,p90_us,p99_us,max_us,gauge_before_ms,gauge_after_ms" >"$CSV"
row() { echo "$1,$2,$3,$4,$5" >>"$CSV"; hlog "round $1 $2: $3"; }

for r in $(seq "$ROUNDS"); do
  for target in ${TARGETS:-redis rlserver}; do
    bins=("")
    [ "$target" = redis ] || read -r -a bins <<<"$BINS"
    for bin in "${bins[@]}"; do
      g0=$(gauge_ms)
      if [ "$target" = redis ]; then
        start_redis "$RPORT" "$SERVER_CPUS"
        load_scripts "$RPORT"
        P_PID=$REDIS_PID P_PORT=$RPORT label=redis
        start_redis "$RPORT2" "$CLIENT_CPUS" --replicaof "$HOST" "$RPORT"
        R_PID=$REDIS_PID R_PORT=$RPORT2
      else
        RLSERVER=$bin label=$bin
        start_rlserver "$PORT" "$SERVER_CPUS" 1 --save-interval 0 --rls-addr "$HOST:$RLSPORT" \
          --rls-config "$CONF/ratelimit/config"
        P_PID=$RL_PID P_PORT=$PORT
        start_rlserver "$PORT2" "$CLIENT_CPUS" 1 --save-interval 0 --replicaof "$HOST $PORT"
        R_PID=$RL_PID R_PORT=$PORT2
      fi
      wait_link "$R_PORT"
      line=$(limiter_cmd "$target" "$TEST" bench)
      # shellcheck disable=SC2086
      start_load "$P_PORT" 50 16 "$RATE" "$OUT/load-$r-$(basename "$label").txt" $line
      load=$LOAD_PID
      sleep 0.5
      c=$($(pin "$CLIENT_CPUS") "$BIN_beside" -addr "$HOST:$P_PORT" -mode connect -n "$PROBES")
      w=$($(pin "$CLIENT_CPUS") "$BIN_beside" -addr "$HOST:$P_PORT" -mode wait -n "$PROBES")
      g=""
      if [ "$target" != redis ]; then
        g=$($(pin "$CLIENT_CPUS") "$BIN_rlsload" -addr "$HOST:$RLSPORT" -c 1 -conns 1 -rate 500 \
          -duration "$((PROBES / 500 + 1))s")
      fi
      kill "$load" 2>/dev/null; wait "$load" 2>/dev/null || true
      stop_server "$R_PID"
      stop_server "$P_PID"
      g1=$(gauge_ms)
      row "$r" "$label" "$c" "$g0" "$g1"
      row "$r" "$label" "$w" "$g0" "$g1"
      if [ -n "$g" ]; then
        # rlsload's key=value line as beside's CSV: calls, then p50/p90/p99 (ms -> µs); no max.
        g=$(awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
          printf "grpc,%d,%.0f,%.0f,%.0f,", v["calls"], v["p50_ms"] * 1000, v["p90_ms"] * 1000, v["p99_ms"] * 1000}' <<<"$g")
        row "$r" "$label" "$g" "$g0" "$g1"
      fi
    done
  done
done

python3 - "$CSV" <<'PY' | tee "$OUT/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
gauges = [float(r[k]) for r in rows for k in ("gauge_before_ms", "gauge_after_ms")]
print("noise gauge: median %.1f ms, range %.1f-%.1f" % (statistics.median(gauges), min(gauges), max(gauges)))
print("| target | probe | runs | p50 µs | p90 µs | p99 µs |")
print("|---|---|---|---|---|---|")
keys = sorted({(r["target"], r["probe"]) for r in rows}, key=lambda k: (k[1], k[0]))
for t, p in keys:
    rs = [r for r in rows if r["target"] == t and r["probe"] == p]
    cell = lambda f: "%d [%d-%d]" % (statistics.median(int(r[f]) for r in rs), min(int(r[f]) for r in rs), max(int(r[f]) for r in rs))
    print("| %s | %s | %d | %s | %s | %s |" % (t, p, len(rs), cell("p50_us"), cell("p90_us"), cell("p99_us")))
PY
