# shellcheck shell=bash
# The benchmark harness's shell library: source it, don't run it.
#
#   source "$(dirname "$0")/harness/lib.sh"
#
# What it gives the scripts in bench/:
#   build_rlserver                 RLSERVER = a binary of this checkout (or $RLSERVER_BIN)
#   start_redis PORT [CPUS] [flags...]
#                                  a private redis-server (no persistence, its own temp dir,
#                                  then flags); sets REDIS_PID
#   start_rlserver PORT [CPUS] [GOMAXPROCS] [flags...]
#                                  this checkout's rlserver (--save-interval 0 unless flags
#                                  say otherwise; its own data directory, removed when it
#                                  stops); sets RL_PID
#   stop_server PID                stop one server this script started
#   load_scripts PORT              SCRIPT LOAD harness/lua/*.lua; sets SHA_<algo>
#   limiter_cmd TARGET ALGO USE    the command line of a limiter: TARGET redis (EVALSHA of the
#                                  Lua script) or rlserver (its native command); USE bench
#                                  (60 s windows) or memory (1 day, so nothing expires)
#   run_throughput TARGET PORT PID OUT_DIR RUN
#                                  redis-benchmark over SETTINGS x TESTS, one row per run in
#                                  OUT_DIR/raw.csv (the CSV ratios.py, chart.py and
#                                  harness/summary.py read)
#   measure_memory TARGET PORT PID CASE OUT_CSV RUN
#                                  fill KEYS_N keys through the real command, one row of
#                                  bytes per key in OUT_CSV
#
# Every server is started on 127.0.0.1 only and stopped, by its own PID, when the
# script exits. Needs bash, python3, taskset (when pinning), Debian's redis-server and
# redis-tools, and Go to build rlserver.

HARNESS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HARNESS/../.." && pwd)
HOST=127.0.0.1
CLK_TCK=$(getconf CLK_TCK)

OWN_PIDS=()   # servers started here, stopped on exit
OWN_DIRS=()   # their temporary directories
declare -A DATA_OF=()  # an rlserver's PID -> its data directory (start_rlserver)

hlog() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { hlog "FATAL: $*"; exit 1; }

need() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || die "$c not found (Debian: apt-get install redis-server redis-tools)"; done
}

