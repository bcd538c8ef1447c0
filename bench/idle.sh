#!/bin/bash
# idle.sh: what an idle rlserver costs, in % of a core (issue 30).
#
#   bench/idle.sh                      # this checkout's build
#   BINS="/tmp/rl-a /tmp/rl-b" ROUNDS=3 SECONDS_=30 bench/idle.sh
#
# For each binary, ROUNDS times, alternating: a primary alone; then a
# primary and a replica (REPLICAOF, link up), no clients. The CPU time
# each process used over SECONDS_ seconds, as a percentage of one core:
# the scheduler's run time of its threads, in ns (/proc/PID/task/*/
# schedstat), and after a slash utime + stime (/proc/PID/stat), which the
# kernel counts in whole clock ticks. An idle node wakes on timers, which
# fire at ticks, so the second reads higher; figures before 2026-12-06
# are the second alone. Loopback only; the servers run in temporary
# directories with the default flags (snapshots every second).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_=${SECONDS_:-30}
PORT=${PORT:-7301}
if [ -z "${BINS:-}" ]; then
	go build -o /tmp/rlserver-idle ./cmd/rlserver
	BINS=/tmp/rlserver-idle
fi
hz=$(getconf CLK_TCK)
# cpu prints a process's run time in ns (its threads' schedstat), a
# space, and its utime + stime in ticks.
cpu() { echo "$(cat /proc/"$1"/task/*/schedstat | awk '{n += $1} END {print n}') $(awk '{print $14+$15}' "/proc/$1/stat")"; }
# pct prints the % of a core between two cpu readings: "run/ticks".
pct() {
	read -r n0 t0 <<<"$1"
	read -r n1 t1 <<<"$2"
	echo "$(echo "scale=2; ($n1-$n0)/10000000/$SECONDS_" | bc)/$(echo "scale=2; ($t1-$t0)*100/$hz/$SECONDS_" | bc)"
}

echo "binary,round,alone_pct,primary_pct,replica_pct (each: schedstat/ticks)"
for round in $(seq "$ROUNDS"); do
	for bin in $BINS; do
		d=$(mktemp -d)
		"$bin" --port "$PORT" --dir "$d/a" >/dev/null 2>&1 &
		A=$!
		sleep 3
		a0=$(cpu $A)
		sleep "$SECONDS_"
		a1=$(cpu $A)
		kill $A; wait $A 2>/dev/null || true

		"$bin" --port "$PORT" --dir "$d/p" >/dev/null 2>&1 &
		P=$!
		"$bin" --port $((PORT + 1)) --dir "$d/r" --replicaof "127.0.0.1 $PORT" >/dev/null 2>&1 &
		R=$!
		for _ in $(seq 50); do
			redis-cli -p $((PORT + 1)) info replication 2>/dev/null | grep -q "master_link_status:up" && break
			sleep 0.1
		done
		sleep 2
		p0=$(cpu $P)
		r0=$(cpu $R)
		sleep "$SECONDS_"
		p1=$(cpu $P)
		r1=$(cpu $R)
		kill $P $R; wait $P $R 2>/dev/null || true
		rm -rf "$d"
		echo "$bin,$round,$(pct "$a0" "$a1"),$(pct "$p0" "$p1"),$(pct "$r0" "$r1")"
	done
done
