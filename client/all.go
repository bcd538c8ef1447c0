package client

import (
	"context"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Limit is one limit of a call that decides several at once (AllowAll):
// a key, its policy, and what the request costs it. Cost 0 makes it a
// guard: checked, never charged.
type Limit struct {
	Key    string
	Policy Policy
	Cost   int64
}

// Results is the answer to AllowAll. Its Result is the deciding limit's:
// when refused, the refusing limit with the longest wait (RetryAfter 0
// and Allowed false means it can never pass: a cost above a limit); when
// allowed, the limit with the fewest calls left, and Remaining counts
// the identical calls that would still pass now. Index is that limit's
// place in the call (from 0), Each every limit's own answer in order:
// allowed, what each limit's own command answered; refused, the refusing
// limits' refusals and the others' answers to a cost-0 peek (nothing was
// charged).
type Results struct {
	Result
	Index int
	Each  []Result
}

// AllowAll decides several limits as one (RL.ALL): every limit at one
// clock reading of the server, all charged if all allow, none if any
// refuses. Keys must share a cluster slot on a cluster (a hash tag:
// "{tenant}:..."). Times are in ms whatever the algorithms.
func (l *Limiter) AllowAll(ctx context.Context, limits []Limit) (Results, error) {
	args := []any{"RL.ALL"}
	for i, lm := range limits {
		g, err := lm.Policy.group(lm.Key, lm.Cost)
		if err != nil {
			return Results{}, fmt.Errorf("limit %d: %w", i, err)
		}
		if i > 0 {
			args = append(args, "AND")
		}
		args = append(args, g...)
	}
	if len(limits) == 0 {
		return Results{}, fmt.Errorf("%w: no limits", ErrPolicy)
	}
	v, err := l.rdb.Do(ctx, args...).Slice()
	if err != nil {
		return Results{}, err
	}
	return parseAll(v, len(limits))
}

// group is a limit's group of RL.ALL: key, algorithm, parameters, COST.
func (p Policy) group(key string, cost int64) ([]any, error) {
	if _, _, err := p.args(key, cost); err != nil {
		return nil, err
	}
	switch p.Algorithm {
	case GCRA:
		return []any{key, "GCRA", p.Limit - 1, p.Rate, window(p.Period), "COST", cost}, nil
	case Bucket:
		return []any{key, "BUCKET", p.Limit, p.Rate, window(p.Period), "COST", cost}, nil
	}
	return []any{key, groupNames[p.Algorithm], p.Limit, window(p.Period), "COST", cost}, nil
}

var groupNames = [...]string{Fixed: "FIXED", Log: "LOG", Slide: "SLIDE", Concurrency: "LEASE"}

// parseAll reads RL.ALL's [limited, limit, remaining, retry, reset, index,
// per_limit] for n limits, times in ms.
func parseAll(v []any, n int) (Results, error) {
	if len(v) != 7 {
		return Results{}, fmt.Errorf("%w: %d elements", ErrReply, len(v))
	}
	head, err := parse(v[:5], time.Millisecond)
	if err != nil {
		return Results{}, err
	}
	idx, ok1 := v[5].(int64)
	each, ok2 := v[6].([]any)
	if !ok1 || !ok2 || len(each) != n || idx < 1 || int(idx) > n {
		return Results{}, fmt.Errorf("%w: index %v, %T of %d limits", ErrReply, v[5], v[6], n)
	}
	r := Results{Result: head, Index: int(idx) - 1, Each: make([]Result, n)}
	for i, e := range each {
		ev, ok := e.([]any)
		if !ok {
			return Results{}, fmt.Errorf("%w: limit %d is %T", ErrReply, i, e)
		}
		if r.Each[i], err = parse(ev, time.Millisecond); err != nil {
			return Results{}, err
		}
	}
	return r, nil
}

// AllowAll is Limiter.AllowAll, decided here: the same rules, all or
// nothing, for this process's requests.
func (l *Local) AllowAll(_ context.Context, limits []Limit) (Results, error) {
	if len(limits) == 0 {
		return Results{}, fmt.Errorf("%w: no limits", ErrPolicy)
	}
	var b engine.Batch
	for i, lm := range limits {
		p := lm.Policy
		if _, _, err := p.args(lm.Key, lm.Cost); err != nil {
			return Results{}, fmt.Errorf("limit %d: %w", i, err)
		}
		el := engine.Limit{Key: []byte(lm.Key), Kind: kinds[p.Algorithm],
			Params: engine.Params{Limit: p.Limit, Window: int64(p.Period), Rate: p.Rate, Cost: lm.Cost}}
		if p.Algorithm == GCRA {
			g, err := engine.NewGCRAPeriod(p.Limit-1, p.Rate, int64(p.Period))
			if err != nil {
				return Results{}, fmt.Errorf("limit %d: %w", i, err)
			}
			el.GCRA = g
		}
		b.Add(el)
	}
	now := l.now()
	l.sweep(now)
	limited, at, err := l.e.Store().Decide(&b, now)
	if err != nil {
		return Results{}, fmt.Errorf("limit %d: %w", at, err)
	}
	index, remaining, retry, reset := b.Summary()
	r := Results{Result: fromReply(limited, b.Results[index].Limit, remaining, retry, reset, time.Millisecond),
		Index: index, Each: make([]Result, len(limits))}
	for i, x := range b.Results {
		ri, si := x.Millis()
		r.Each[i] = fromReply(x.Limited, x.Limit, x.Remaining, ri, si, time.Millisecond)
		r.Each[i].Token = x.Token
	}
	return r, nil
}
