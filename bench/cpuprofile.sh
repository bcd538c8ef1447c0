#!/usr/bin/env bash
# Where a request's server CPU goes: for each round and test, a fresh rlserver (pinned to
# SERVER_CPUS, GOMAXPROCS=1, --pprof-addr) gets redis-benchmark's traffic (c=50 P=16 on
# KEYSPACE random keys, the client on CLIENT_CPUS) and, after WARMUP seconds, a CPU profile of
# SECS seconds is taken with the requests it served (INFO total_commands_processed) and its CPU
# ticks over the same window. REPLICA=1 attaches a replica (on CLIENT_CPUS) first: the
# primary's profile then shows what its replica costs it. Writes OUT/runs.txt and
# OUT/p5-<test>-<round>.pprof, then prints harness/cpusplit.py's table (ns per request in each
# part, medians over the rounds).
#
# The noise gauge (harness/noise.py) is read on SERVER_CPUS before each run's load starts and after
# it stops and the servers have settled: cpusplit.py drops a run whose gauge strays more than GAUGE_TOL from the sitting's
# median and says how many were kept. BINS and REPLICAS alternate variants within each round, so
# an A/B or an alone/with-a-replica comparison is one sitting.
#
# Knobs (environment), defaults in brackets:
#   ROUNDS [3]  TESTS [ping gcra fixed slide bucket log]  KEYSPACE [100000]  SECS [6]  WARMUP [2]
#   RATE [] commands a second: the load is bench/cmd/pacedload at that rate (c=50 P=16, the
#        same line) instead of redis-benchmark as fast as the server answers, so that two
#        configurations (REPLICA=0 and 1) are measured at the same load
#   FLAGS ["--save-interval 0"] the profiled server's flags (e.g. "--save-interval 1s": what
#        snapshots cost)
#   REPLICA [0]  SERVER_CPUS [0]  CLIENT_CPUS [1]  PORT [7379] PORT2 [7380] PPROF [6061]
#   RLSERVER_BIN [] a built rlserver (default: build this checkout)  OUT [bench-results/cpu-<date>]
#   BINS [] several built rlservers, alternated in every round (labelled b1, b2, ... in order)
#   REPLICAS [$REPLICA] "0 1" alternates a primary alone and with a replica (labelled r0, r1)
#   GAUGE_TOL [0.10] the noise check's tolerance, a fraction of the sitting's median gauge
# TESTS=log's line (RL.LOG k 100 60s, about six calls a key a second) has phases: every call admitted
# for 17 s, none for 43 s, then from 60 s on nine in ten again for about 20 s, and so on each
# minute. A window's writes, and so what snapshots cost in it, depend on where WARMUP puts it
# (bench/RESULTS.md, "RL.LOG's load has phases").
# Needs Go, curl, python3, taskset and Debian's redis-tools.
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-cli redis-benchmark curl python3
ROUNDS=${ROUNDS:-3}
TESTS=${TESTS:-"ping gcra fixed slide bucket log"}
KEYSPACE=${KEYSPACE:-100000}
SECS=${SECS:-6}
WARMUP=${WARMUP:-2}
REPLICA=${REPLICA:-0}
FLAGS=${FLAGS:---save-interval 0}
read -r -a FLAGS_V <<<"$FLAGS"
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
PORT=${PORT:-7379}
PORT2=${PORT2:-7380}
PPROF=${PPROF:-6061}
OUT=${OUT:-$ROOT/bench-results/cpu-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPLICAS=${REPLICAS:-$REPLICA}
if [ -n "${BINS:-}" ]; then
  read -r -a BINS_V <<<"$BINS"
  for b in "${BINS_V[@]}"; do [ -x "$b" ] || die "BINS: $b is not an executable"; done
else
  build_rlserver
  BINS_V=("$RLSERVER")
fi
read -r -a REPLICAS_V <<<"$REPLICAS"
RATE=${RATE:-}
[ -z "$RATE" ] || build_cmd pacedload
served() { redis-cli -h "$HOST" -p "$1" INFO stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" {print $2}'; }
: >"$OUT/runs.txt"
for r in $(seq "$ROUNDS"); do
  for t in $TESTS; do
    if [ "$t" = ping ]; then line=PING; else line=$(limiter_cmd rlserver "$t" bench); fi
    for bi in "${!BINS_V[@]}"; do
      for rep in "${REPLICAS_V[@]}"; do
        RLSERVER=${BINS_V[$bi]}
        label=$t
        [ "${#BINS_V[@]}" -gt 1 ] && label+="-b$((bi + 1))"
        [ "${#REPLICAS_V[@]}" -gt 1 ] && label+="-r$rep"
        start_rlserver "$PORT" "$SERVER_CPUS" 1 "${FLAGS_V[@]}" --pprof-addr "$HOST:$PPROF"
        pid=$RL_PID
        if [ "$rep" = 1 ]; then
          start_rlserver "$PORT2" "$CLIENT_CPUS" 1 --save-interval 0 --replicaof "$HOST $PORT"
          rpid=$RL_PID
          wait_link "$PORT2"
        fi
        g0=$(gauge_ms)
        # shellcheck disable=SC2086
        start_load "$PORT" 50 16 "$RATE" /dev/null $line
        load=$LOAD_PID
        sleep "$WARMUP"
        c0=$(proc_ticks "$pid") n0=$(served "$PORT")
        curl -sf -o "$OUT/p5-$label-$r.pprof" "http://$HOST:$PPROF/debug/pprof/profile?seconds=$SECS" || die "no profile from $HOST:$PPROF"
        c1=$(proc_ticks "$pid") n1=$(served "$PORT")
        kill "$load" 2>/dev/null; wait "$load" 2>/dev/null || true
        settle "$pid"
        [ "$rep" = 1 ] && settle "$rpid"
        g1=$(gauge_ms)
        [ "$rep" = 1 ] && stop_server "$rpid"
        stop_server "$pid"
        echo "p5-$label-$r: reqs $((n1 - n0)) cpu_ticks $((c1 - c0)) gauge_ms $g0 $g1 bin ${BINS_V[$bi]}" | tee -a "$OUT/runs.txt" >&2
      done
    done
  done
done
GAUGE_TOL=${GAUGE_TOL:-0.10} python3 "$HARNESS/cpusplit.py" "$OUT/runs.txt" "$OUT"
