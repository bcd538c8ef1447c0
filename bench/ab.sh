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
OUT=${OUT:-$ROOT/bench-results/ab-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ANALYSIS=$(cat <<'PY'
import csv, statistics, sys

# The noise check: a run whose gauge (a fixed CPU loop on the server's CPU, timed before and
# after it) is more than tol away from the sitting's median gauge ran on a disturbed machine,
# and is dropped. The sitting is both sides' runs together.
tol = float(sys.argv[3])
rows = {side: list(csv.DictReader(open(path))) for side, path in (("A", sys.argv[1]), ("B", sys.argv[2]))}
gauges = [float(r[k]) for v in rows.values() for r in v for k in ("gauge_before_ms", "gauge_after_ms") if r.get(k)]
mid = statistics.median(gauges) if gauges else 0

def calm(r):
    g = [float(r[k]) for k in ("gauge_before_ms", "gauge_after_ms") if r.get(k)]
    return not mid or all(abs(x - mid) <= tol * mid for x in g)

def load(v):
    out = {}
    for r in v:
        rps, cpu = float(r["rps"]), float(r["server_cpu"] or "nan")
        e = out.setdefault((r["setting"], r["test"]), {"all": 0, "kept": []})
        e["all"] += 1
        if calm(r):
            e["kept"].append((rps, cpu / rps * 1e6 if rps else float("nan")))
    return out

def fmt(xs, f):
    return f"{f(statistics.median(xs))} ({f(min(xs))}-{f(max(xs))})" if xs else "-"

a, b = load(rows["A"]), load(rows["B"])
if len(sys.argv) > 4 and sys.argv[4] == "short":  # how many runs the worst side still lacks
    want = int(sys.argv[5])
    print(max([want - len(e["kept"]) for side in (a, b) for e in side.values()] + [0]))
    sys.exit(0)
print(f"noise gauge: median {mid:.1f} ms over {len(gauges)} readings; runs more than {tol:.0%} away dropped")
print("| setting | test | runs kept A, B | A ops/s | B ops/s | B/A | A server µs/request | B server µs/request | B/A |")
print("|---|---|---|---|---|---|---|---|---|")
for k in sorted(set(a) & set(b)):
    x, y = a[k]["kept"], b[k]["kept"]
    ra = (statistics.median(v[0] for v in y) / statistics.median(v[0] for v in x)) if x and y else float("nan")
    rc = (statistics.median(v[1] for v in y) / statistics.median(v[1] for v in x)) if x and y else float("nan")
    print(f"| c{k[0].replace(':', ' P')} | {k[1]} | {len(x)}/{a[k]['all']}, {len(y)}/{b[k]['all']} | "
          f"{fmt([v[0] for v in x], lambda z: f'{z:,.0f}')} | {fmt([v[0] for v in y], lambda z: f'{z:,.0f}')} | {ra:.2f} | "
          f"{fmt([v[1] for v in x], lambda z: f'{z:.2f}')} | {fmt([v[1] for v in y], lambda z: f'{z:.2f}')} | {rc:.2f} |")
PY
)
# round R: an A run, then a B run, each on a fresh server.
round() {
  local r=$1 side flagv scrape scraper
  for side in A B; do
    RLSERVER=${!side}
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
for r in $(seq "$ROUNDS"); do round "$r"; done
# Runs the noise gauge drops are made up for: while some setting and test has fewer than ROUNDS
# runs kept on a side, one more round, at most REPEATS more (the analysis below, asked "short",
# prints how many kept runs the worst side lacks).
r=$ROUNDS
while [ "$r" -lt $((ROUNDS + REPEATS)) ]; do
  lack=$(python3 - "$OUT/A/raw.csv" "$OUT/B/raw.csv" "$GAUGE_TOL" short "$ROUNDS" <<<"$ANALYSIS")
  [ "$lack" -gt 0 ] || break
  r=$((r + 1))
  hlog "$lack run(s) short of $ROUNDS kept on a side: round $r"
  round "$r"
done
hlog "raw CSVs in $OUT/A and $OUT/B"
python3 - "$OUT/A/raw.csv" "$OUT/B/raw.csv" "$GAUGE_TOL" <<<"$ANALYSIS"
