#!/usr/bin/env bash
# Envoy's rate limit service side by side: envoyproxy/ratelimit backed by redis-server (two
# processes) and rlserver's --rls-addr (one), the same configuration (a user limit and a tenant
# limit, both high enough to admit every call, so both sides do the same work), the same
# two-descriptor ShouldRateLimit calls from bench/cmd/rlsload. Alternating an upstream and an
# rlserver run, each on fresh servers, ROUNDS times: first unpaced (decisions per CPU-second of
# the service's processes together, and the calls a second), then both paced to PACE of
# upstream's median unpaced rate (latency at equal load). Servers pinned to SERVER_CPUS, the load
# generator to CLIENT_CPUS. Every run prints its noise gauge (a fixed CPU loop timed before and
# after, bench/cmd/rlsload).
#
# Knobs (environment), defaults in brackets:
#   ROUNDS [5]  DURATION [5] seconds per run  C [50] callers  CONNS [4] gRPC connections
#   PACE [0.5]  SERVER_CPUS [0] CLIENT_CPUS [1]  RPORT [16379] UPORT [18081] RLPORT [17379]
#   RLSPORT [18091]  UPSTREAM_BIN [] envoyproxy/ratelimit's service_cmd (default: go install it)
#   OUT [bench-results/rls-<date>]
# Needs Go, taskset, Debian's redis-server and redis-tools.
# Usage: bench/rls.sh   (a smoke run: ROUNDS=1 DURATION=1 bench/rls.sh)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-server redis-cli
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
C=${C:-50}
CONNS=${CONNS:-4}
PACE=${PACE:-0.5}
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
RPORT=${RPORT:-16379}
UPORT=${UPORT:-18081}
RLPORT=${RLPORT:-17379}
RLSPORT=${RLSPORT:-18091}
UPSTREAM_VERSION=v1.4.1-0.20260122083618-3fb702589d36
OUT=${OUT:-$ROOT/bench-results/rls-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
build_rlserver

if [ -z "${UPSTREAM_BIN:-}" ]; then
  d=$(mktemp -d -t rlbench-upstream.XXXXXX)
  OWN_DIRS+=("$d")
  hlog "building envoyproxy/ratelimit $UPSTREAM_VERSION"
  GOBIN=$d go install "github.com/envoyproxy/ratelimit/src/service_cmd@$UPSTREAM_VERSION" || die "go install envoyproxy/ratelimit failed"
  UPSTREAM_BIN=$d/service_cmd
fi
build_cmd rlsload

# The configuration, in upstream's layout (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config); rlserver
# reads the same directory.
CONF=$(mktemp -d -t rlbench-conf.XXXXXX)
OWN_DIRS+=("$CONF")
mkdir -p "$CONF/ratelimit/config"
cat >"$CONF/ratelimit/config/bench.yaml" <<'EOF'
domain: bench
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100000000}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 1000000000}
EOF

# load ADDR LABEL PIDS [RATE]: one rlsload run, its line appended to OUT/runs.txt.
load() {
  local line
  line=$($(pin "$CLIENT_CPUS") "$BIN_rlsload" -addr "$1" -label "$2" -pids "$3" -c "$C" -conns "$CONNS" \
    -duration "${DURATION}s" ${4:+-rate "$4"}) || die "rlsload against $1 failed"
  echo "$line" | tee -a "$OUT/runs.txt" >&2
}

# ready ADDR PID: until the service answers a call, or die if the process exits.
ready() {
  for _ in $(seq 200); do
    "$BIN_rlsload" -addr "$1" -duration 1ms -c 1 -conns 1 >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || die "the service on $1 (pid $2) exited at start"
    sleep 0.05
  done
  die "the service on $1 did not answer within 10 s"
}

start_upstream() {
  start_redis "$RPORT" "$SERVER_CPUS"
  $(pin "$SERVER_CPUS") env USE_STATSD=false LOG_LEVEL=warn REDIS_SOCKET_TYPE=tcp REDIS_URL="$HOST:$RPORT" \
    RUNTIME_ROOT="$CONF" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false \
    HOST="$HOST" PORT=$((UPORT + 1)) GRPC_HOST="$HOST" GRPC_PORT="$UPORT" DEBUG_HOST="$HOST" DEBUG_PORT=$((UPORT + 2)) \
    "$UPSTREAM_BIN" >"$OUT/upstream.log" 2>&1 &
  UP_PID=$!
  OWN_PIDS+=("$UP_PID")
  ready "$HOST:$UPORT" "$UP_PID"
}

start_rl() {
  start_rlserver "$RLPORT" "$SERVER_CPUS" "" --save-interval 0 --rls-addr "$HOST:$RLSPORT" --rls-config "$CONF/ratelimit/config"
  ready "$HOST:$RLSPORT" "$RL_PID"
}

: >"$OUT/runs.txt"
for r in $(seq "$ROUNDS"); do
  start_upstream
  load "$HOST:$UPORT" "upstream-unpaced-$r" "$UP_PID,$REDIS_PID"
  stop_server "$UP_PID"; stop_server "$REDIS_PID"
  start_rl
  load "$HOST:$RLSPORT" "rlserver-unpaced-$r" "$RL_PID"
  stop_server "$RL_PID"
done
RATE=$(python3 -c '
import re, statistics, sys
v = [float(m.group(1)) for l in open(sys.argv[1]) if "label=upstream-unpaced" in l for m in [re.search(r"calls_per_sec=(\S+)", l)]]
print(round(statistics.median(v) * float(sys.argv[2])))' "$OUT/runs.txt" "$PACE")
hlog "paced runs at $RATE calls/s ($PACE of upstream's median)"
for r in $(seq "$ROUNDS"); do
  start_rl
  load "$HOST:$RLSPORT" "rlserver-paced-$r" "$RL_PID" "$RATE"
  stop_server "$RL_PID"
  start_upstream
  load "$HOST:$UPORT" "upstream-paced-$r" "$UP_PID,$REDIS_PID" "$RATE"
  stop_server "$UP_PID"; stop_server "$REDIS_PID"
done
python3 "$HARNESS/rlssummary.py" "$OUT/runs.txt" | tee "$OUT/summary.txt"
