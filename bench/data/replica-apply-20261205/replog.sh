#!/usr/bin/env bash
# replog.sh BIN RATE SECS: CPU ticks of a primary and its replica (both BIN) over SECS of
# RL.LOG (100 a minute) paced at RATE (c=50 P=16, 100,000 keys), per request the primary served.
set -euo pipefail
cd "$(dirname "$0")/../.."
source harness/lib.sh
RLSERVER=$1; KEYSPACE=100000; CLIENT_CPUS=1
rate=$2 secs=${3:-5}
trap cleanup EXIT
build_cmd pacedload
start_rlserver 7379 0 1 --save-interval 0
pid=$RL_PID
start_rlserver 7380 1 1 --save-interval 0 --replicaof "$HOST 7379"; rpid=$RL_PID; wait_link 7380
taskset -c 1 "$BIN_pacedload" -addr "$HOST:7379" -c 50 -p 16 -rate "$rate" -keys 100000 RL.LOG 'rl:log:__rand_int__' 100 60s >/dev/null 2>&1 &
lp=$!
sleep 3
t() { awk '{print $14+$15}' /proc/$1/stat; }
served() { redis-cli -p 7379 INFO stats | tr -d '\r' | awk -F: '$1=="total_commands_processed"{print $2}'; }
pa=$(t $pid); ra=$(t $rpid); na=$(served)
sleep "$secs"
pb=$(t $pid); rb=$(t $rpid); nb=$(served)
kill $lp
n=$((nb - na))
awk -v n=$n -v p=$((pb-pa)) -v r=$((rb-ra)) -v b=$(basename $RLSERVER) 'BEGIN {printf "%s requests %d primary %.3f us/req replica %.3f us/req\n", b, n, p*1e4/n, r*1e4/n}'
