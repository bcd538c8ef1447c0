package commands

import (
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
)

// RL.ALL key ALG args... [COST n] [RESERVE maxwait] [AND key ALG args... [COST n] [RESERVE maxwait]]...
//
// Several limits in one all-or-nothing decision (docs/algorithms.md,
// "Several limits at once"). A group is a key, an algorithm and its
// parameters as its own command takes them, then an optional COST; AND
// starts the next group. The grammar is positional, so a key named COST
// or AND is never ambiguous:
//
//	FIXED  limit window                 as RL.FIXED
//	SLIDE  limit window                 as RL.SLIDE
//	LOG    limit window                 as RL.LOG
//	BUCKET capacity rate period         as RL.BUCKET
//	GCRA   max_burst count period       as CL.THROTTLE (COST is its quantity)
//	LEASE  limit lease                  as RL.ACQUIRE
//
// The reply is [limited, limit, remaining, retry_after_ms, reset_after_ms,
// index, per_limit]: the first five where a single limiter puts them. A
// LEASE group's entry has a sixth element, its token (nil when refused).
// BUCKET, LOG and FIXED groups take RESERVE maxwait (docs/reservations.md):
// the call then waits for all of its limits at once, as long as the
// longest needs and no group's maxwait is passed, and its reply has two
// more elements, wait_ms and ticket (every limit's reservation has it).

// allScratch is a session's RL.ALL state, reused from call to call.
type allScratch struct {
	batch     engine.Batch
	keyArgs   []int // each group's key, as an argument index
	decisions []Decision
	memo      []allMemo // per group, the last call's parameters parsed
}

// allParams is how many parameters each algorithm takes after its name
// (in any ASCII case).
func allParams(alg []byte) (engine.Kind, int, bool) {
	for _, a := range allAlgorithms {
		if ascii.EqualFold(alg, a.name) {
			return a.kind, a.params, true
		}
	}
	return 0, 0, false
}

// allAlgorithms are RL.ALL's algorithms: each name, upper case, its kind
// and how many parameters it takes.
var allAlgorithms = [...]struct {
	name   string
	kind   engine.Kind
	params int
}{
	{"FIXED", engine.KindFixed, 2},
	{"SLIDE", engine.KindSlide, 2},
	{"LOG", engine.KindLog, 2},
	{"BUCKET", engine.KindBucket, 3},
	{"GCRA", engine.KindThrottle, 3},
	{"LEASE", engine.KindLease, 2},
}

// allGroup reads the group whose key is args[key]: its kind, its
// parameters, its options (COST and RESERVE, each at most once, in either
// order), and end, the index just past it (an AND, or the end of args).
// It allocates nothing.
func allGroup(args [][]byte, key int) (kind engine.Kind, params [][]byte, opt allOptions, end int, err error) {
	if key+1 >= len(args) {
		return 0, nil, opt, 0, ErrSyntax
	}
	kind, np, ok := allParams(args[key+1])
	if !ok {
		return 0, nil, opt, 0, ErrAllAlgorithm(args[key+1])
	}
	end = key + 2 + np
	if end > len(args) {
		return 0, nil, opt, 0, ErrSyntax
	}
	params = args[key+2 : end]
	for end < len(args) {
		var slot *[]byte
		switch {
		case ascii.EqualFold(args[end], "COST") && opt.cost == nil:
			slot = &opt.cost
		case ascii.EqualFold(args[end], "RESERVE") && opt.wait == nil:
			slot = &opt.wait
		default:
			return kind, params, opt, end, nil
		}
		if end+1 >= len(args) {
			return 0, nil, opt, 0, ErrSyntax
		}
		*slot, end = args[end+1], end+2
	}
	return kind, params, opt, end, nil
}

// allOptions are a group's options as given (nil when absent): COST's
// argument and RESERVE's.
type allOptions struct{ cost, wait []byte }

// allGroups walks the groups of an RL.ALL call: fn gets each group's
// number (from 1), the index of its key, its kind, its parameters and its
// options. It stops at the first malformed group,
// returning its number and the error.
func allGroups(args [][]byte, fn func(g, key int, kind engine.Kind, params [][]byte, opt allOptions) error) (int, error) {
	return allWalk(args, func(g, key int) (int, error) {
		kind, params, opt, end, err := allGroup(args, key)
		if err == nil {
			err = fn(g, key, kind, params, opt)
		}
		return end, err
	})
}

