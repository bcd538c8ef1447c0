#!/usr/bin/env bash
# A replica's reads while its primary's stream runs: the primary (GOMAXPROCS=1, CPU 0) gets
# RATE CL.THROTTLE a second from pacedload (CPU 1); the replica (default GOMAXPROCS, both CPUs,
# so two event loops) serves redis-benchmark's EXISTS (c=20, P=1, unpinned) for 10 s. Prints
# the build, the replica's commands a second (INFO total_commands_processed), and its CPU
# ticks (1/100 s) over the 10 s.
# Usage: readload.sh <rlserver build> [RATE]
set -euo pipefail
bin=$1 rate=${2:-100000}
dir=$(mktemp -d)
trap 'redis-cli -p 7811 shutdown nosave >/dev/null 2>&1 || true; redis-cli -p 7812 shutdown nosave >/dev/null 2>&1 || true; pkill -f "pacedload -addr 127.0.0.1:7811" || true; rm -rf "$dir"' EXIT
taskset -c 0 env GOMAXPROCS=1 "$bin" --port 7811 --dir "$dir/a" --save-interval 0 >"$dir/a.log" 2>&1 &
"$bin" --port 7812 --dir "$dir/b" --save-interval 0 --replicaof "127.0.0.1 7811" >"$dir/b.log" 2>&1 &
rpid=$!
for _ in $(seq 1 50); do redis-cli -p 7812 info replication 2>/dev/null | grep -q "master_link_status:up" && break; sleep 0.1; done
taskset -c 1 /tmp/pacedload -addr 127.0.0.1:7811 -c 50 -p 16 -rate "$rate" -keys 100000 CL.THROTTLE 'k:__rand_int__' 100 100 60 1 >/dev/null 2>&1 &
sleep 2
c0=$(redis-cli -p 7812 info stats | awk -F: '/^total_commands_processed/ {print $2+0}')
t0=$(awk '{print $14+$15}' /proc/$rpid/stat)
timeout -s KILL 10 redis-benchmark -p 7812 -c 20 -P 1 -n 2000000000 -r 100000 -q EXISTS 'k:__rand_int__' >/dev/null 2>&1 || true
t1=$(awk '{print $14+$15}' /proc/$rpid/stat)
c1=$(redis-cli -p 7812 info stats | awk -F: '/^total_commands_processed/ {print $2+0}')
echo "$bin,$(( (c1 - c0) / 10 )),$((t1 - t0))"
