#!/usr/bin/env bash
# repprof.sh BIN RATE SECS OUT: CPU profile of the replica under paced CL.THROTTLE
set -euo pipefail
cd "$(dirname "$0")/../.."
source harness/lib.sh
RLSERVER=$1; KEYSPACE=100000; CLIENT_CPUS=1
rate=$2 secs=$3 out=$4
trap cleanup EXIT
build_cmd pacedload
start_rlserver 7379 0 1 --save-interval 0
pid=$RL_PID
start_rlserver 7380 1 1 --save-interval 0 --replicaof "$HOST 7379" --pprof-addr 127.0.0.1:6062; rpid=$RL_PID; wait_link 7380
taskset -c 1 "$BIN_pacedload" -addr "$HOST:7379" -c 50 -p 16 -rate "$rate" -keys 100000 CL.THROTTLE 'rl:gcra:__rand_int__' 100 1000 60 >/dev/null 2>&1 &
lp=$!
sleep 3
t() { awk '{print $14+$15}' /proc/$1/stat; }
ra=$(t $rpid)
curl -s -o "$out" "http://127.0.0.1:6062/debug/pprof/profile?seconds=$secs"
rb=$(t $rpid)
kill $lp
echo "replica ticks $((rb-ra)) threads $(ls /proc/$rpid/task | wc -l)"
