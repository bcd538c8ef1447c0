package engine

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/rlserver/rlserver/internal/sat"
	"github.com/rlserver/rlserver/internal/zigzag"
)

// RL.ACQUIRE, RL.RELEASE, RL.RENEW, RL.LEASES: a concurrency limit. A key
// holds leases, each a token, an end (Unix ns) and a cost; it admits an
// acquisition of cost n iff the costs of its live leases (end > now) plus
// n fit in limit. A lease ends at its end unless released first, so a
// dead holder's slot comes back exactly then, on the server's clock.
//
// Tokens are fencing tokens: a key's tokens strictly increase for ever.
// A token is max(now, the key's last token, the shard's last token) + 1:
// above the clock's reading and every token issued in the shard. The
// engine's highest token (TokenHigh) is part of the clock's high-water
// mark that snapshots and replication carry, so after a restart or a
// failover the clock reads above every token issued before. So a key
// whose last lease ended can simply go away: a later acquisition, after
// a DEL, a restart or a failover, issues a token above all of its old
// ones.
//
// In the record the leases are runs in token order, oldest first:
//
//	uvarint(zz(deadline - t0)) | uvarint(zz(deadline - end0)) | uvarint(cost0) | uvarint(t1 - t0) | ...
//
// with wrapping differences (every encoding is total). The deadline is
// the latest end, so the key expires with its last lease. A lease of a
// 10 s term acquired 1 ms after the one before costs 3 + 5 + 1 bytes.
// (Times are ns: a lease's end is its acquisition's time plus its term.)
// Outside the record (persistence's Record.Log) leases are triples
// token, end, cost, in token order.
//
// In words, a is the last token issued and c the number of stored leases
// (what their expiry counts); b is unused. Stored leases may have ended
// (a refused call writes nothing); every write drops them, so what is
// stored never costs more than limit.

// lease is one lease.
type lease struct{ token, end, cost int64 }

var leaseAlgorithm = Algorithm{
	Kind: KindLease, Name: "lease", hasRuns: true,
	// Body: zz(deadline - last token) | leases | byte length of the runs |
	// runs.
	encode: func(dst []byte, dl uint64, w words, runs []byte) []byte {
		dst = binary.AppendUvarint(dst, zigzag.Encode(int64(dl-uint64(w.a))))
		dst = binary.AppendUvarint(dst, uint64(w.c))
		dst = binary.AppendUvarint(dst, uint64(len(runs)))
		return append(dst, runs...)
	},
	decode: func(b []byte, i int, dl uint64) (w words, runs, end int) {
		var u uint64
		u, i = uvarint(b, i)
		w.a = int64(dl - uint64(zigzag.Decode(u)))
		u, i = uvarint(b, i)
		w.c = int64(u)
		runs = i
		u, i = uvarint(b, i)
		return w, runs, i + int(u)
	},
	decideRuns: leaseAcquire,
	toLog:      leasesToLog,
	fromLog:    leasesFromLog,
	found:      (*shard).tokenFloorLocked,
	stored:     (*shard).issuedLocked,
}

// leasesOf appends the leases encoded in runs (held under deadline dl)
// to dst, in token order.
func leasesOf(dst []lease, runs []byte, dl uint64) []lease {
	var t uint64
	for i, first := 0, true; i < len(runs); first = false {
		var g, d, c uint64
		g, i = uvarint(runs, i)
		d, i = uvarint(runs, i)
		c, i = uvarint(runs, i)
		if first {
			t = dl - uint64(zigzag.Decode(g))
		} else {
			t += g
		}
		dst = append(dst, lease{token: int64(t), end: int64(dl - uint64(zigzag.Decode(d))), cost: int64(c)})
	}
	return dst
}

// appendLeases encodes ls (in token order) as runs under deadline dl.
func appendLeases(dst []byte, ls []lease, dl uint64) []byte {
	for i, l := range ls {
		g := zigzag.Encode(int64(dl - uint64(l.token)))
		if i > 0 {
			g = uint64(l.token) - uint64(ls[i-1].token)
		}
		dst = binary.AppendUvarint(dst, g)
		dst = binary.AppendUvarint(dst, zigzag.Encode(int64(dl-uint64(l.end))))
		dst = binary.AppendUvarint(dst, uint64(l.cost))
	}
	return dst
}

func leasesToLog(dst []int64, dl uint64, w words, runs []byte) ([]int64, bool) {
	var buf [16]lease
	for _, l := range leasesOf(buf[:0], runs, dl) {
		dst = append(dst, l.token, l.end, l.cost)
	}
	return dst, true
}

