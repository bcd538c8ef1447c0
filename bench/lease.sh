#!/usr/bin/env bash
# Concurrency slots side by side (issue 28): a slot taken and given back on rlserver
# (RL.ACQUIRE, then RL.RELEASE ANY) against one RL.FIXED call, and against the same slot on
# Redis 7 with the usual sorted-set semaphore in two Lua scripts (bench/cmd/leaseload: the
# scripts, the keys, the pipelining). Each round starts fresh servers and runs, one after the
# other, Redis's semaphore, then rlserver's RL.FIXED and its slots, so the machine's noise hits
# all alike; ROUNDS times. Servers pinned to SERVER_CPUS (rlserver with GOMAXPROCS=1), the load
# generator to CLIENT_CPUS. Prints the server CPU per unit (median, range) and the ratios per
# round; every run's line, with its noise gauge, stays in OUT/runs.txt.
#
# Knobs (environment), defaults in brackets:
#   ROUNDS [5]  DURATION [3] seconds per run  C [50] connections  P [16] units per round trip
#   KEYS [100000]  SERVER_CPUS [0] CLIENT_CPUS [1]  RPORT [16379] PORT [7379]
#   OUT [bench-results/lease-<date>]  RLSERVER_BIN [] a built rlserver (default: build this checkout)
# Needs Go, python3, taskset, Debian's redis-server and redis-tools.
# Usage: bench/lease.sh   (a smoke run: ROUNDS=1 DURATION=1 bench/lease.sh)
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-server redis-cli python3
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
C=${C:-50}
P=${P:-16}
KEYS=${KEYS:-100000}
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
RPORT=${RPORT:-16379}
PORT=${PORT:-7379}
OUT=${OUT:-$ROOT/bench-results/lease-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
build_rlserver
build_cmd leaseload

# load PORT PID MODE LABEL: one leaseload run, its line appended to OUT/runs.txt.
load() {
  local line
  line=$($(pin "$CLIENT_CPUS") "$BIN_leaseload" -addr "$HOST:$1" -pid "$2" -mode "$3" -label "$4" \
    -c "$C" -p "$P" -keys "$KEYS" -duration "${DURATION}s") || die "leaseload $3 against $1 failed"
  echo "$line" | tee -a "$OUT/runs.txt" >&2
}

: >"$OUT/runs.txt"
for r in $(seq "$ROUNDS"); do
  start_redis "$RPORT" "$SERVER_CPUS"
  load "$RPORT" "$REDIS_PID" zset "redis-zset-$r"
  stop_server "$REDIS_PID"
  start_rlserver "$PORT" "$SERVER_CPUS" 1 --save-interval 0
  load "$PORT" "$RL_PID" fixed "rlserver-fixed-$r"
  load "$PORT" "$RL_PID" lease "rlserver-lease-$r"
  stop_server "$RL_PID"
done
python3 - "$OUT/runs.txt" <<'PY' | tee "$OUT/summary.txt"
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split())
    side, rnd = f["label"].rsplit("-", 1)
    runs.setdefault(side, {})[rnd] = f
def med(xs): return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"
us = {s: {r: float(f["us_cpu_per_unit"]) for r, f in v.items()} for s, v in runs.items()}
print("| | units/s (median) | server CPU µs per unit: median (range) |")
print("|---|---|---|")
for s in ("redis-zset", "rlserver-fixed", "rlserver-lease"):
    ups = statistics.median(float(f["units_per_sec"]) for f in runs[s].values())
    print(f"| {s} | {ups:,.0f} | {med(list(us[s].values()))} |")
rounds = sorted(us["rlserver-lease"])
lf = [us["rlserver-lease"][r] / us["rlserver-fixed"][r] for r in rounds]
zl = [us["redis-zset"][r] / us["rlserver-lease"][r] for r in rounds]
print()
print(f"slot (acquire + release) / RL.FIXED, per round: {' '.join(f'{x:.2f}' for x in lf)}; median {statistics.median(lf):.2f}")
print(f"Redis semaphore / rlserver slot, per round: {' '.join(f'{x:.2f}' for x in zl)}; median {statistics.median(zl):.2f}")
g = [float(f[k]) for v in runs.values() for f in v.values() for k in ("gauge_before_ms", "gauge_after_ms")]
print(f"noise gauge over the sitting: {min(g):.1f}-{max(g):.1f} ms")
bad = [f["label"] for v in runs.values() for f in v.values() if f["errors"] != "0" or (f["mode"] != "fixed" and f["taken"] != f["given"])]
print("every slot taken was given back, no errors" if not bad else f"CHECK: {bad}")
PY