cleanup() {
  local p
  for p in "${OWN_PIDS[@]}"; do stop_server "$p"; done
  for p in "${OWN_DIRS[@]}"; do rm -rf "$p"; done
  OWN_PIDS=() OWN_DIRS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# pin CPUS: the taskset prefix for a CPU list, nothing for an empty one.
pin() { if [ -n "${1:-}" ]; then echo "taskset -c $1"; fi; }

port_busy() { redis-cli -h "$HOST" -p "$1" PING >/dev/null 2>&1; }

# wait_ready PORT PID: until the server answers PING, or die if it exits first.
wait_ready() {
  for _ in $(seq 200); do
    [ "$(redis-cli -h "$HOST" -p "$1" PING 2>/dev/null)" = PONG ] && return 0
    kill -0 "$2" 2>/dev/null || die "the server on port $1 (pid $2) exited at start"
    sleep 0.05
  done
  die "the server on port $1 (pid $2) did not answer within 10 s"
}

# check_pid PORT PID: the server on PORT must be the process we started (INFO process_id).
check_pid() {
  local seen
  seen=$(redis-cli -h "$HOST" -p "$1" INFO server | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}')
  [ "$seen" = "$2" ] || die "port $1 is answered by pid '$seen', not the server started here ($2)"
}

build_rlserver() {
  if [ -n "${RLSERVER_BIN:-}" ]; then
    RLSERVER=$RLSERVER_BIN
    [ -x "$RLSERVER" ] || die "RLSERVER_BIN=$RLSERVER is not an executable"
    return 0
  fi
  local d
  d=$(mktemp -d -t rlbench-bin.XXXXXX)
  OWN_DIRS+=("$d")
  (cd "$ROOT" && go build -o "$d/rlserver" ./cmd/rlserver) || die "go build ./cmd/rlserver failed"
  RLSERVER=$d/rlserver
}

start_redis() {
  local port=$1 cpus=${2:-} flags=("${@:3}") dir
  need redis-server redis-cli
  port_busy "$port" && die "port $port is already in use (set RPORT or PORT)"
  dir=$(mktemp -d -t rlbench-redis.XXXXXX)
  OWN_DIRS+=("$dir")
  # taskset execs redis-server, so $! is the server's PID.
  $(pin "$cpus") redis-server --port "$port" --bind "$HOST" --save '' --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log" --daemonize no --io-threads 1 "${flags[@]}" >/dev/null 2>&1 &
  REDIS_PID=$!
  OWN_PIDS+=("$REDIS_PID")
  wait_ready "$port" "$REDIS_PID"
  check_pid "$port" "$REDIS_PID"
}

start_rlserver() {
  local port=$1 cpus=${2:-} procs=${3:-} flags=("${@:4}") dir
  [ -n "${RLSERVER:-}" ] || build_rlserver
  port_busy "$port" && die "port $port is already in use (set PORT)"
  [ ${#flags[@]} -gt 0 ] || flags=(--save-interval 0)
  # A data directory of its own, removed when it stops: a server that snapshots must not load
  # what an earlier run (or another build) left in ./data. A --dir in flags comes later and wins.
  # (stop_server removes it, on exit too: cleanup stops every server.)
  dir=$(mktemp -d -t rlbench-data.XXXXXX)
  $(pin "$cpus") env ${procs:+GOMAXPROCS=$procs} "$RLSERVER" --bind "$HOST" --port "$port" --dir "$dir" \
    "${flags[@]}" >/dev/null 2>&1 &
  RL_PID=$!
  OWN_PIDS+=("$RL_PID")
  DATA_OF[$RL_PID]=$dir
  wait_ready "$port" "$RL_PID"
  check_pid "$port" "$RL_PID"
}

# stop_server PID: SIGTERM (SIGKILL after 5 s), then forget the PID, so that cleanup never
# signals a PID the system has since given to another process.
stop_server() {
  local pid=$1 p keep=()
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
  fi
  for p in "${OWN_PIDS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  OWN_PIDS=("${keep[@]}")
  if [ -n "${DATA_OF[$pid]:-}" ]; then
    rm -rf "${DATA_OF[$pid]}"
    unset "DATA_OF[$pid]"
  fi
}

ALGOS="gcra fixed log slide bucket all3"

load_scripts() {
  local a sha
  for a in $ALGOS; do
    sha=$(redis-cli -h "$HOST" -p "$1" SCRIPT LOAD "$(cat "$HARNESS/lua/$a.lua")" | tr -d '\r')
    [[ $sha =~ ^[0-9a-f]{40}$ ]] || die "SCRIPT LOAD lua/$a.lua failed: $sha"
    printf -v "SHA_$a" '%s' "$sha"
  done
}

# limiter_cmd TARGET ALGO USE: the default command line; CMD_<algo> (bench) or
# MCMD_<algo> (memory) override it, with {sha} standing for the script's SHA1.
# Key names: NAMES=harness (default for bench) rl:<algo>:<12 digits>, 19-22 bytes;
# NAMES=short (default for memory) rl<a>:<12 digits>, 16 bytes.
limiter_cmd() {
  local target=$1 algo=$2 use=$3 names key win period line v
  if [ "$use" = memory ]; then names=${NAMES:-short} win=86400 period=1d v=MCMD_$algo
  else names=${NAMES:-harness} win=60 period=60s v=CMD_$algo; fi
  if [ "$names" = short ]; then key="rl${algo:0:1}:__rand_int__"; else key="rl:$algo:__rand_int__"; fi
  if [ -n "${!v:-}" ]; then line=${!v}
  elif [ "$target" = redis ]; then
    case $algo in
      gcra|bucket) line="EVALSHA {sha} 1 $key 100 100 $win 1" ;;
      all3) line="EVALSHA {sha} 3 $key:s $key:d $key 100 100 1 1000000 86400 1000000 $win" ;;
      *) line="EVALSHA {sha} 1 $key 100 $win 1" ;;
    esac
  else
    case $algo in
      gcra) line="CL.THROTTLE $key 100 100 $win 1" ;;
      fixed) line="RL.FIXED $key 100 $period" ;;
      log) line="RL.LOG $key 100 $period" ;;
      slide) line="RL.SLIDE $key 100 $period" ;;
      bucket) line="RL.BUCKET $key 100 100 $period" ;;
      all3) line="RL.ALL $key:s BUCKET 100 100 1s AND $key:d FIXED 1000000 1d AND $key SLIDE 1000000 $period" ;;
      *) die "unknown limiter $algo" ;;
    esac
  fi
  if [[ $line == *"{sha}"* ]]; then
    v=SHA_$algo
    [ -n "${!v:-}" ] || die "$algo's command needs {sha}: load the scripts first"
    line=${line//\{sha\}/${!v}}
  fi
  printf '%s' "$line"
}

