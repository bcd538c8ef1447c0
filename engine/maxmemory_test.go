package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestNoEviction: a full engine under noeviction refuses new keys of
// every kind with ErrOOM and changes nothing, lets existing keys go on,
// answers peeks of missing keys without storing them, and takes new keys
// again once no longer full.
func TestNoEviction(t *testing.T) {
	e := New(4)
	st := e.Store()
	now := int64(1_700_000_000) * int64(time.Second)
	g, _ := NewGCRA(0, 1, 60)
	if _, err := st.Throttle([]byte("old"), g, 1, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Limit(KindFixed, []byte("oldf"), Params{Limit: 5, Window: int64(time.Minute), Cost: 1}, now); err != nil {
		t.Fatal(err)
	}
	e.SetFull(true)
	for name, call := range map[string]func() error{
		"CL.THROTTLE": func() error { _, err := st.Throttle([]byte("new"), g, 1, now); return err },
		"RL.FIXED": func() error {
			_, err := st.Limit(KindFixed, []byte("newf"), Params{Limit: 5, Window: int64(time.Minute), Cost: 1}, now)
			return err
		},
		"RL.LOG": func() error {
			_, err := st.Limit(KindLog, []byte("newl"), Params{Limit: 5, Window: int64(time.Minute), Cost: 1}, now)
			return err
		},
		"SET": func() error { _, err := st.SetThrottle([]byte("news"), 1, NoExpiry, false, SetAlways, now); return err },
	} {
		if err := call(); !errors.Is(err, ErrOOM) {
			t.Errorf("%s on a new key: %v, want ErrOOM", name, err)
		}
	}
	if n := st.Len(); n != 2 {
		t.Fatalf("%d keys after the refusals, want 2", n)
	}
	r, err := st.Throttle([]byte("old"), g, 1, now)
	if err != nil || !r.Limited {
		t.Errorf("an existing key: %+v, %v; want a decision (limited)", r, err)
	}
	if _, err := st.Limit(KindFixed, []byte("oldf"), Params{Limit: 5, Window: int64(time.Minute), Cost: 1}, now); err != nil {
		t.Errorf("an existing RL.FIXED key: %v", err)
	}
	r, err = st.Throttle([]byte("peek"), g, 0, now)
	if err != nil || r.Limited || r.Remaining != 1 {
		t.Errorf("a peek of a missing key: %+v, %v; want a fresh answer", r, err)
	}
	if p, err := st.Limit(KindFixed, []byte("peekf"), Params{Limit: 5, Window: int64(time.Minute), Cost: 0}, now); err != nil || p.Remaining != 5 {
		t.Errorf("an RL.FIXED peek of a missing key: %+v, %v", p, err)
	}
	if n := st.Len(); n != 2 {
		t.Fatalf("%d keys after the peeks, want 2: peeks store nothing while full", n)
	}
	e.SetFull(false)
	if _, err := st.Throttle([]byte("new"), g, 1, now); err != nil {
		t.Errorf("no longer full: %v", err)
	}
}

// TestVolatileTTL: a full engine under volatile-ttl makes room for each
// new key by evicting, of a sample of the shard's keys, the one nearest
// its reset; keys far from theirs stay.
func TestVolatileTTL(t *testing.T) {
	e := New(1)
	e.SetEvictPolicy(VolatileTTL)
	st := e.Store()
	now := int64(1_700_000_000) * int64(time.Second)
	// Ten keys resetting in 10 s, 20 s, ... 100 s (fewer than a sample).
	for i := 1; i <= 10; i++ {
		g, _ := NewGCRA(0, 1, int64(10*i))
		if _, err := st.Throttle(fmt.Appendf(nil, "k%d", i), g, 1, now); err != nil {
			t.Fatal(err)
		}
	}
	e.SetFull(true)
	g, _ := NewGCRA(0, 1, 3600)
	for i := range 3 {
		if _, err := st.Throttle(fmt.Appendf(nil, "new%d", i), g, 1, now); err != nil {
			t.Fatalf("new key %d: %v", i, err)
		}
	}
	if e.Evicted() != 3 || st.Len() != 10 {
		t.Fatalf("evicted %d, keys %d; want 3 and 10", e.Evicted(), st.Len())
	}
	for i := 1; i <= 10; i++ {
		_, found, _ := st.GetThrottle(fmt.Appendf(nil, "k%d", i), now)
		if want := i > 3; found != want {
			t.Errorf("k%d (reset in %d s) held: %v, want %v", i, 10*i, found, want)
		}
	}
}

// TestVolatileTTLSparesLeases: a lease key nearest its reset is not
// evicted (its slots would come back early); the next nearest key is; a
// shard of nothing but live leases evicts nothing and still takes the
// new key.
func TestVolatileTTLSparesLeases(t *testing.T) {
	e := New(1)
	e.SetEvictPolicy(VolatileTTL)
	st := e.Store()
	now := int64(1_700_000_000) * int64(time.Second)
	lease := Params{Limit: 1, Window: int64(5 * time.Second), Cost: 1}
	if _, err := st.Limit(KindLease, []byte("slot"), lease, now); err != nil {
		t.Fatal(err)
	}
	g, _ := NewGCRA(0, 1, 60)
	if _, err := st.Throttle([]byte("k"), g, 1, now); err != nil {
		t.Fatal(err)
	}
	e.SetFull(true)
	if _, err := st.Throttle([]byte("new"), g, 1, now); err != nil {
		t.Fatal(err)
	}
	if st.Type([]byte("slot"), now) != KindLease || st.Type([]byte("k"), now) != KindNone || e.Evicted() != 1 {
		t.Fatalf("slot %v, k %v, evicted %d: want the lease kept and k evicted", st.Type([]byte("slot"), now), st.Type([]byte("k"), now), e.Evicted())
	}
	r, err := st.Limit(KindLease, []byte("slot"), lease, now)
	if err != nil || !r.Limited {
		t.Fatalf("the slot after an eviction: %+v %v, want it still taken", r, err)
	}

	e2 := New(1)
	e2.SetEvictPolicy(VolatileTTL)
	st2 := e2.Store()
	for i := range 3 {
		if _, err := st2.Limit(KindLease, fmt.Appendf(nil, "s%d", i), lease, now); err != nil {
			t.Fatal(err)
		}
	}
	e2.SetFull(true)
	if _, err := st2.Limit(KindLease, []byte("s3"), lease, now); err != nil {
		t.Fatal(err)
	}
	if e2.Evicted() != 0 || st2.Len() != 4 {
		t.Fatalf("evicted %d, keys %d; want no lease evicted and the new key taken", e2.Evicted(), st2.Len())
	}
}

// TestVolatileTTLSparesReservations: a key with reservations in line is
// not evicted (new calls would act before them); once its last ticket
// has acted, it is like any other key.
func TestVolatileTTLSparesReservations(t *testing.T) {
	now := int64(1_700_000_000) * int64(time.Second)
	for _, kind := range []Kind{KindBucket, KindLog, KindFixed} {
		e := New(1)
		e.SetEvictPolicy(VolatileTTL)
		st := e.Store()
		p := Params{Limit: 1, Rate: 1, Window: int64(time.Second), Cost: 1}
		for range 2 { // one now, one reserved
			if _, err := st.Reserve(kind, []byte("line"), p, int64(time.Minute), now); err != nil {
				t.Fatal(err)
			}
		}
		g, _ := NewGCRA(0, 1, 3600) // a deadline far later than the line's
		if _, err := st.Throttle([]byte("k"), g, 1, now); err != nil {
			t.Fatal(err)
		}
		e.SetFull(true)
		if _, err := st.Throttle([]byte("new"), g, 1, now); err != nil {
			t.Fatal(err)
		}
		if st.Type([]byte("line"), now) != kind || st.Type([]byte("k"), now) != KindNone {
			t.Fatalf("%v: line %v, k %v: want the line kept and k evicted", kind, st.Type([]byte("line"), now), st.Type([]byte("k"), now))
		}
	}
}

// TestVolatileTTLKeepsACallsOwnKeys: an RL.ALL call that stores a new key
// in a full engine under volatile-ttl may evict a record of its own call
// (the one nearest its reset in the shard): that limit's new state is
// stored all the same, as a new record, so no charge of an admitted call
// is lost and the region stays whole.
func TestVolatileTTLKeepsACallsOwnKeys(t *testing.T) {
	e := New(1)
	st, s := e.Store(), e.shards[0]
	now := int64(1_700_000_000) * int64(time.Second)
	e.SetEvictPolicy(VolatileTTL)
	fixed := Params{Limit: 5, Window: int64(time.Minute), Cost: 1}
	if _, err := st.Limit(KindFixed, []byte("a"), fixed, now); err != nil {
		t.Fatal(err)
	}
	e.SetFull(true)
	var b Batch
	b.Add(Limit{Key: []byte("a"), Kind: KindFixed, Params: fixed})
	b.Add(Limit{Key: []byte("b"), Kind: KindFixed, Params: Params{Limit: 5, Window: int64(time.Hour), Cost: 1}})
	if limited, at, err := st.Decide(&b, now); limited || err != nil {
		t.Fatalf("limited %v, err %v at %d", limited, err, at)
	}
	if e.Evicted() != 1 {
		t.Fatalf("evicted %d keys, want the one the shard held", e.Evicted())
	}
	e.SetFull(false)
	r, err := st.Limit(KindFixed, []byte("a"), Params{Limit: 5, Window: int64(time.Minute)}, now)
	if err != nil || r.Remaining != 3 {
		t.Fatalf("a after two charges: remaining %d (err %v), want 3", r.Remaining, err)
	}
	s.mu.Lock()
	checkRegion(t, s, map[string]bool{"a": true, "b": true})
	s.mu.Unlock()

	// A key found expired (lookupKeepLocked keeps its record for the
	// write) in a full engine: making room evicts that very record, the
	// expired one; the key's new state is stored as a new record.
	g, _ := NewGCRA(0, 1, 1) // one a second: expired a second after a call
	if _, err := st.Throttle([]byte("c"), g, 1, now); err != nil {
		t.Fatal(err)
	}
	e.SetFull(true)
	later := now + 2*int64(time.Second)
	for _, c := range []string{"c", "c"} {
		if _, err := st.Throttle([]byte(c), g, 1, later); err != nil {
			t.Fatal(err)
		}
	}
	if tat, found, err := st.GetThrottle([]byte("c"), later); err != nil || !found || int64(tat) <= later {
		t.Fatalf("c after a call at %d: TAT %d, found %v, err %v", later, tat, found, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	checkRegion(t, s, map[string]bool{"a": true, "b": true, "c": true})
}