func leasesFromLog(dst []byte, dl uint64, w words, log []int64) (words, []byte) {
	var stack [16]lease // as leasesToLog: most keys hold few leases
	ls := stack[:0]
	for i := 0; i+2 < len(log); i += 3 {
		ls = append(ls, lease{log[i], log[i+1], log[i+2]})
	}
	w.b, w.c = 0, int64(len(ls))
	return w, appendLeases(dst, ls, dl)
}

// liveLeases keeps the leases of ls alive at now (end > now), in place,
// and returns them, how many it dropped, and their total cost.
func liveLeases(ls []lease, now int64) (kept []lease, dropped, cost int64) {
	kept = ls[:0]
	for _, l := range ls {
		if l.end > now {
			kept = append(kept, l)
			cost = sat.Add(cost, l.cost)
		} else {
			dropped++
		}
	}
	return kept, dropped, cost
}

// leaseState encodes leases ls, with last token last, as a record's state
// into runs: its words, runs and deadline (the latest end; 0, fresh, when
// no lease is left).
func leaseState(ls []lease, last int64, runs []byte) held {
	var dl int64
	w := words{a: last, c: int64(len(ls))}
	for _, l := range ls {
		dl = max(dl, l.end)
	}
	return held{w: w, runs: appendLeases(runs, ls, uint64(dl)), deadline: dl}
}

// byEnd orders leases by their end.
func byEnd(a, b lease) int { return cmp.Compare(a.end, b.end) }

// leaseAcquire is RL.ACQUIRE as an algorithm: p.Limit is the limit,
// p.Window the lease's term (ns) and p.Cost n. It admits iff the live
// leases' costs plus n fit in the limit, then adds a lease of token
// max(now, last token) + 1 ending p.Window from now; r.Token is that
// token. Remaining is the limit less the live costs after the call; a
// refusal's wait is until enough leases end for n if none is released
// (-1 if n exceeds the limit); the reset is until the last lease ends.
// A call of cost 0 is a peek: it is never refused and stores nothing.
// scratch is room for the new runs. The shard raises cur's last token to
// its own (tokenFloorLocked) before the call.
func leaseAcquire(p Params, cur held, now int64, scratch []byte) (next held, r Result, write bool) {
	var buf [16]lease
	ls, _, used := liveLeases(leasesOf(buf[:0], cur.runs, uint64(cur.deadline)), now)
	r = Result{Limit: p.Limit, RetryAfter: -1}
	lastEnd := now
	for _, l := range ls {
		lastEnd = max(lastEnd, l.end)
	}
	if p.Cost == 0 || !fitsUnder(used, p.Cost, p.Limit) {
		r.Limited = p.Cost != 0
		r.Remaining = max(p.Limit-used, 0)
		r.ResetAfter = lastEnd - now
		if r.Limited && p.Cost <= p.Limit {
			// The ends in order, until enough would be free.
			slices.SortFunc(ls, byEnd)
			for _, l := range ls {
				used -= l.cost
				if fitsUnder(used, p.Cost, p.Limit) {
					r.RetryAfter = l.end - now
					break
				}
			}
		}
		return cur, r, false
	}
	token := max(now, cur.w.a) + 1
	ls = append(ls, lease{token: token, end: sat.Add(now, p.Window), cost: p.Cost})
	next = leaseState(ls, token, scratch)
	r.Remaining = p.Limit - used - p.Cost
	r.ResetAfter = next.deadline - now
	r.Token = token
	return next, r, true
}

// leaseEvents counts what happened to a shard's leases, under its lock.
type leaseEvents struct{ acquired, released, renewed, expired int64 }

// LeaseStats counts lease events since the engine started: leases
// acquired, released, renewed, and ended without a release (a holder
// that never released shows here).
type LeaseStats struct{ Acquired, Released, Renewed, Expired int64 }

// LeaseStats sums the shards' lease events.
func (e *Engine) LeaseStats() LeaseStats {
	var t LeaseStats
	for _, s := range e.shards {
		s.mu.Lock()
		t.Acquired += s.leases.acquired
		t.Released += s.leases.released
		t.Renewed += s.leases.renewed
		t.Expired += s.leases.expired
		s.mu.Unlock()
	}
	return t
}

// TokenHigh is the highest fencing token issued since the engine started
// (Unix ns + a few), 0 if none: the clock's high-water mark that
// snapshots and replication carry is at least this.
func (e *Engine) TokenHigh() int64 { return e.tokenHigh.Load() }

// tokenFloorLocked is h, a lease key's state found (zero if none), with
// its last token raised to the shard's: an acquisition issues a token
// above both. The runs do not depend on it.
func (s *shard) tokenFloorLocked(h held) held {
	h.w.a = max(h.w.a, s.lastToken)
	return h
}

