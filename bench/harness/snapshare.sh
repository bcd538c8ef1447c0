#!/usr/bin/env bash
# What snapshots take of a server's CPU, from cpuprofile.sh's profiles: for each profile given,
# the share of its samples in snapshot work (persist's snapshotter, Pebble's commits, flushes and
# compactions, the engine's change feed, and marking a written or deleted key for the feeds), and the
# ns per request that is, from runs.txt beside it.
#
# A 10 s profile holds some 800 samples, so a share of 2% is 16 of them: one run's share moves by
# a quarter from sampling alone. POOL=1 prints instead the share over all the profiles given,
# merged (runs of one build and command, from one sitting or several).
#
# Usage: [POOL=1] bench/harness/snapshare.sh bench/data/<dir>/*.pprof
set -euo pipefail
focus='persist\.|pebble|markDirtyLocked|deletedLocked|engine\.\(\*Feed\)'
if [[ ${POOL:-0} == 1 ]]; then
	go tool pprof -top -focus="$focus" "$@" 2>/dev/null | grep -E '^Showing nodes accounting' | head -1 |
		sed -E "s/.*, ([0-9.]+)% of ([0-9.]+s).*/pooled over $# profiles: snapshot share \1% of \2 of samples/"
	exit 0
fi
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
