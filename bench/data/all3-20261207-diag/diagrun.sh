#!/bin/bash
# diagrun.sh BIN LABEL: issue-shape RL.ALL load for 25 s, server stderr to /tmp/LABEL.err
bin=$1; label=$2
rm -rf /tmp/dd-$label; mkdir -p /tmp/dd-$label
taskset -c 0 env GOMAXPROCS=1 $bin --port 7411 --dir /tmp/dd-$label --save-interval 0 2> /tmp/$label.err > /dev/null &
spid=$!
for i in $(seq 50); do redis-cli -p 7411 PING >/dev/null 2>&1 && break; sleep 0.1; done
taskset -c 1 redis-benchmark -p 7411 -c 50 -P 16 -n 1000000000 -r 100000 -q RL.ALL '{t42}:u:__rand_int__:s' BUCKET 100 100 1s AND '{t42}:u:__rand_int__:d' FIXED 1000000 1d AND '{t42}' SLIDE 1000000000 60s > /dev/null 2>&1 &
lpid=$!
sleep 5
n0=$(redis-cli -p 7411 INFO stats | tr -d "\r" | awk -F: "\$1==\"total_commands_processed\"{print \$2}"); t0=$(awk "{print \$14+\$15}" /proc/$spid/stat); sleep 20; n1=$(redis-cli -p 7411 INFO stats | tr -d "\r" | awk -F: "\$1==\"total_commands_processed\"{print \$2}"); t1=$(awk "{print \$14+\$15}" /proc/$spid/stat); echo "reqs $((n1-n0)) ticks $((t1-t0)) us/req $(python3 -c "print(round(($t1-$t0)*1e4/($n1-$n0),3))")"
kill $lpid; wait $lpid 2>/dev/null
redis-cli -p 7411 SHUTDOWN NOSAVE >/dev/null 2>&1; wait $spid 2>/dev/null
grep diag /tmp/$label.err | tail -8