// allWalk walks the groups of an RL.ALL call: group reads the group
// numbered g (from 1) whose key is args[key] and returns the index just
// past it. allWalk checks that an AND or the end follows, and stops at
// the first error, returning the group's number.
func allWalk(args [][]byte, group func(g, key int) (end int, err error)) (int, error) {
	for g, key := 1, 1; ; g++ {
		end, err := group(g, key)
		switch {
		case err != nil:
			return g, err
		case end == len(args):
			return 0, nil
		case !ascii.EqualFold(args[end], "AND"):
			return g, ErrSyntax
		}
		key = end + 1
	}
}

// allMemo is one group of a session's last RL.ALL call: the arguments
// after its key (the algorithm, its parameters and any COST n), copied,
// and the limit they made. Clients send one policy call after call with
// other keys, so most groups match their memo byte for byte, which costs
// less than reading their numbers and periods again.
type allMemo struct {
	args    [][]byte // slices of buf
	buf     []byte
	limit   engine.Limit // Key unset
	reserve bool         // the group has RESERVE
}

// match returns the index just past the group whose key is args[key] if
// the arguments after the key are the memo's and an AND or the end
// follows them (so the grammar reads them as the memo's group).
func (m *allMemo) match(args [][]byte, key int) (end int, ok bool) {
	end = key + 1 + len(m.args)
	if len(m.args) == 0 || end > len(args) {
		return 0, false
	}
	for i, a := range m.args {
		if string(args[key+1+i]) != string(a) {
			return 0, false
		}
	}
	if end < len(args) && !ascii.EqualFold(args[end], "AND") {
		return 0, false
	}
	return end, true
}

// allMemoBytes bounds a memo's arguments, so that a session keeps no
// more than a policy's worth of them (a group's are a few dozen bytes).
const allMemoBytes = 128

// set makes the memo group's arguments spec and limit l; if spec is longer
// than allMemoBytes, it empties the memo instead.
func (m *allMemo) set(spec [][]byte, l engine.Limit, reserve bool) {
	m.buf, m.args = m.buf[:0], m.args[:0]
	size := 0
	for _, a := range spec {
		size += len(a)
	}
	if size > allMemoBytes {
		return
	}
	for _, a := range spec {
		m.buf = append(m.buf, a...)
	}
	at := 0
	for _, a := range spec {
		m.args = append(m.args, m.buf[at:at+len(a):at+len(a)])
		at += len(a)
	}
	l.Key = nil
	m.limit, m.reserve = l, reserve
}

// allNextKey is RL.ALL's key iterator (Command.NextKey): the index of
// the key after the one at after (after 0: the first key), 0 when there
// is none or the groups stop being well formed.
func allNextKey(args [][]byte, after int) int {
	if after == 0 {
		if len(args) > 1 {
			return 1
		}
		return 0
	}
	_, _, _, end, err := allGroup(args, after)
	if err != nil || end+1 >= len(args) || !ascii.EqualFold(args[end], "AND") {
		return 0
	}
	return end + 1
}

// allPeek reports whether an RL.ALL call charges nothing: every group
// has COST 0 (a replica serves such a call from its replicated state).
func allPeek(args [][]byte) bool {
	peek := true
	_, err := allGroups(args, func(_, _ int, _ engine.Kind, _ [][]byte, opt allOptions) error {
		v, ok := parseInt64(opt.cost)
		peek = peek && opt.cost != nil && ok && v == 0
		return nil
	})
	return err == nil && peek
}

// parseAllLimit parses one group's parameters and options into a limit;
// reserve reports a RESERVE option.
func parseAllLimit(key []byte, kind engine.Kind, params [][]byte, opt allOptions) (l engine.Limit, reserve bool, err error) {
	l, err = parseAllParams(key, kind, params, opt.cost)
	if err != nil || opt.wait == nil {
		return l, false, err
	}
	if kind != engine.KindBucket && kind != engine.KindLog && kind != engine.KindFixed {
		return l, false, ErrReserveKind
	}
	l.Wait, err = parseMaxWait(opt.wait)
	return l, true, err
}

