package commands

import (
	"strings"
	"testing"
)

// BenchmarkAllNextKey finds every key of the policy shape, as a
// connection's prefetch, the ACL check and cluster routing do.
func BenchmarkAllNextKey(b *testing.B) {
	var args [][]byte
	for _, a := range strings.Fields("RL.ALL {t42}:u:123:s BUCKET 100 100 1s AND {t42}:u:456:d FIXED 1000000 1d AND {t42} SLIDE 1000000000 60s") {
		args = append(args, []byte(a))
	}
	n := 0
	for range b.N {
		for i := allNextKey(args, 0); i > 0; i = allNextKey(args, i) {
			n++
		}
	}
	if n != 3*b.N {
		b.Fatalf("%d keys, want %d", n, 3*b.N)
	}
}