// issuedLocked accounts for a lease acquired with token next.a, found
// (if found) with cur's stored leases: the shard's last token and the
// engine's highest move up to it; the leases the write dropped had ended.
func (s *shard) issuedLocked(cur words, found bool, next words) {
	token := next.a
	s.lastToken = max(s.lastToken, token)
	if s.tokenHigh != nil {
		for {
			h := s.tokenHigh.Load()
			if token <= h || s.tokenHigh.CompareAndSwap(h, token) {
				break
			}
		}
	}
	s.leases.acquired++
	if found {
		s.leases.expired += cur.c - (next.c - 1)
	}
}

// droppedLocked accounts for a record that expired whole: a lease key's
// leases all ended.
func (s *shard) droppedLocked(e entry) {
	if e.kind == KindLease {
		s.leases.expired += e.w.c
	}
}

// LeaseInfo is a live lease as RL.LEASES lists it.
type LeaseInfo struct {
	Token int64
	Left  int64 // ns until it ends
	Cost  int64
}

// leaseOp is what RL.RELEASE, RL.RENEW and RL.LEASES do to a key's live
// leases (leaseOpKind), with its arguments.
type leaseOp struct {
	kind     leaseOpKind
	token    int64
	anyLease bool  // release: the lease closest to its end, whatever its token
	term     int64 // renew: ns from now
	list     []LeaseInfo
}

type leaseOpKind uint8

const (
	opRelease leaseOpKind = iota
	opRenew
	opList
)

// apply runs op on live leases ls at now, in place. It returns the leases
// and whether they changed; a renewal sets op.term to the ns left, a
// listing appends to op.list.
func (op *leaseOp) apply(ls []lease, now int64) ([]lease, bool) {
	switch op.kind {
	case opRelease:
		at := -1
		for i, l := range ls {
			if op.anyLease && (at < 0 || l.end < ls[at].end) || !op.anyLease && l.token == op.token {
				at = i
			}
		}
		if at < 0 {
			return ls, false
		}
		return slices.Delete(ls, at, at+1), true
	case opRenew:
		for i := range ls {
			if ls[i].token == op.token {
				ls[i].end = sat.Add(now, op.term)
				op.term = ls[i].end - now
				return ls, true
			}
		}
	case opList:
		for _, l := range ls {
			op.list = append(op.list, LeaseInfo{Token: l.token, Left: l.end - now, Cost: l.cost})
		}
	}
	return ls, false
}

// Release ends the live lease of key with token, or with anyLease set the
// live lease closest to its end (ties: the lowest token), and reports
// whether there was one. The key goes when its last lease does.
func (st Store) Release(key []byte, token int64, anyLease bool, now int64) (bool, error) {
	op := leaseOp{kind: opRelease, token: token, anyLease: anyLease}
	return st.onLeases(key, now, &op)
}

// Renew makes key's live lease with token end term ns from now, longer
// or shorter, and returns the ns it has left; ok is false if no such
// lease lives (its holder lost it).
func (st Store) Renew(key []byte, token, term, now int64) (left int64, ok bool, err error) {
	op := leaseOp{kind: opRenew, token: token, term: term}
	ok, err = st.onLeases(key, now, &op)
	if !ok {
		return 0, false, err
	}
	return op.term, true, nil
}

// Leases appends key's live leases to dst, in token order.
func (st Store) Leases(key []byte, now int64, dst []LeaseInfo) ([]LeaseInfo, error) {
	op := leaseOp{kind: opList, list: dst}
	_, err := st.onLeases(key, now, &op)
	return op.list, err
}

// onLeases runs op on key's live leases under its shard's lock, at now or
// the shard's later decision time, stores them if op changed them (and
// counts it), and reports whether it did. The key goes when no lease is
// left. ErrWrongType if key holds another kind; a missing key has no
// leases.
func (st Store) onLeases(key []byte, now int64, op *leaseOp) (bool, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, e, tail, runs, ok := s.lookupRunsLocked(h, key, now)
	if !ok {
		return false, nil
	}
	if e.kind != KindLease {
		return false, ErrWrongType
	}
	var buf [16]lease
	ls, dropped, _ := liveLeases(leasesOf(buf[:0], runs, uint64(e.deadline)), now)
	ls, changed := op.apply(ls, now)
	if !changed || st.dry {
		return changed, nil
	}
	if op.kind == opRelease {
		s.leases.released++
	} else {
		s.leases.renewed++
	}
	s.leases.expired += dropped
	if len(ls) == 0 {
		s.removeLocked(off, tagOf(h))
		return true, nil
	}
	next := leaseState(ls, e.w.a, s.logBuf[:0])
	s.putLocked(off, tail, h, key, entry{kind: KindLease, w: next.w, deadline: next.deadline}, next.runs)
	if cap(next.runs) <= 64<<10 {
		s.logBuf = next.runs[:0]
	}
	return true, nil
}
