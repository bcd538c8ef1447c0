#!/bin/bash
# run.sh BIN LABEL: primary on cpu0, replica+benchmark on cpu1, unpaced c=50 P=16 CL.THROTTLE, 100k keys
BIN=$1; L=$2; REPL=${REPL:-1}
rm -rf /tmp/rexp/p /tmp/rexp/r; mkdir -p /tmp/rexp/p /tmp/rexp/r
taskset -c 0 env GOMAXPROCS=1 $BIN --port 7811 --save-interval 0 --dir /tmp/rexp/p >/tmp/rexp/p.log 2>&1 & PP=$!
sleep 0.5
if [ "$REPL" = 1 ]; then
taskset -c 1 env GOMAXPROCS=1 $BIN --port 7812 --save-interval 0 --dir /tmp/rexp/r --replicaof "127.0.0.1 7811" --pprof-addr 127.0.0.1:6062 >/tmp/rexp/r.log 2>&1 & RP=$!
until [ "$(redis-cli -p 7812 INFO replication | tr -d '\r' | grep master_link_status)" = "master_link_status:up" ]; do sleep 0.1; done
fi
timeout -s KILL 12 taskset -c 1 redis-benchmark -p 7811 -c 50 -P 16 -n 100000000 -r 100000 CL.THROTTLE rl:gcra:__rand_int__ 100 100 60 1 >/dev/null 2>&1 & BP=$!
sleep 3
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
n0=$(redis-cli -p 7811 INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/cmdstat_cl.throttle/{print $3}')
p0=$(cpu $PP); [ "$REPL" = 1 ] && r0=$(cpu $RP)
if [ "$REPL" = 1 ] && [ -n "$PROF" ]; then curl -s -o /tmp/rexp/$L.pprof "http://127.0.0.1:6062/debug/pprof/profile?seconds=5"; else sleep 5; fi
n1=$(redis-cli -p 7811 INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/cmdstat_cl.throttle/{print $3}')
p1=$(cpu $PP); [ "$REPL" = 1 ] && r1=$(cpu $RP) || { r0=0; r1=0; }
n=$((n1-n0))
python3 -c "n=$n; print('$L', 'rps', n/5, 'primary_us', ($p1-$p0)*10000/n, 'replica_us', ($r1-$r0)*10000/n)"
kill -9 $BP $PP ${RP:-} 2>/dev/null; wait 2>/dev/null
