#!/bin/bash
# replbytes.sh: bytes of replication stream per decision, by command
# (docs/capacity.md). A primary and a replica, memory only; redis-benchmark
# sends N decisions of each command on KEYSPACE (100,000) random keys (16-byte names)
# at c=50 P=16, and the primary's master_repl_offset moves by the stream's
# bytes. Counts, not times: the machine's noise does not move them.
#
#   bench/replbytes.sh            # this checkout's build
#   BIN=/tmp/rl N=500000 bench/replbytes.sh
#   KEYSPACE=100 bench/replbytes.sh   # hot keys: many decisions on a key between two sends
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}
KEYSPACE=${KEYSPACE:-100000}
PORT=${PORT:-7311}
if [ -z "${BIN:-}" ]; then
	go build -o /tmp/rlserver-replbytes ./cmd/rlserver
	BIN=/tmp/rlserver-replbytes
fi
d=$(mktemp -d)
"$BIN" --port "$PORT" --dir "$d/p" --save-interval 0 >/dev/null 2>&1 &
P=$!
"$BIN" --port $((PORT + 1)) --dir "$d/r" --save-interval 0 --replicaof "127.0.0.1 $PORT" >/dev/null 2>&1 &
R=$!
trap 'kill $P $R 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 50); do
	redis-cli -p $((PORT + 1)) info replication 2>/dev/null | grep -q "master_link_status:up" && break
	sleep 0.1
done
off() { redis-cli -p "$PORT" info replication | tr -d '\r' | sed -n 's/^master_repl_offset://p'; }
echo "command,decisions,stream_bytes,bytes_per_decision"
for t in "CL.THROTTLE key:__rand_int__ 100 100 60 1" "RL.FIXED key:__rand_int__ 100 60s" \
	"RL.SLIDE key:__rand_int__ 100 60s" "RL.BUCKET key:__rand_int__ 100 100 60s" "RL.LOG key:__rand_int__ 100 60s"; do
	redis-cli -p "$PORT" flushall >/dev/null
	sleep 0.3
	o0=$(off)
	# shellcheck disable=SC2086
	redis-benchmark -p "$PORT" -c 50 -P 16 -n "$N" -r "$KEYSPACE" -q $t >/dev/null 2>&1
	sleep 0.5
	o1=$(off)
	echo "${t%% *},$N,$((o1 - o0)),$(echo "scale=1; ($o1-$o0)/$N" | bc)"
done
