#!/usr/bin/env bash
# Before and after: two rlserver binaries get the same redis-benchmark traffic in one
# session, interleaved (an A run, then a B run, ROUNDS times, each on a fresh server), so
# the machine's noise hits both alike. This is the check for a change on a hot path: build
# the commit before it and the commit with it, and compare. Server pinned to SERVER_CPUS
# (GOMAXPROCS=1), client to CLIENT_CPUS. Every run is framed by the noise gauge (bench/gauge,
# on SERVER_CPUS) and counts the server's involuntary context switches (raw.csv); runs whose
# gauge strays from the sitting's median are dropped, and more rounds are run (up to REPEATS)
# until every setting and test has ROUNDS runs kept on each side. Prints, per setting and test, the runs
# kept, the medians over them, with their range, of ops/s and of server CPU per request (the
# server-side cost, which the client-bound ops/s at P=16 hides), and B over A.
#
# Knobs (environment), defaults in brackets:
#   A, B [required] the two rlserver binaries (e.g. go build -o /tmp/rl-a ./cmd/rlserver
#        in a worktree of the older commit)
#   ROUNDS [5]  DURATION [3]  SETTINGS ["50:16"]  KEYSPACE [100000]  N []
#   TESTS [ping_mbulk gcra fixed log slide bucket]
#   SERVER_CPUS [0] CLIENT_CPUS [1]  PORT [7379]  OUT [bench-results/ab-<date>]
#   GAUGE_TOL [0.1] a run whose noise gauge (a fixed CPU loop on SERVER_CPUS, timed before
#        and after it) is further than this fraction from the sitting's median is dropped; the
#        table says how many runs of each were kept, and every median has its range
#   REPEATS [ROUNDS] at most this many rounds more, run while some setting and test has fewer
#        than ROUNDS runs kept on a side (the table's "runs kept" counts all rounds run)
#   FLAGS ["--save-interval 0"] the servers' flags (e.g. "--save-interval 1s": snapshots on;
#        each run then waits 1.5 s of idle server, not 0.3, before its CPU is read: settle)
#   SCRAPE_A, SCRAPE_B [] a URL to GET every second while that side runs (a Prometheus
#        scrape: FLAGS_B="--metrics-addr 127.0.0.1:9121" SCRAPE_B=http://127.0.0.1:9121/metrics)
#   FLAGS_A, FLAGS_B [FLAGS] one side's flags, to compare one binary in two modes (A=B):
#        e.g. FLAGS_B="--save-interval 0 --cluster-config one.conf --cluster-node-id ID"
#   KEYSPACE_A, KEYSPACE_B [KEYSPACE] one side's keyspace (e.g. single limiters on 300,000 keys
#        against RL.ALL's three keys per value on 100,000 values)
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
GAUGE_TOL=${GAUGE_TOL:-0.1}
REPEATS=${REPEATS:-$ROUNDS}
# shellcheck disable=SC2034  # read by run_throughput: FLUSHALL before every run
FLUSH=1
TESTS=${TESTS:-"ping_mbulk gcra fixed log slide bucket"}
SERVER_CPUS=${SERVER_CPUS-0}
CLIENT_CPUS=${CLIENT_CPUS-1}
PORT=${PORT:-7379}
FLAGS=${FLAGS:---save-interval 0}
read -r -a FLAGS_A_V <<<"${FLAGS_A:-$FLAGS}"
read -r -a FLAGS_B_V <<<"${FLAGS_B:-$FLAGS}"
KEYSPACE_A=${KEYSPACE_A:-$KEYSPACE}
KEYSPACE_B=${KEYSPACE_B:-$KEYSPACE}
OUT=${OUT:-$ROOT/bench-results/ab-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ANALYSIS=$(cat <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[6])
import noise

# The noise check (harness/noise.py): a run whose gauge strays more than tol from the
# sitting's median is dropped; the sitting is both sides' runs together.
tol = float(sys.argv[3])
ra, rb = noise.read([sys.argv[1]]), noise.read([sys.argv[2]])
mid, n = noise.sitting_median(ra, rb)
a, b = noise.split(ra, mid, tol), noise.split(rb, mid, tol)
if sys.argv[4] == "short":  # how many runs the worst side still lacks
    print(noise.lack(int(sys.argv[5]), a, b))
    sys.exit(0)
print(f"noise gauge: median {mid:.1f} ms over {n} readings; runs more than {tol:.0%} away dropped")
print("| setting | test | runs kept A, B | A ops/s | B ops/s | B/A | A server µs/request | B server µs/request | B/A |")
print("|---|---|---|---|---|---|---|---|---|")
ops = lambda z: f"{z:,.0f}"
us = lambda z: f"{z:.2f}"
for k in sorted(set(a) & set(b)):
    x, y = a[k][1], b[k][1]
    xo, yo = [float(r["rps"]) for r in x], [float(r["rps"]) for r in y]
    xc, yc = [noise.per_request_us(r) for r in x], [noise.per_request_us(r) for r in y]
    ro = statistics.median(yo) / statistics.median(xo) if x and y else float("nan")
    rc = statistics.median(yc) / statistics.median(xc) if x and y else float("nan")
    print(f"| c{k[0].replace(':', ' P')} | {k[1]} | {len(x)}/{a[k][0]}, {len(y)}/{b[k][0]} | "
          f"{noise.spread(xo, ops)} | {noise.spread(yo, ops)} | {ro:.2f} | "
          f"{noise.spread(xc, us)} | {noise.spread(yc, us)} | {rc:.2f} |")
PY
)
# round R: an A run, then a B run, each on a fresh server.
round() {
  local r=$1 side flagv scrape scraper ks
  for side in A B; do
    RLSERVER=${!side}
    ks="KEYSPACE_${side}"
    KEYSPACE=${!ks}
    flagv="FLAGS_${side}_V[@]"
    # A side with snapshots (any --save-interval but 0; the server's default is 1s)
    # settles for longer after a run: its last changes are written up to a second later.
    case " ${!flagv} " in *" --save-interval 0 "*) SETTLE_S=0.3 ;; *) SETTLE_S=1.5 ;; esac
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
}
# How many kept runs the worst side still lacks (the analysis below, asked "short"): the
# rounds the noise gauge dropped are made up for (run_rounds).
lack() { python3 - "$OUT/A/raw.csv" "$OUT/B/raw.csv" "$GAUGE_TOL" short "$ROUNDS" "$HARNESS" <<<"$ANALYSIS"; }
run_rounds lack
hlog "raw CSVs in $OUT/A and $OUT/B"
python3 - "$OUT/A/raw.csv" "$OUT/B/raw.csv" "$GAUGE_TOL" table 0 "$HARNESS" <<<"$ANALYSIS"
