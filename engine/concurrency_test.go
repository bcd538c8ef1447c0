package engine

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoOverAdmission: 64 goroutines hammering one key with a frozen clock
// get exactly the limit admitted, for every algorithm.
func TestNoOverAdmission(t *testing.T) {
	now := int64(1_700_000_000_000_000_000)
	for _, kind := range []Kind{KindFixed, KindLog, KindSlide, KindBucket, KindThrottle} {
		e := New(8)
		st := e.Store()
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 64; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					var limited bool
					// Not require: FailNow must not be called off the
					// test goroutine. assert marks the test failed.
					if kind == KindThrottle {
						gc, _ := NewGCRA(99, 1, 60)
						r, err := st.Throttle([]byte("hot"), gc, 1, now)
						if !assert.NoError(t, err) {
							return
						}
						limited = r.Limited
					} else {
						r, err := st.Limit(kind, []byte("hot"), Params{Limit: 100, Window: 60e9, Rate: 1, Cost: 1}, now)
						if !assert.NoError(t, err) {
							return
						}
						limited = r.Limited
					}
					if !limited {
						admitted.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		require.Equal(t, int64(100), admitted.Load(), kind.Name())
	}
}