# smoke PORT LINE: one call of a benchmark command line; dies on an error reply.
smoke() {
  local out
  # shellcheck disable=SC2086
  out=$(redis-cli -h "$HOST" -p "$1" ${2//__rand_int__/000000000000} 2>&1 | tr '\n' ' ')
  [[ $out == *ERR* || $out == *rror* || $out == *"Could not connect"* ]] && die "smoke check failed: $2 -> $out"
  printf '%s' "$out"
}

proc_ticks() { [ -r "/proc/$1/stat" ] && awk '{print $14 + $15}' "/proc/$1/stat" || echo ""; }
proc_nvcsw() { [ -r "/proc/$1/status" ] && awk '/^nonvoluntary_ctxt_switches:/ {print $2}' "/proc/$1/status" || echo ""; }

# build_cmd NAME: builds ./bench/cmd/NAME once per script into a temporary directory (removed
# at exit); its path is then in BIN_<NAME>.
build_cmd() {
  local v="BIN_$1" d
  [ -z "${!v:-}" ] || return 0
  d=$(mktemp -d -t "rlbench-$1.XXXXXX")
  OWN_DIRS+=("$d")
  (cd "$ROOT" && go build -o "$d/$1" "./bench/cmd/$1") || die "go build ./bench/cmd/$1 failed"
  printf -v "$v" '%s' "$d/$1"
}

# gauge_ms: the machine's noise gauge (bench/gauge) on the server's CPU, in ms; built once.
gauge_ms() {
  build_cmd gauge
  $(pin "${SERVER_CPUS:-}") "$BIN_gauge"
}

# start_load PORT CLIENTS PIPELINE RATE OUTFILE LINE...: a load on PORT from CLIENT_CPUS, in the
# background (its pid in LOAD_PID), on KEYSPACE random keys: LINE at RATE commands a second in
# all with bench/cmd/pacedload (its summary line in OUTFILE), or, RATE empty, redis-benchmark as
# fast as the server answers. Either runs until killed.
start_load() {
  local port=$1 c=$2 p=$3 rate=$4 out=$5
  shift 5
  if [ -n "$rate" ]; then
    build_cmd pacedload
    $(pin "$CLIENT_CPUS") "$BIN_pacedload" -addr "$HOST:$port" -c "$c" -p "$p" -rate "$rate" -keys "$KEYSPACE" "$@" >"$out" 2>&1 &
  else
    $(pin "$CLIENT_CPUS") redis-benchmark -h "$HOST" -p "$port" -c "$c" -P "$p" -n 1000000000 -r "$KEYSPACE" -q "$@" >/dev/null 2>&1 &
  fi
  LOAD_PID=$!
}
proc_rss_kb() { [ -r "/proc/$1/status" ] && awk '/^VmRSS:/ {print $2}' "/proc/$1/status" || echo ""; }
cpu_jiffies() { awk '/^cpu / {b = $2 + $3 + $4 + $7 + $8; print b, b + $5 + $6 + $9, $9}' /proc/stat; }

# link_up PORT: the replica on PORT reports its link up; wait_link PORT waits for it (60 s).
link_up() {
  redis-cli -h "$HOST" -p "$1" INFO replication | tr -d '\r' | grep -q '^master_link_status:up$'
}
wait_link() {
  for _ in $(seq 6000); do link_up "$1" && return 0; sleep 0.01; done
  die "the replica on port $1 did not come up within 60 s"
}

# run_rounds LACK...: calls the script's round function for rounds 1..ROUNDS, then once more
# while the command LACK prints a positive count (the runs the noise gauge dropped that some
# setting and test still lacks on a side), at most REPEATS more rounds.
run_rounds() {
  local r lack
  for r in $(seq "$ROUNDS"); do round "$r"; done
  r=$ROUNDS
  while [ "$r" -lt $((ROUNDS + REPEATS)) ]; do
    lack=$("$@")
    [ "$lack" -gt 0 ] || break
    r=$((r + 1))
    hlog "$lack run(s) short of $ROUNDS kept on a side: round $r"
    round "$r"
  done
}

# settle PID: wait, at most 15 s, until the server has been idle (at most one CPU tick)
# for SETTLE_S seconds [0.3]: the work a run leaves behind (a snapshot of its changes, a
# compaction) is counted in its server CPU and does not disturb the gauge that follows.
# With snapshots every second, use SETTLE_S=1.5 (ab.sh does): a snapshot can be a second away.
settle() {
  local a b waited=0 step=${SETTLE_S:-0.3}
  a=$(proc_ticks "$1")
  while :; do
    sleep "$step"
    b=$(proc_ticks "$1")
    { [ -z "$a" ] || [ -z "$b" ] || [ $((b - a)) -le 1 ]; } && return 0
    a=$b
    waited=$(awk -v w="$waited" -v s="$step" 'BEGIN {print w + s}')
    awk -v w="$waited" 'BEGIN {exit !(w >= 15)}' && { hlog "WARNING: server $1 still busy after 15 s"; return 0; }
  done
}

# bench_once PORT PID C P N OUTFILE ARGS...: one redis-benchmark run (client pinned to
# CLIENT_CPUS), printed as the CSV fields n..server_nvcsw of raw.csv: the noise gauge before
# and after, and the server's involuntary context switches during the run, close the row.
# The server's CPU runs from an idle server to the server idle again (settle).
bench_once() {
  local port=$1 pid=$2 c=$3 p=$4 n=$5 out=$6 s0 s1 t0 t1 t2 cu cs el g0 g1 v0 v1
  shift 6
  settle "$pid"
  g0=$(gauge_ms)
  s0=$(cpu_jiffies); t0=$(proc_ticks "$pid"); v0=$(proc_nvcsw "$pid")
  # bash's time keyword gives the client's own CPU (user, system) and the wall time.
  { TIMEFORMAT='%U %S %R'; time $(pin "${CLIENT_CPUS:-}") redis-benchmark -h "$HOST" -p "$port" \
      -c "$c" -P "$p" -n "$n" -r "$KEYSPACE" --csv "$@" >"$out" 2>&1; } 2>"$out.time" || true
  s1=$(cpu_jiffies); t1=$(proc_ticks "$pid"); v1=$(proc_nvcsw "$pid")
  settle "$pid"
  t2=$(proc_ticks "$pid")
  [ -n "$t1" ] && [ -n "$t2" ] && t1=$t2
  g1=$(gauge_ms)
  read -r cu cs el <"$out.time" || { cu=0 cs=0 el=0; }
  grep -q 'ERR\|Error' "$out" && hlog "WARNING: $out: $(grep -m2 'ERR\|Error' "$out" | tr '\n' ' ')"
  # redis-benchmark --csv: "test","rps","avg","min","p50","p95","p99","max"
  awk -F'","' -v n="$n" -v cu="$cu" -v cs="$cs" -v el="$el" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" \
      -v s0="$s0" -v s1="$s1" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
      -v g0="$g0" -v g1="$g1" -v nv="$( [ -n "$v0" ] && [ -n "$v1" ] && echo $((v1 - v0)) )" '
    NF >= 8 && $2 ~ /^[0-9.]+$/ { l = $0 }
    END {
      if (l == "") { print n ",,,,,,," el ",,,,," "," g0 "," g1 "," nv; exit }
      split(l, f, "\",\""); gsub(/"/, "", f[8])
      split(s0, a, " "); split(s1, b, " "); dt = b[2] - a[2]; if (dt <= 0) dt = 1
      srv = (t0 != "" && t1 != "" && el > 0) ? sprintf("%.2f", (t1 - t0) / hz / el) : ""
      printf "%s,%s,%s,%s,%s,%s,%s,%s,%.2f,%s,%.1f,%.1f,%s,%s,%s,%s\n", n, f[2], f[3], f[5], f[6], f[7], f[8], el,
        (el > 0 ? (cu + cs) / el : 0), srv, 100 * (b[1] - a[1]) / dt, 100 * (b[3] - a[3]) / dt, load, g0, g1, nv
    }' "$out"
}

RAW_HEADER=run,setting,clients,pipeline,test,n,rps,avg_ms,p50_ms,p95_ms,p99_ms,max_ms,elapsed_s,client_cpu,server_cpu,sys_busy_pct,steal_pct,load1,gauge_before_ms,gauge_after_ms,server_nvcsw

# run_throughput TARGET PORT PID OUT_DIR RUN
# Knobs: SETTINGS ("clients:pipeline" pairs, "50:1 50:16"), TESTS (ping_mbulk set and
# the limiters), KEYSPACE (100000 random keys), DURATION (target seconds per run: n is
# calibrated by a short run first), N (a fixed -n instead: no calibration), FLUSH (1:
# FLUSHALL before every run), CLIENT_CPUS.
run_throughput() {
  local target=$1 port=$2 pid=$3 dir=$4 run=$5 s c p t n cn crps row
  local -A line
  mkdir -p "$dir"
  [ -f "$dir/raw.csv" ] || echo "$RAW_HEADER" >"$dir/raw.csv"
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(uname -srm), nproc=$(nproc), cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "target: $target $HOST:$port pid=$pid version=$(redis-cli -h "$HOST" -p "$port" INFO server | tr -d '\r' | awk -F: '$1 == "redis_version" {print $2}')"
    echo "client: $(redis-benchmark --version | head -1), cpus=${CLIENT_CPUS:-any}"
    echo "settings=$SETTINGS keyspace=$KEYSPACE duration=$DURATION n=${N:-calibrated} flush=$FLUSH"
  } >>"$dir/meta.txt"
  for t in $TESTS; do
    case $t in
      ping_mbulk|set) line[$t]="-t $t" ;;
      *) line[$t]=$(limiter_cmd "$target" "$t" bench)
         hlog "$target $t: ${line[$t]} -> $(smoke "$port" "${line[$t]}")"
         echo "cmd $t: ${line[$t]}" >>"$dir/meta.txt" ;;
    esac
  done
  for s in $SETTINGS; do
    c=${s%%:*} p=${s##*:}
    for t in $TESTS; do
      n=${N:-}
      if [ -z "$n" ]; then
        cn=$((c * p * 200)); [ $cn -lt 10000 ] && cn=10000; [ $cn -gt 100000 ] && cn=100000
        [ "$FLUSH" = 1 ] && redis-cli -h "$HOST" -p "$port" FLUSHALL >/dev/null
        # shellcheck disable=SC2086
        crps=$(bench_once "$port" "$pid" "$c" "$p" "$cn" "$dir/cal-${c}c${p}p-$t.out" ${line[$t]} | cut -d, -f2)
        crps=${crps%.*}
        [ -n "$crps" ] || die "calibration of $t at $s failed: see $dir/cal-${c}c${p}p-$t.out"
        n=$(( (crps * DURATION + 9999) / 10000 * 10000 ))
        [ $n -lt 20000 ] && n=20000; [ $n -gt 20000000 ] && n=20000000
      fi
      [ "$FLUSH" = 1 ] && redis-cli -h "$HOST" -p "$port" FLUSHALL >/dev/null
      # shellcheck disable=SC2086
      row=$(bench_once "$port" "$pid" "$c" "$p" "$n" "$dir/run$run-${c}c${p}p-$t.out" ${line[$t]})
      echo "$run,$s,$c,$p,$t,$row" >>"$dir/raw.csv"
      hlog "$target run $run c=$c P=$p $t n=$n: $(echo "$row" | awk -F, '{printf "%s ops/s, p50 %s ms, p99 %s ms, client CPU %s, server CPU %s", $2, $4, $6, $9, $10}')"
    done
  done
}

MEMORY_HEADER=run,case,hits,keys_before,keys_after,used_before,used_after,used_per_key,memusage_per_key,rss_before_kb,rss_after_kb,rss_per_key,fill_s,fill_ops,encoding

info_memory() { redis-cli -h "$HOST" -p "$1" INFO memory | tr -d '\r' | awk -F: -v k="$2" '$1 == k {print $2}'; }
dbsize() { redis-cli -h "$HOST" -p "$1" DBSIZE | tr -d '\r' | grep -E '^[0-9]+$' || echo ""; }

# measure_memory TARGET PORT PID CASE OUT_CSV RUN
# Cases: gcra fixed slide bucket (one hit per key), log1 (RL.LOG / log.lua, one entry per
# key), log60 (LOG_HITS=60 entries per key: the per-entry cost is (log60 - log1) / 59).
# Windows are one day, so nothing expires during the fill. Keys: KEYS_N, filled
# round-robin through redis-cli --pipe; MEMORY USAGE on SAMPLE of them.
measure_memory() {
  local target=$1 port=$2 pid=$3 cs=$4 csv=$5 run=$6 algo hits line k0 k1 u0 u1 r0 r1 t0 t1 mu key0 enc log
  case $cs in
    log1) algo=log hits=1 ;;
    log60) algo=log hits=${LOG_HITS:-60} ;;
    *) algo=$cs hits=1 ;;
  esac
  line=$(limiter_cmd "$target" "$algo" memory)
  [ -f "$csv" ] || echo "$MEMORY_HEADER" >"$csv"
  log=${csv%.csv}-fill-$run-$cs.log
  sleep 0.5
  k0=$(dbsize "$port") u0=$(info_memory "$port" used_memory) r0=$(proc_rss_kb "$pid")
  t0=$(date +%s.%N)
  python3 "$HARNESS/fill.py" "$line" "$KEYS_N" "$hits" | redis-cli -h "$HOST" -p "$port" --pipe >"$log" 2>&1 ||
    die "fill failed: $(tail -3 "$log")"
  t1=$(date +%s.%N)
  grep -q 'errors: 0,' "$log" || hlog "WARNING: $(tail -1 "$log")"
  sleep 0.5
  k1=$(dbsize "$port") u1=$(info_memory "$port" used_memory) r1=$(proc_rss_kb "$pid")
  mu=$(python3 "$HARNESS/fill.py" --sample "$line" "$KEYS_N" "${SAMPLE:-2000}" |
    redis-cli -h "$HOST" -p "$port" 2>/dev/null | awk '/^[0-9]+$/ {s += $1; n++} END {if (n) printf "%.1f", s / n}')
  key0=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /__rand_int__/) {print $i; exit}}' <<<"$line")
  key0=${key0//__rand_int__/000000000000}
  enc=$(redis-cli -h "$HOST" -p "$port" OBJECT ENCODING "$key0" 2>/dev/null | tr -d '\r' | head -1)
  awk -v run="$run" -v cs="$cs" -v h="$hits" -v k0="$k0" -v k1="$k1" -v u0="$u0" -v u1="$u1" -v mu="$mu" \
      -v r0="$r0" -v r1="$r1" -v t0="$t0" -v t1="$t1" -v n="$KEYS_N" -v enc="$enc" 'BEGIN {
    kk = (k0 != "" && k1 != "" && k1 - k0 > 0) ? k1 - k0 : n
    pu = (u0 != "" && u1 != "") ? sprintf("%.1f", (u1 - u0) / kk) : ""
    pr = (r0 != "" && r1 != "") ? sprintf("%.1f", (r1 - r0) * 1024 / kk) : ""
    printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.2f,%.0f,%s\n", run, cs, h, k0, k1, u0, u1, pu, mu, r0, r1, pr,
      t1 - t0, n * h / (t1 - t0), enc }' >>"$csv"
  hlog "$target $cs: $(tail -1 "$csv" | awk -F, '{printf "keys %s -> %s, RSS %s B/key, MEMORY USAGE %s B/key, used_memory %s B/key, fill %s s", $4, $5, $12, $9, $8, $13}')"
}
