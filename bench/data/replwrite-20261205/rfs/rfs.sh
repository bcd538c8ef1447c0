#!/usr/bin/env bash
# rfs.sh on|off: loopback receive processing steered to the receiving thread's CPU (RPS+RFS), or not
if [ "$1" = on ]; then
  echo 32768 > /proc/sys/net/core/rps_sock_flow_entries
  echo 32768 > /sys/class/net/lo/queues/rx-0/rps_flow_cnt
  echo 3 > /sys/class/net/lo/queues/rx-0/rps_cpus
else
  echo 0 > /sys/class/net/lo/queues/rx-0/rps_cpus
  echo 0 > /sys/class/net/lo/queues/rx-0/rps_flow_cnt
  echo 0 > /proc/sys/net/core/rps_sock_flow_entries
fi
echo "rps_cpus $(cat /sys/class/net/lo/queues/rx-0/rps_cpus) flow_cnt $(cat /sys/class/net/lo/queues/rx-0/rps_flow_cnt) sock_flow $(cat /proc/sys/net/core/rps_sock_flow_entries)"
