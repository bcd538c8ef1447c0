#!/usr/bin/env bash
# Replication side by side: Redis 7 + one replica running a limiter as a Lua script
# (EVALSHA; Redis 7 replicates its effects) and rlserver + one replica with the native
# command, in one session, interleaved round by round. For each target and round:
#   1. throughput of the primary alone, then with a replica attached (redis-benchmark,
#      SETTINGS, TESTS): the cost of one replica is the ratio;
#   2. replication lag under load (the same command at each of LAG_SETTINGS: c:P sent
#      by redis-benchmark as fast as the primary answers, c:P:rate paced by
#      bench/cmd/pacedload to rate commands a second, the same load for both targets):
#      bench/cmd/repllag writes PROBES probe keys on the primary, one at a
#      time, and times each until EXISTS answers 1 on the replica (p50/p90/p99/max, an
#      upper bound including one replica round trip, printed too), and the load's rate;
#   3. full sync: the primary filled with KEYS keys (harness/fill.py), a replica started,
#      the time until its link is up with every key (Redis: diskless sync, no delay).
# Primaries pinned to SERVER_CPUS (rlserver with GOMAXPROCS=1), clients to CLIENT_CPUS, replicas
# to REPLICA_CPUS (CLIENT_CPUS unless set). Every throughput and lag run is framed by the noise
# gauge (on SERVER_CPUS, the servers idle); the summary drops a run whose gauge strays more than
# GAUGE_TOL (0.10) from the sitting's median and prints, for each cell, the runs kept. Prints CSV
# tables; raw files stay under OUT.
#
# Knobs (environment), defaults in brackets:
#   ROUNDS [3]  DURATION [3]  SETTINGS ["50:16"]  LAG_SETTINGS ["50:16 50:1"] (c:P:rate paces)
#   TESTS [gcra bucket]  KEYSPACE [100000]
#   PROBES [2000]  KEYS [1000000]  SERVER_CPUS [0]  CLIENT_CPUS [1]  REPLICA_CPUS [CLIENT_CPUS]
#   RPORT [16379] RPORT2 [16380] PORT [7379] PORT2 [7380]  OUT [bench-results/replication-<date>]
#   TARGETS ["redis rlserver"]  RLSERVER_BIN [] a built rlserver (default: build this checkout)
# Needs Go, python3, taskset, Debian's redis-server and redis-tools.
# Usage: bench/replication.sh   (a smoke run: ROUNDS=1 DURATION=1 PROBES=200 KEYS=100000 bench/replication.sh)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-server redis-cli redis-benchmark python3
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3}
SETTINGS=${SETTINGS:-"50:16"}
LAG_SETTINGS=${LAG_SETTINGS:-"50:16 50:1"}
TESTS=${TESTS:-"gcra bucket"}
KEYSPACE=${KEYSPACE:-100000}
PROBES=${PROBES:-2000}
KEYS=${KEYS:-1000000}
N=${N:-}
# shellcheck disable=SC2034  # read by run_throughput
FLUSH=1
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
REPLICA_CPUS=${REPLICA_CPUS-$CLIENT_CPUS}
RPORT=${RPORT:-16379}
RPORT2=${RPORT2:-16380}
PORT=${PORT:-7379}
PORT2=${PORT2:-7380}
OUT=${OUT:-$ROOT/bench-results/replication-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
build_rlserver
build_cmd repllag
build_cmd pacedload

# calls PORT: limiter calls so far, the load's and the probes' (INFO commandstats: EVALSHA
# on Redis, whose total counts the scripts' inner calls too; the limiter on rlserver).
calls() {
  redis-cli -h "$HOST" -p "$1" INFO commandstats | tr -d '\r' |
    awk -F'[:=,]' '$1 ~ /^cmdstat_(evalsha|cl\.throttle|rl\.)/ {n += $3} END {print n + 0}'
}


# primary TARGET: start the primary; sets P_PID and P_PORT.
primary() {
  if [ "$1" = redis ]; then
    start_redis "$RPORT" "$SERVER_CPUS" --repl-diskless-sync yes --repl-diskless-sync-delay 0
    load_scripts "$RPORT"
    P_PID=$REDIS_PID P_PORT=$RPORT
  else
    start_rlserver "$PORT" "$SERVER_CPUS" 1 --save-interval 0
    P_PID=$RL_PID P_PORT=$PORT
  fi
}

# replica TARGET: start a replica of the primary; sets R_PID and R_PORT.
replica() {
  if [ "$1" = redis ]; then
    start_redis "$RPORT2" "$REPLICA_CPUS" --replicaof "$HOST" "$RPORT"
    R_PID=$REDIS_PID R_PORT=$RPORT2
  else
    start_rlserver "$PORT2" "$REPLICA_CPUS" 1 --save-interval 0 --replicaof "$HOST $PORT"
    R_PID=$RL_PID R_PORT=$PORT2
  fi
}

LAG_CSV=$OUT/lag.csv SYNC_CSV=$OUT/fullsync.csv
echo "round,target,test,clients,pipeline,paced_rps,load_rps,probes,lag_p50_us,lag_p90_us,lag_p99_us,lag_max_us,replica_rtt_p50_us,first_poll_pct,gauge_before_ms,gauge_after_ms" >"$LAG_CSV"
echo "round,target,keys,fill_s,sync_s,replica_keys" >"$SYNC_CSV"
for r in $(seq "$ROUNDS"); do
  for target in ${TARGETS:-redis rlserver}; do
    primary "$target"
    run_throughput "$target" "$P_PORT" "$P_PID" "$OUT/$target-alone" "$r"
    replica "$target"
    wait_link "$R_PORT"
    run_throughput "$target" "$P_PORT" "$P_PID" "$OUT/$target-replica" "$r"
    for s in $LAG_SETTINGS; do
      for t in $TESTS; do
        line=$(limiter_cmd "$target" "$t" bench)
        # The load: the same traffic as above, for as long as the probes take; its rate
        # from the primary's command count.
        IFS=: read -r lc lp lrate <<<"$s"
        g0=$(gauge_ms)
        # shellcheck disable=SC2086
        start_load "$P_PORT" "$lc" "$lp" "$lrate" "$OUT/paced-$target-$t-$s-$r.txt" $line
        load=$LOAD_PID
        sleep 0.5
        c0=$(calls "$P_PORT") t0=$(date +%s.%N)
        probe=${line/rl:$t:__rand_int__/\{key\}}
        row=$("$BIN_repllag" -primary "$HOST:$P_PORT" -replica "$HOST:$R_PORT" -write "$probe" -n "$PROBES")
        c1=$(calls "$P_PORT") t1=$(date +%s.%N)
        kill "$load" 2>/dev/null; wait "$load" 2>/dev/null || true
        settle "$P_PID"
        g1=$(gauge_ms)
        rps=$(awk -v a="$c0" -v b="$c1" -v x="$t0" -v y="$t1" 'BEGIN {printf "%.0f", (b - a) / (y - x)}')
        echo "$r,$target,$t,$lc,$lp,${lrate:-max},$rps,$row,$g0,$g1" >>"$LAG_CSV"
        hlog "$target round $r $t at $s ($rps ops/s) lag: $row"
      done
    done
    stop_server "$R_PID"
    # Full sync of KEYS keys.
    redis-cli -h "$HOST" -p "$P_PORT" FLUSHALL >/dev/null
    fill=$(limiter_cmd "$target" gcra memory)
    t0=$(date +%s.%N)
    python3 "$HARNESS/fill.py" "$fill" "$KEYS" 1 | redis-cli -h "$HOST" -p "$P_PORT" --pipe >"$OUT/fill-$target-$r.log" 2>&1
    t1=$(date +%s.%N)
    replica "$target"
    wait_link "$R_PORT"
    t2=$(date +%s.%N)
    echo "$r,$target,$KEYS,$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}'),$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.2f", b - a}'),$(dbsize "$R_PORT")" >>"$SYNC_CSV"
    hlog "$target round $r: full sync of $KEYS keys in $(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.2f", b - a}') s"
    stop_server "$R_PID"
    stop_server "$P_PID"
  done
done
python3 "$HARNESS/replsummary.py" "$OUT"
