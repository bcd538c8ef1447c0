package engine

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// An algorithm that exists only in the tests, to show that one file
// and one row are all a new algorithm takes: RL.QUOTA admits at most limit
// units in total, ever (a lifetime quota; the key never expires).

const kindQuota Kind = 7 // the last a record header holds

// quotaState is a quota key's state. The zero value is fresh.
type quotaState struct{ used int64 }

func quotaOf(w words) quotaState  { return quotaState{used: w.a} }
func (s quotaState) words() words { return words{a: s.used} }

// quotaWords is quotaDecide over the state's words.
func quotaWords(p Params, w words, now int64) (words, Result) {
	next, r := quotaDecide(p, quotaOf(w), now)
	return next.words(), r
}

func quotaDecide(p Params, s quotaState, now int64) (quotaState, Result) {
	r := Result{Limit: p.Limit, RetryAfter: -1, ResetAfter: never - now}
	if fitsUnder(s.used, p.Cost, p.Limit) {
		s.used += p.Cost
	} else {
		r.Limited = true
	}
	r.Remaining = max(p.Limit-s.used, 0)
	return s, r
}

var quotaAlgorithm = Algorithm{
	Kind: kindQuota, Name: "quota",
	encode: func(dst []byte, _ uint64, w words, _ []byte) []byte {
		return binary.AppendUvarint(dst, uint64(quotaOf(w).used))
	},
	decode: func(b []byte, i int, _ uint64) (words, int, int) {
		u, i := uvarint(b, i)
		return quotaState{used: int64(u)}.words(), 0, i
	},
	decide: quotaWords,
}

// The one row.
func init() { algorithms = append(algorithms, &quotaAlgorithm) }

// TestTestOnlyAlgorithm: the test-only algorithm works through everything a
// kind of key goes through: decisions, wrong-type checks, TYPE, the
// change feed, a restore into another engine, expiry and SCAN.
func TestTestOnlyAlgorithm(t *testing.T) {
	const now = int64(1e9)
	e := New(2)
	f := e.NewFeed()
	st := e.Store()
	p := Params{Limit: 3, Window: 1, Cost: 2}
	r, err := st.Limit(kindQuota, []byte("q"), p, now)
	require.NoError(t, err)
	require.False(t, r.Limited)
	require.Equal(t, int64(1), r.Remaining)
	r, err = st.Limit(kindQuota, []byte("q"), p, now+1e12)
	require.NoError(t, err)
	require.True(t, r.Limited, "a quota never refills")
	_, err = st.Limit(KindFixed, []byte("q"), p, now)
	require.ErrorIs(t, err, ErrWrongType)
	require.Equal(t, kindQuota, st.Type([]byte("q"), now))
	require.Equal(t, "quota", kindQuota.Name())

	var recs []Record
	f.Next(func(r Record) { recs = append(recs, r) })
	require.Equal(t, []Record{{Key: "q", Kind: kindQuota, Deadline: maxDeadline, A: 2}}, recs)

	e2 := New(1)
	require.True(t, e2.Restore(recs[0], now))
	r, err = e2.Store().Limit(kindQuota, []byte("q"), Params{Limit: 3, Window: 1, Cost: 1}, now)
	require.NoError(t, err)
	require.False(t, r.Limited)
	require.Zero(t, r.Remaining, "the restored key kept its use")
	var keys []KeyInfo
	e2.Store().ScanShard(0, now, func(k KeyInfo) { keys = append(keys, k) })
	require.Equal(t, []KeyInfo{{Key: "q", Kind: kindQuota}}, keys)
}
