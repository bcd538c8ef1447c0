package engine

// RL.LOG keeps the admission times of its units, oldest first, in one
// []int64: a unit admitted alone is its timestamp t (>= 0); n >= 2 units
// admitted at the same t are the pair -(t+1), n. So a cost-n admission
// costs 8 or 16 bytes, never n words, and the log holds at most 8 bytes per
// admitted unit.

// logRun returns the run starting at entries[i]: its time, its unit count
// and the index of the next run.
func logRun(entries []int64, i int) (t, n int64, next int) {
	if v := entries[i]; v < 0 {
		return -v - 1, entries[i+1], i + 2
	}
	return entries[i], 1, i + 1
}

// logDecide runs RL.LOG on a log holding total units. It drops the runs
// that have left the window (t <= now - W), decides, and appends on
// admission. The returned slice may share entries' array; the caller
// stores it in place of entries.
func logDecide(p Params, entries []int64, total, now int64) ([]int64, int64, Result) {
	// An entry t counts during [t, t+W): drop those with t + W <= now.
	i := 0
	for i < len(entries) {
		t, n, next := logRun(entries, i)
		if t > now-p.Window {
			break
		}
		total -= n
		i = next
	}
	entries = entries[i:]
	r := Result{Limit: p.Limit, RetryAfter: -1}
	if fitsUnder(total, p.Cost, p.Limit) {
		if p.Cost > 0 {
			entries = logAppend(entries, now, p.Cost)
			total += p.Cost
		}
	} else {
		r.Limited = true
		if p.Cost <= p.Limit {
			// The request fits once the oldest total+cost-limit units are gone.
			need := total - (p.Limit - p.Cost)
			for j := 0; j < len(entries); {
				t, n, next := logRun(entries, j)
				if need -= n; need <= 0 {
					r.RetryAfter = t + p.Window - now
					break
				}
				j = next
			}
		}
	}
	r.Remaining = max(p.Limit-total, 0)
	if len(entries) > 0 {
		r.ResetAfter = logNewest(entries) + p.Window - now
	}
	return entries, total, r
}

// lastRun reports whether the log ends with a run (its last word is then a
// count). Negative words only start runs, so the second-to-last word
// decides: no tail walk is needed.
func lastRun(entries []int64) bool {
	k := len(entries)
	return k >= 2 && entries[k-2] < 0
}

// logAppend adds n units at time t (not before the newest entry), merging
// with a run or unit already at t.
func logAppend(entries []int64, t, n int64) []int64 {
	k := len(entries)
	switch {
	case lastRun(entries) && entries[k-2] == -(t+1):
		entries[k-1] = satAdd(entries[k-1], n)
		return entries
	case k > 0 && !lastRun(entries) && entries[k-1] == t:
		entries[k-1] = -(t + 1)
		return append(entries, satAdd(n, 1))
	case n == 1:
		return append(entries, t)
	}
	return append(entries, -(t + 1), n)
}

// logNewest returns the time of the newest unit of a non-empty log.
func logNewest(entries []int64) int64 {
	if lastRun(entries) {
		return -entries[len(entries)-2] - 1
	}
	return entries[len(entries)-1]
}
