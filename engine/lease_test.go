package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLeaseHotPathAllocatesNothing: an acquisition, a renewal and a
// release, on a key holding a few leases, allocate nothing (a lease
// operation's leases are decoded onto the stack).
func TestLeaseHotPathAllocatesNothing(t *testing.T) {
	st := New(4).Store()
	key := []byte("lease:42")
	now := int64(1_700_000_000_000_000_000)
	p := Params{Limit: 100, Window: 60e9, Cost: 1}
	for range 5 {
		_, err := st.Limit(KindLease, key, p, now)
		require.NoError(t, err)
	}
	n := testing.AllocsPerRun(1000, func() {
		now += 1000
		r, err := st.Limit(KindLease, key, p, now)
		require.NoError(t, err)
		require.False(t, r.Limited)
		_, ok, err := st.Renew(key, r.Token, 30e9, now)
		require.True(t, ok)
		require.NoError(t, err)
		ok, err = st.Release(key, r.Token, false, now)
		require.True(t, ok)
		require.NoError(t, err)
	})
	require.Zero(t, n)
	ls, err := st.Leases(key, now, nil)
	require.NoError(t, err)
	require.Len(t, ls, 5, "the five held throughout")
}

// BenchmarkLeaseAcquireRelease is a slot taken and given back on a key
// that holds no other lease (RL.ACQUIRE then RL.RELEASE ANY).
func BenchmarkLeaseAcquireRelease(b *testing.B) {
	st := New(4).Store()
	key := []byte("lease:42")
	now := int64(1_700_000_000_000_000_000)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += 1000
		r, err := st.Limit(KindLease, key, Params{Limit: 100, Window: 60e9, Cost: 1}, now)
		if err != nil || r.Limited {
			b.Fatal(err, r)
		}
		if ok, err := st.Release(key, 0, true, now); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
