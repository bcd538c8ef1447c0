package node_test

import (
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
)

// BenchmarkDispatchTracking: what a write costs while another connection
// has client-side caching on (node/tracking.go), against none tracking:
// the tracker reads nothing (a write finds no key tracked), reads the
// written key once (it is told at the first write, then forgotten), or
// watches every key (BCAST: each write is told).
func BenchmarkDispatchTracking(b *testing.B) {
	for _, tc := range []struct {
		name  string
		track *commands.Tracking
	}{
		{"none", nil},
		{"default", &commands.Tracking{On: true}},
		{"bcast", &commands.Tracking{On: true, BCast: true, Prefixes: []string{"user:"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := node.New(node.Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewReal(1_700_000_000_000_000_000), node.Options{})
			c, _ := s.NewClient("bench", "bench", nil)
			if tc.track != nil {
				t, _ := s.NewClient("tracker", "tracker", nil)
				s.Track(t.Session, *tc.track)
				s.Exec(t, rltest.Argv("EXISTS", "user:123"), rltest.Discard{})
			}
			args := rltest.Argv("CL.THROTTLE", "user:123", "1000000", "1000000", "60", "1")
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.Exec(c, args, rltest.Discard{})
			}
		})
	}
}
