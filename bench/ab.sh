#!/usr/bin/env bash
# Before and after: two rlserver binaries get the same redis-benchmark traffic in one
# session, interleaved (an A run, then a B run, ROUNDS times, each on a fresh server), so
# the machine's noise hits both alike. This is the check for a change on a hot path: build
# the commit before it and the commit with it, and compare. Server pinned to SERVER_CPUS
# (GOMAXPROCS=1), client to CLIENT_CPUS. Prints, per setting and test, the medians over
# rounds of ops/s and of server CPU per request (the server-side cost, which the
# client-bound ops/s at P=16 hides), and B over A.
#
# Knobs (environment), defaults in brackets:
#   A, B [required] the two rlserver binaries (e.g. go build -o /tmp/rl-a ./cmd/rlserver
#        in a worktree of the older commit)
#   ROUNDS [5]  DURATION [3]  SETTINGS ["50:16"]  KEYSPACE [100000]  N []
#   TESTS [ping_mbulk gcra fixed log slide bucket]
#   SERVER_CPUS [0] CLIENT_CPUS [1]  PORT [7379]  OUT [bench-results/ab-<date>]
#   FLAGS ["--save-interval 0"] the servers' flags (e.g. "--save-interval 1s": snapshots on)
#   SCRAPE_A, SCRAPE_B [] a URL to GET every second while that side runs (a Prometheus
#        scrape: FLAGS_B="--metrics-addr 127.0.0.1:9121" SCRAPE_B=http://127.0.0.1:9121/metrics)
#   FLAGS_A, FLAGS_B [FLAGS] one side's flags, to compare one binary in two modes (A=B):
#        e.g. FLAGS_B="--save-interval 0 --cluster-config one.conf --cluster-node-id ID"
# Needs python3, taskset, Debian's redis-tools.
# Usage: A=/tmp/rl-a B=/tmp/rl-b bench/ab.sh
set -euo pipefail
source "$(dirname "$0")/harness/lib.sh"
need redis-cli redis-benchmark python3
[ -x "${A:-}" ] && [ -x "${B:-}" ] || die "set A and B to two rlserver binaries"
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
SETTINGS=${SETTINGS:-"50:16"}
KEYSPACE=${KEYSPACE:-100000}
N=${N:-}
# shellcheck disable=SC2034  # read by run_throughput: FLUSHALL before every run
FLUSH=1
TESTS=${TESTS:-"ping_mbulk gcra fixed log slide bucket"}
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
PORT=${PORT:-7379}
FLAGS=${FLAGS:---save-interval 0}
read -r -a FLAGS_A_V <<<"${FLAGS_A:-$FLAGS}"
read -r -a FLAGS_B_V <<<"${FLAGS_B:-$FLAGS}"
OUT=${OUT:-$ROOT/bench-results/ab-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for r in $(seq "$ROUNDS"); do
  for side in A B; do
    RLSERVER=${!side}
    flagv="FLAGS_${side}_V[@]"
    start_rlserver "$PORT" "$SERVER_CPUS" 1 "${!flagv}"
    scrape="SCRAPE_${side}"
    scraper=
    if [ -n "${!scrape:-}" ]; then
      (while sleep 1; do curl -sf -o /dev/null "${!scrape}" || echo "scrape of ${!scrape} failed" >&2; done) &
      scraper=$!
    fi
    run_throughput rlserver "$PORT" "$RL_PID" "$OUT/$side" "$r"
    [ -z "$scraper" ] || kill "$scraper"
    stop_server "$RL_PID"
  done
done
hlog "raw CSVs in $OUT/A and $OUT/B"
python3 - "$OUT/A/raw.csv" "$OUT/B/raw.csv" <<'PY'
import csv, statistics, sys

def load(path):
    rows = {}
    for r in csv.DictReader(open(path)):
        rps, cpu = float(r["rps"]), float(r["server_cpu"] or "nan")
        rows.setdefault((r["setting"], r["test"]), []).append((rps, cpu / rps * 1e6 if rps else float("nan")))
    return {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), len(v))
            for k, v in rows.items()}

a, b = load(sys.argv[1]), load(sys.argv[2])
print("| setting | test | runs | A ops/s | B ops/s | B/A | A server µs/request | B server µs/request | B/A |")
print("|---|---|---|---|---|---|---|---|---|")
for k in sorted(set(a) & set(b)):
    x, y = a[k], b[k]
    print(f"| c{k[0].replace(':', ' P')} | {k[1]} | {min(x[2], y[2])} | {x[0]:,.0f} | {y[0]:,.0f} | {y[0] / x[0]:.2f} | "
          f"{x[1]:.2f} | {y[1]:.2f} | {y[1] / x[1]:.2f} |")
PY
