#!/usr/bin/env bash
# sync.sh BIN KEYS: seconds from starting a replica to its link up with every key (primary CPU 0, replica CPU 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
HARNESS=$PWD/harness
source harness/lib.sh
RLSERVER=$1; KEYS=$2; CLIENT_CPUS=1
trap cleanup EXIT
start_rlserver 7379 0 1 --save-interval 0
python3 "$HARNESS/fill.py" "$(limiter_cmd rlserver gcra memory)" "$KEYS" 1 | redis-cli -h "$HOST" -p 7379 --pipe >/dev/null 2>&1
t1=$(date +%s.%N)
start_rlserver 7380 1 1 --save-interval 0 --replicaof "$HOST 7379"
wait_link 7380
t2=$(date +%s.%N)
echo "$(basename $RLSERVER) keys=$(dbsize 7380) sync_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.2f", b - a}')"
