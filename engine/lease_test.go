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

// TestLeasesAreCompact: a live lease costs under 12 bytes of its key's
// record (the aim): 20 leases of a 10 s term, taken 1 ms apart,
// against one.
func TestLeasesAreCompact(t *testing.T) {
	st := New(1).Store()
	key := []byte("rlg:000000000042")
	now := int64(1_700_000_000_123_456_789)
	p := Params{Limit: 100, Window: 10e9, Cost: 1}
	size := func() int64 {
		n, ok := st.MemoryUsage(key, now)
		require.True(t, ok)
		return n
	}
	_, err := st.Limit(KindLease, key, p, now)
	require.NoError(t, err)
	one := size()
	for range 19 {
		now += 1e6
		_, err := st.Limit(KindLease, key, p, now)
		require.NoError(t, err)
	}
	per := float64(size()-one) / 19
	t.Logf("one lease: %d bytes in all; each more: %.1f bytes", one, per)
	require.Less(t, per, 12.0)
}

// TestLeaseKeyExpiresWithItsLastLease: the sweep drops a lease key at its
// last lease's end, and counts its leases as expired.
func TestLeaseKeyExpiresWithItsLastLease(t *testing.T) {
	e := New(2)
	st := e.Store()
	now := int64(1_700_000_000_000_000_000)
	for i, term := range []int64{1e9, 3e9} {
		_, err := st.Limit(KindLease, []byte("k"), Params{Limit: 5, Window: term, Cost: int64(i + 1)}, now)
		require.NoError(t, err)
	}
	require.Equal(t, 0, e.Sweep(now+3e9-1).Expired)
	require.Equal(t, 1, st.Len())
	require.Equal(t, 1, e.Sweep(now+3e9).Expired, "the key goes at its last lease's end")
	require.Equal(t, 0, st.Len())
	require.Equal(t, LeaseStats{Acquired: 2, Expired: 2}, e.LeaseStats())
}