// parseAllParams parses one group's parameters and cost into a limit.
func parseAllParams(key []byte, kind engine.Kind, params [][]byte, cost []byte) (engine.Limit, error) {
	l := engine.Limit{Key: key, Kind: kind, Params: engine.Params{Cost: 1}}
	var ints [2]int64
	for i := range len(params) - 1 {
		v, ok := parseInt64(params[i])
		if !ok {
			return l, ErrNotInteger
		}
		if v < 0 {
			return l, ErrNotPositive
		}
		ints[i] = v
	}
	period, err := clock.ParsePeriod(params[len(params)-1])
	if err != nil {
		return l, ErrPeriod(params[len(params)-1])
	}
	if cost != nil {
		v, ok := parseInt64(cost)
		if !ok {
			return l, ErrNotInteger
		}
		if v < 0 {
			return l, ErrNotPositive
		}
		l.Params.Cost = v
	}
	switch kind {
	case engine.KindThrottle:
		if ints[1] == 0 {
			return l, ErrAllZeroRate
		}
		if l.GCRA, err = engine.NewGCRAPeriod(ints[0], ints[1], period); err != nil {
			return l, err
		}
	case engine.KindBucket:
		if ints[1] == 0 {
			return l, ErrNotPositive
		}
		l.Params.Limit, l.Params.Rate, l.Params.Window = ints[0], ints[1], period
	default:
		l.Params.Limit, l.Params.Window = ints[0], period
	}
	return l, nil
}

func cmdAll(x *Ctx) {
	a := &x.C.all
	b := &a.batch
	b.Reset()
	a.keyArgs = a.keyArgs[:0]
	reserve := false
	if g, err := allWalk(x.Args, func(g, key int) (int, error) {
		if len(a.memo) < g {
			a.memo = append(a.memo, allMemo{})
		}
		m := &a.memo[g-1]
		end, ok := m.match(x.Args, key)
		l, rsv := m.limit, m.reserve
		if !ok {
			kind, params, opt, e, err := allGroup(x.Args, key)
			if err == nil {
				l, rsv, err = parseAllLimit(x.Args[key], kind, params, opt)
			}
			if err != nil {
				return 0, err
			}
			end = e
			m.set(x.Args[key+1:end], l, rsv) // a group too big for a memo clears it
		}
		reserve = reserve || rsv
		l.Key = x.Args[key]
		b.Add(l)
		a.keyArgs = append(a.keyArgs, key)
		return end, nil
	}); err != nil {
		x.Error(ErrAllGroup(g, err))
		return
	}
	limited, at, err := x.Store.Decide(b, x.Now)
	if err != nil {
		x.Error(ErrAllGroup(at+1, err))
		return
	}

	index, remaining, retry, reset := b.Summary()

	a.decisions = a.decisions[:0]
	for i, r := range b.Results {
		if limited && !r.Limited {
			continue // checked, not charged: not a decision of its own
		}
		a.decisions = append(a.decisions, Decision{Kind: b.Limits[i].Kind, Limited: r.Limited,
			Peek: !limited && b.Limits[i].Params.Cost == 0, Key: a.keyArgs[i]})
	}
	x.decideAll(a.decisions)

	w := x.W
	if reserve {
		w.Array(9)
	} else {
		w.Array(7)
	}
	if limited {
		w.Int(1)
	} else {
		w.Int(0)
	}
	w.Int(b.Results[index].Limit)
	w.Int(remaining)
	w.Int(retry)
	w.Int(reset)
	w.Int(int64(index + 1))
	w.Array(len(b.Results))
	for i, r := range b.Results {
		if b.Limits[i].Kind == engine.KindLease { // a refusal or a peek has no token
			writeLeaseReply(w, r)
			continue
		}
		ri, si := r.Millis()
		writeLimitReply(w, r.Limited, r.Limit, r.Remaining, ri, si)
	}
	if reserve {
		writeWaitTicket(w, limited, b.Wait, b.Ticket)
	}
}
