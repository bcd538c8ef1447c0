#!/usr/bin/env bash
# Scaling out: the same redis-benchmark --cluster traffic against a cluster of one primary
# and a cluster of three, interleaved (one, then three, ROUNDS times, each on fresh
# servers), all on this machine. Each server and the client share its cores, so on a small
# machine the client and the CPUs bound the total, not the servers; the figure says what
# three shards cost or gain where they share one machine. Prints the median ops/s per size
# and three over one.
#
# Knobs (environment), defaults in brackets:
#   RLSERVER [built from this checkout]  ROUNDS [5]  N [400000]  CLIENTS [50]  PIPELINE [16]
#   BASE_PORT [7400]  OUT [bench-results/cluster-<date>]
# One primary is a cluster of one (every slot), run without --cluster, which redis-benchmark
# refuses for a single node; the three get --cluster, which spreads {tag} over them.
# Needs python3 and Debian's redis-tools.
# Usage: bench/cluster.sh
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-cli redis-benchmark python3
ROUNDS=${ROUNDS:-5}
N=${N:-400000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-16}
BASE_PORT=${BASE_PORT:-7400}
OUT=${OUT:-$ROOT/bench-results/cluster-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -n "${RLSERVER:-}" ] || build_rlserver

# write_map SIZE FILE: SIZE primaries on BASE_PORT.., the slots split evenly.
write_map() {
  local size=$1 file=$2 i lo hi
  : >"$file"
  for i in $(seq 0 $((size - 1))); do
    lo=$((16384 * i / size)) hi=$((16384 * (i + 1) / size - 1))
    printf '%040x 127.0.0.1:%d@%d master - 0 0 %d connected %d-%d\n' $((i + 1)) $((BASE_PORT + i)) \
      $((BASE_PORT + i + 10000)) $((i + 1)) $lo $hi >>"$file"
  done
  echo "vars currentEpoch $size lastVoteEpoch 0" >>"$file"
}

echo "round,size,rps" >"$OUT/raw.csv"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), nproc=$(nproc), cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "client: $(redis-benchmark --version | head -1)"
  echo "n=$N c=$CLIENTS P=$PIPELINE: redis-benchmark --cluster CL.THROTTLE rl:{tag}:__rand_int__ 15 30 60 -r 100000"
} >"$OUT/meta.txt"
for r in $(seq "$ROUNDS"); do
  for size in 1 3; do
    write_map "$size" "$OUT/map-$size.conf"
    pids=()
    for i in $(seq 0 $((size - 1))); do
      start_rlserver $((BASE_PORT + i)) "" "" --save-interval 0 --cluster-config "$OUT/map-$size.conf" \
        --cluster-node-id "$(printf '%040x' $((i + 1)))"
      pids+=("$RL_PID")
    done
    out="$OUT/run$r-size$size.out"
    # redis-benchmark refuses --cluster with one node: one primary gets the plain run.
    cluster=(--cluster)
    [ "$size" = 1 ] && cluster=()
    redis-benchmark "${cluster[@]}" -h "$HOST" -p "$BASE_PORT" -n "$N" -c "$CLIENTS" -P "$PIPELINE" -r 100000 --csv \
      CL.THROTTLE 'rl:{tag}:__rand_int__' 15 30 60 >"$out" 2>&1
    [ "$size" = 1 ] || grep -q "Cluster has $size master nodes" "$out" || die "$out: not $size masters"
    ! grep -qi "error" "$out" || die "$out: errors"
    rps=$(awk -F'","' '/^"CL.THROTTLE/ {print $2}' "$out")
    echo "$r,$size,$rps" >>"$OUT/raw.csv"
    hlog "round $r, $size primaries: $rps ops/s"
    for p in "${pids[@]}"; do stop_server "$p"; done
  done
done
python3 - "$OUT/raw.csv" <<'PY'
import csv, statistics, sys
rows = {}
for r in csv.DictReader(open(sys.argv[1])):
    rows.setdefault(int(r["size"]), []).append(float(r["rps"]))
one, three = statistics.median(rows[1]), statistics.median(rows[3])
print("| primaries | runs | median ops/s | min | max |")
print("|---|---|---|---|---|")
for k in sorted(rows):
    v = rows[k]
    print(f"| {k} | {len(v)} | {statistics.median(v):,.0f} | {min(v):,.0f} | {max(v):,.0f} |")
print(f"\nthree over one: {three / one:.2f}")
PY
