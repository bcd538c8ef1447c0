#!/usr/bin/env bash
# Side-by-side throughput and latency: Redis 7 running the limiters as Lua scripts
# (bench/harness/lua, EVALSHA) and rlserver with its native commands get the same
# redis-benchmark traffic in one session, interleaved (a Redis run, then an rlserver
# run, ROUNDS times, each on a fresh server) so the machine's noise hits both alike.
# Server pinned to SERVER_CPUS (rlserver with GOMAXPROCS=1), client to CLIENT_CPUS.
# Every run is framed by the noise gauge; a run whose gauge strays more than GAUGE_TOL from
# the sitting's median is dropped and more rounds are run (up to REPEATS) until every setting
# and test has ROUNDS runs kept on each side. Prints the ratio tables (medians over the kept
# runs with their range and count, bench/ratios.py, also in OUT/ratios.md); every run's
# raw.csv, summary and redis-benchmark output stay under OUT.
#
# Knobs (environment), defaults in brackets:
#   ROUNDS [3]  DURATION [3] seconds per run (n calibrated by a short run first)
#   GAUGE_TOL [0.1]  REPEATS [ROUNDS] the noise check's tolerance and extra rounds, as in
#        bench/ab.sh
#   SETTINGS ["50:1 50:16"] clients:pipeline pairs   KEYSPACE [100000] random keys
#   N [] a fixed request count per run instead of DURATION (no calibration)
#   TESTS [ping_mbulk gcra fixed log slide bucket]; Redis also runs set
#   SERVER_CPUS [0] CLIENT_CPUS [1] (empty: unpinned)  RPORT [16379] PORT [7379]
#   OUT [bench-results/compare-<date>]  RLSERVER_BIN [] a built rlserver (default: build
#   this checkout)
# Needs Go, python3, taskset, Debian's redis-server and redis-tools.
# Usage: bench/compare.sh   (a smoke run: ROUNDS=1 N=20000 SETTINGS=50:16 bench/compare.sh)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-server redis-cli redis-benchmark python3
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3}
SETTINGS=${SETTINGS:-"50:1 50:16"}
KEYSPACE=${KEYSPACE:-100000}
N=${N:-}
GAUGE_TOL=${GAUGE_TOL:-0.1}
REPEATS=${REPEATS:-$ROUNDS}
# shellcheck disable=SC2034  # read by run_throughput: FLUSHALL before every run
FLUSH=1
TESTS_RL=${TESTS:-"ping_mbulk gcra fixed log slide bucket"}
# rlserver's SET takes CL.THROTTLE TATs only (redis-benchmark's value is "xxx"): Redis
# alone runs it, as a reference point.
TESTS_REDIS="ping_mbulk set ${TESTS_RL/ping_mbulk/}"
[[ " $TESTS_RL " == *" ping_mbulk "* ]] || TESTS_REDIS=$TESTS_RL
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
RPORT=${RPORT:-16379}
PORT=${PORT:-7379}
OUT=${OUT:-$ROOT/bench-results/compare-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
build_rlserver
redis_csv=() rl_csv=()
# round R: a Redis run, then an rlserver run, each on a fresh server.
round() {
  local r=$1
  start_redis "$RPORT" "$SERVER_CPUS"
  load_scripts "$RPORT"
  TESTS=$TESTS_REDIS run_throughput redis "$RPORT" "$REDIS_PID" "$OUT/redis-$r" "$r"
  stop_server "$REDIS_PID"
  redis_csv+=("$OUT/redis-$r/raw.csv")

  start_rlserver "$PORT" "$SERVER_CPUS" 1 --save-interval 0
  TESTS=$TESTS_RL run_throughput rlserver "$PORT" "$RL_PID" "$OUT/rl-$r" "$r"
  stop_server "$RL_PID"
  rl_csv+=("$OUT/rl-$r/raw.csv")
}
csvs() { echo "$(IFS=,; echo "${redis_csv[*]}")" "$(IFS=,; echo "${rl_csv[*]}")"; }
# How many kept runs the worst side still lacks (bench/ratios.py, harness/noise.py): the
# rounds the noise gauge dropped are made up for (run_rounds).
# shellcheck disable=SC2046  # two comma-joined lists, no spaces in paths under OUT
lack() { python3 "$ROOT/bench/ratios.py" --tol "$GAUGE_TOL" --short "$ROUNDS" $(csvs); }
run_rounds lack
python3 "$HARNESS/summary.py" throughput "${redis_csv[@]}" >"$OUT/redis-summary.md"
python3 "$HARNESS/summary.py" throughput "${rl_csv[@]}" >"$OUT/rl-summary.md"
hlog "raw CSVs and per-target summaries in $OUT"
# shellcheck disable=SC2046
python3 "$ROOT/bench/ratios.py" --tol "$GAUGE_TOL" $(csvs) | tee "$OUT/ratios.md"
