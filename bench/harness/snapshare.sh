#!/usr/bin/env bash
# What snapshots take of a server's CPU, from cpuprofile.sh's profiles: for each profile given,
# the share of its samples in snapshot work (persist's snapshotter, Pebble's commits, flushes and
# compactions, the engine's change feed, and marking a written key for the feeds), and the
# ns per request that is, from runs.txt beside it.
#
# Usage: bench/harness/snapshare.sh bench/data/<dir>/*.pprof
set -euo pipefail
focus='persist\.|pebble|markDirtyLocked|engine\.\(\*Feed\)'
for f in "$@"; do
	line=$(go tool pprof -top -focus="$focus" "$f" 2>/dev/null | grep -E '^Showing nodes accounting' | head -1)
	share=$(sed -E 's/.*, ([0-9.]+)% of.*/\1/' <<<"$line")
	[[ $line == *"accounting for 0,"* ]] && share=0
	run=$(basename "$f" .pprof)
	runs="$(dirname "$f")/runs.txt"
	reqs=$(awk -v r="$run:" '$1==r {print $3}' "$runs")
	ticks=$(awk -v r="$run:" '$1==r {print $5}' "$runs")
	bin=$(awk -v r="$run:" '$1==r {print $NF}' "$runs")
	# cpu_ticks are 1/100 s: ns per request = ticks * 1e7 / reqs.
	awk -v f="$run" -v s="$share" -v t="$ticks" -v q="$reqs" -v b="$bin" \
		'BEGIN { printf "%-16s %-20s snapshot share %5.2f%%  %5.1f ns/request\n", f, b, s, s/100*t*1e7/q }'
done
