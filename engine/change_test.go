package engine

import (
	"slices"
	"testing"
	"time"
)

// TestOnChangeTellsWhatNoCallChanged: OnChange's function is told of the
// keys that change other than by a decision or a Store write (those the
// node sees itself): a record applied (a replica's stream), a key the
// sweep expires, one maxmemory evicts; not of decisions, Store writes,
// or a restored record (a snapshot's load); a flush as a nil key; and
// nothing once removed.
func TestOnChangeTellsWhatNoCallChanged(t *testing.T) {
	e := New(1)
	e.SetEvictPolicy(VolatileTTL)
	st := e.Store()
	now := int64(1_700_000_000) * int64(time.Second)
	var got []string
	e.OnChange(func(k []byte) {
		if k == nil {
			got = append(got, "(flush)")
			return
		}
		got = append(got, string(k))
	})
	tell := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: told %q, want %q", what, got, want)
		}
		got = nil
	}

	g, _ := NewGCRA(0, 1, 10)
	if _, err := st.Throttle([]byte("t10"), g, 1, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Limit(KindFixed, []byte("f"), Params{Limit: 5, Window: int64(time.Hour), Cost: 1}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetThrottle([]byte("s"), uint64(now), now+int64(time.Hour), false, SetAlways, now); err != nil {
		t.Fatal(err)
	}
	st.Delete([]byte("s"), now)
	tell("decisions and Store writes")

	e.Restore(Record{Key: "restored", Kind: KindFixed, Deadline: now + int64(time.Hour), A: 1, B: now}, now)
	tell("a restored record")
	e.Apply(Record{Key: "applied", Kind: KindFixed, Deadline: now + int64(time.Hour), A: 1, B: now}, now)
	tell("an applied record", "applied")
	if _, err := e.ApplyState([]byte("applied"), KindNone, nil, now); err != nil {
		t.Fatal(err)
	}
	tell("an applied deletion", "applied")

	e.Sweep(now + int64(11*time.Second))
	tell("the sweep", "t10")

	g, _ = NewGCRA(0, 1, 20)
	if _, err := st.Throttle([]byte("t20"), g, 1, now); err != nil {
		t.Fatal(err)
	}
	e.SetFull(true)
	if _, err := st.Throttle([]byte("new"), g, 1, now); err != nil {
		t.Fatal(err)
	}
	tell("an eviction", "t20")
	e.SetFull(false)
	st.Flush()
	tell("a flush", "(flush)")

	e.OnChange(nil)
	e.Apply(Record{Key: "applied2", Kind: KindFixed, Deadline: now + int64(time.Hour), A: 1, B: now}, now)
	tell("after OnChange(nil)")
}
