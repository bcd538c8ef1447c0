#!/usr/bin/env bash
# Checks that the Lua scripts decide as rlserver does: the same requests (a burst past
# the limit on a fresh key, a cost-3 request, a peek, a cost above the limit) go to
# Redis + harness/lua and to rlserver, one after the other, and the replies must agree on
# limited, limit and remaining, and on retry_after/reset_after to within the time between
# the two calls (1 s for CL.THROTTLE's whole seconds, 200 ms for the RL.* milliseconds).
# Windows are 60 s and aligned to the epoch: a burst that straddles a minute boundary can
# differ, so run it again if only RL.FIXED or RL.SLIDE disagree.
# Usage: bench/harness/crosscheck.sh   (RPORT=16379 PORT=7379 RLSERVER_BIN=)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need redis-server redis-cli
RPORT=${RPORT:-16379}
PORT=${PORT:-7379}
start_redis "$RPORT"
load_scripts "$RPORT"
start_rlserver "$PORT"
key=cc:$RANDOM$RANDOM
bad=0
# check ALGO COST LUA-ARGS -- RLSERVER-COMMAND...
check() {
  local algo=$1 cost=$2 sha a b tol
  shift 2
  local lua=() native=()
  while [ "$1" != -- ]; do lua+=("$1"); shift; done
  shift; native=("$@")
  sha=SHA_$algo
  a=$(redis-cli -h "$HOST" -p "$RPORT" EVALSHA "${!sha}" 1 "$key:$algo" "${lua[@]}" "$cost" | tr '\n' ' ')
  if [ "$cost" = 1 ] && [ "$algo" = gcra ]; then
    b=$(redis-cli -h "$HOST" -p "$PORT" "${native[0]}" "$key:$algo" "${native[@]:1}" | tr '\n' ' ')
  elif [ "$algo" = gcra ]; then
    b=$(redis-cli -h "$HOST" -p "$PORT" "${native[0]}" "$key:$algo" "${native[@]:1}" "$cost" | tr '\n' ' ')
  else
    b=$(redis-cli -h "$HOST" -p "$PORT" "${native[0]}" "$key:$algo" "${native[@]:1}" COST "$cost" | tr '\n' ' ')
  fi
  tol=200; [ "$algo" = gcra ] && tol=1
  if awk -v a="$a" -v b="$b" -v tol="$tol" 'BEGIN {
      n = split(a, x, " "); m = split(b, y, " ")
      if (n != 5 || m != 5) exit 1
      for (i = 1; i <= 3; i++) if (x[i] != y[i]) exit 1
      for (i = 4; i <= 5; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > tol || (x[i] < 0) != (y[i] < 0)) exit 1 }
    }'; then
    printf '%-6s cost %s  lua: %-28s rlserver: %s\n' "$algo" "$cost" "$a" "$b"
  else
    printf '%-6s cost %s  lua: %-28s rlserver: %s  DIFFERENT\n' "$algo" "$cost" "$a" "$b"
    bad=1
  fi
}
for algo in gcra fixed log slide bucket; do
  case $algo in
    gcra) lua=(4 5 60) native=(CL.THROTTLE 4 5 60) ;;
    fixed) lua=(5 60) native=(RL.FIXED 5 60s) ;;
    log) lua=(5 60) native=(RL.LOG 5 60s) ;;
    slide) lua=(5 60) native=(RL.SLIDE 5 60s) ;;
    bucket) lua=(5 5 60) native=(RL.BUCKET 5 5 60s) ;;
  esac
  for cost in 0 3 1 1 1 1 0 6 1; do
    check "$algo" "$cost" "${lua[@]}" -- "${native[@]}"
  done
done
if [ $bad = 1 ]; then echo "the Lua scripts and rlserver DISAGREE"; exit 1; fi
echo "the Lua scripts and rlserver agree"
