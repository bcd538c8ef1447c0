package clock

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTimelinePromotion: a replica follows a primary whose clock is an
// hour ahead of, level with, or an hour behind the replica's wall clock.
// On promotion its clock continues from the primary's last reading plus
// the monotonic time since it arrived, not from its own wall clock, then
// slews toward the wall clock at exactly the bound (1%), never backwards.
func TestTimelinePromotion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		primary int64 // the primary's reading minus the replica's wall clock
	}{
		{"primary an hour ahead", hr},
		{"primary level", 0},
		{"primary an hour behind", -hr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTime{wall: t0, mono: 5e9}
			tl := NewTimeline(NewRealWith(f.opts(0, DefaultSlewPPM)), 0)
			require.Equal(t, t0, tl.Now(), "on its own: the wall clock")
			require.False(t, tl.Following())

			p := t0 + tc.primary
			tl.Yield()
			require.True(t, tl.Follow(p))
			require.True(t, tl.Following())
			require.Equal(t, p, tl.Now(), "following: the primary's reading, earlier or later than before")
			f.advance(30e6)
			require.Equal(t, p+30e6, tl.Now(), "the primary's time plus the time since it arrived")
			p += 100e6 // the next heartbeat, 31 ms later by our clock: the primary ran 69 ms further
			f.advance(1e6)
			tl.Follow(p)
			require.Equal(t, p, tl.Now())
			require.Equal(t, p, tl.Primary())
			off, ok := tl.Offset()
			require.True(t, ok)
			require.Equal(t, tc.primary+69e6, off, "offset to the wall clock while following")

			f.advance(250e6) // the primary dies; 250 ms later the replica is promoted
			require.Equal(t, p+250e6, tl.Promote())
			require.False(t, tl.Following())
			// From there it runs at 1 ± 1% of monotonic time toward the wall clock.
			gap := f.wall - (p + 250e6)
			for range 10 {
				f.advance(hr / 10)
			}
			require.Equal(t, slewed(p+250e6, gap, hr, DefaultSlewPPM), tl.Now())
			off, _ = tl.Offset()
			require.Equal(t, tl.Now()-f.wall, off)
		})
	}
}

// TestTimelineNeverBack: while following, a heartbeat whose clock has run
// slower than ours does not move readings back; promotion never goes below
// a reading given nor below the floor (the stored high-water mark).
func TestTimelineNeverBack(t *testing.T) {
	m := NewManual(t0)
	tl := NewTimeline(m, t0+hr)
	tl.Yield()
	tl.Follow(t0)
	_, _ = m.Advance(50e6)
	require.Equal(t, t0+50e6, tl.Now())
	tl.Follow(t0 + 10e6) // the primary's clock ran 40 ms slower
	require.Equal(t, t0+50e6, tl.Now(), "a reading given is never undercut")
	_, _ = m.Advance(45e6)
	require.Equal(t, t0+55e6, tl.Now(), "on the primary's line again")
	require.Equal(t, t0+hr, tl.Promote(), "not below the floor")
	require.Equal(t, t0+hr, tl.Now())
	require.Equal(t, t0+hr, m.Now(), "the own clock resumed there")
	require.Equal(t, t0+hr, tl.Promote(), "promoting a clock on its own changes nothing")

	// Following again after promotion starts from the new primary's time.
	tl.Yield()
	tl.Follow(t0 + 2*hr)
	require.Equal(t, t0+2*hr, tl.Now())
	_, _ = m.Advance(1e9)
	require.Equal(t, t0+2*hr+1e9, tl.NowAt(0))
}

// TestTimelineRefusesUnyieldedFollow: a Timeline on its own clock, new or
// promoted, takes no primary's reading until told to Yield: a late frame
// of a former primary cannot walk a promoted node's clock back. With
// Invariants on (go test -race) such a Follow is a bug and panics.
func TestTimelineRefusesUnyieldedFollow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(tl *Timeline, m *Manual)
	}{
		{"new", func(*Timeline, *Manual) {}},
		{"promoted", func(tl *Timeline, m *Manual) {
			tl.Yield()
			require.True(t, tl.Follow(t0))
			_, _ = m.Advance(10e9)
			tl.Promote()
		}},
		{"yielded, then promoted before any frame", func(tl *Timeline, _ *Manual) {
			tl.Yield()
			tl.Promote()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManual(t0)
			tl := NewTimeline(m, 0)
			tc.setup(tl, m)
			before := tl.Now()
			stale := func() bool { return tl.Follow(before - 5e9) }
			if Invariants {
				require.PanicsWithValue(t, fmt.Sprintf("clock: invariant: Follow(%d) on a timeline on its own clock, not told to Yield", before-5e9), func() { stale() })
			} else {
				require.False(t, stale())
			}
			require.False(t, tl.Following())
			require.Equal(t, before, tl.Now(), "a refused Follow changes nothing")
		})
	}
}

// TestTimelineInvariantCatchesWalkBack: with Invariants on, a reading
// below one already given panics, wherever it comes from (here an Own
// clock resumed backwards behind the Timeline's back).
func TestTimelineInvariantCatchesWalkBack(t *testing.T) {
	if !Invariants {
		t.Skip("the invariant checks are compiled in with -race or -tags invariants")
	}
	m := NewManual(t0)
	tl := NewTimeline(m, 0)
	require.Equal(t, t0, tl.Now())
	m.Resume(t0 - 1)
	require.PanicsWithValue(t, fmt.Sprintf("clock: invariant: the reading went back from %d to %d", t0, t0-1), func() { tl.Now() })
}
