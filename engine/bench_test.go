package engine

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDecide is the pure CL.THROTTLE decision: no store, no lock.
func BenchmarkDecide(b *testing.B) {
	g, _ := NewGCRA(15, 30, 60)
	now := int64(1_700_000_000_000_000_000)
	tat := uint64(now)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		d, _ := g.Decide(tat, true, now, 1)
		if d.Write {
			tat = d.NewTAT
		}
		now += 1_000_000
	}
}

// filledThrottle returns an engine of the given shards holding n
// CL.THROTTLE keys, the keys, their GCRA and the time they were set at.
func filledThrottle(shards, n int) (*Engine, [][]byte, GCRA, int64) {
	e := New(shards)
	g, _ := NewGCRA(100, 100, 60)
	keys := make([][]byte, n)
	now := int64(1_700_000_000_000_000_000)
	for i := range keys {
		keys[i] = []byte("rl:gcra:" + strconv.Itoa(i))
		e.Store().Throttle(keys[i], g, 1, now)
	}
	return e, keys, g, now
}

// BenchmarkThrottle is a CL.THROTTLE decision on the sharded store, from
// parallel goroutines over 1, 1e3 and 1e6 keys (one hot key must not
// collapse throughput).
func BenchmarkThrottle(b *testing.B) {
	for _, n := range []int{1, 1_000, 1_000_000} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			e, keys, g, now := filledThrottle(16, n)
			st := e.Store()
			var ctr atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := ctr.Add(1_000_003)
				for pb.Next() {
					i++
					st.Throttle(keys[i%uint64(n)], g, 1, now)
				}
			})
		})
	}
}

// BenchmarkLimit is one RL.* decision on the store (one key per 1000,
// clock advancing 1 ms per call so windows roll and logs drop entries).
func BenchmarkLimit(b *testing.B) {
	for _, kind := range []Kind{KindFixed, KindLog, KindSlide, KindBucket} {
		b.Run(kind.Name(), func(b *testing.B) {
			e := New(16)
			st := e.Store()
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = []byte("rl:" + strconv.Itoa(i))
			}
			p := Params{Limit: 100, Window: 60e9, Rate: 100, Cost: 1}
			now := int64(1_700_000_000_000_000_000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st.Limit(kind, keys[i%len(keys)], p, now)
				now += 1_000_000
			}
		})
	}
}

// BenchmarkPipelinedThrottle is batches of 16 CL.THROTTLE decisions on
// random keys, as a pipelined connection sends them, with and without
// Prefetch ahead of each batch.
func BenchmarkPipelinedThrottle(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		for _, pre := range []bool{false, true} {
			b.Run("keys="+strconv.Itoa(n)+"/prefetch="+strconv.FormatBool(pre), func(b *testing.B) {
				e, keys, g, now := filledThrottle(8, n)
				st := e.Store()
				r := rand.New(rand.NewPCG(1, 2))
				batch := make([][]byte, 16)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += len(batch) {
					for j := range batch {
						batch[j] = keys[r.IntN(n)]
					}
					if pre {
						e.Prefetch(batch)
					}
					for _, k := range batch {
						st.Throttle(k, g, 1, now)
					}
				}
			})
		}
	}
}

// BenchmarkFillStalls fills 1,000,000 CL.THROTTLE keys into 8 shards and
// reports the slowest insert and how many took over 200 µs: the stalls a
// growing keyspace puts into a request's latency (table growths, region
// growth). ns/op is the whole fill.
func BenchmarkFillStalls(b *testing.B) {
	g, _ := NewGCRA(100, 100, 60)
	const n, width = 1_000_000, 16
	// The names in one pointer-free array: the collector has nothing to
	// scan, so its assists do not pass for the engine's stalls.
	names := make([]byte, 0, n*width)
	for i := range n {
		names = fmt.Appendf(names, "rl:gcra:%08d", i)
	}
	var worst time.Duration
	over := 0
	for b.Loop() {
		st := New(8).Store()
		for i := range n {
			k := names[i*width : (i+1)*width]
			t0 := time.Now()
			st.Throttle(k, g, 1, 1e18)
			if d := time.Since(t0); d > 200*time.Microsecond {
				over++
				worst = max(worst, d)
			}
		}
	}
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
	b.ReportMetric(float64(over)/float64(b.N), "over200µs/fill")
}

// BenchmarkMassExpiryStalls fills 1,000,000 keys into 8 shards, lets 95%
// of them expire at once, and sweeps them away while another goroutine
// keeps deciding on the surviving keys: it reports the slowest of those
// decisions, which waits for whatever the sweep holds a shard lock for
// (removals, compaction, the move of a table left mostly empty into a
// smaller one), and the longest the sweep held a lock (SweepStats), which
// a descheduled thread does not inflate as it does the former.
func BenchmarkMassExpiryStalls(b *testing.B) {
	const n, width = 1_000_000, 16
	names := make([]byte, 0, n*width)
	for i := range n {
		names = fmt.Appendf(names, "rl:gcra:%08d", i)
	}
	var worst, hold time.Duration
	for b.Loop() {
		e := New(8)
		st := e.Store()
		short := Params{Limit: 100, Window: 1e9, Cost: 1}
		long := Params{Limit: 100, Window: 1e15, Cost: 1}
		for i := range n {
			p := short
			if i%20 == 0 {
				p = long
			}
			st.Limit(KindFixed, names[i*width:(i+1)*width], p, 1e9)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for idle := 0; idle < 2; {
				st := e.Sweep(1e12)
				hold = max(hold, st.LongestHold)
				if idle++; st.Expired > 0 {
					idle = 0
				}
			}
		}()
		for i := 0; ; i = (i + 20) % n {
			select {
			case <-done:
			default:
				t0 := time.Now()
				st.Limit(KindFixed, names[i*width:(i+1)*width], long, 1e12)
				worst = max(worst, time.Since(t0))
				continue
			}
			break
		}
	}
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
	b.ReportMetric(float64(hold.Microseconds()), "sweep-hold-µs")
}

// BenchmarkFeedNext is a replication pump's read of the changes: batches
// of 2,048 CL.THROTTLE decisions on random keys (a busy event loop's
// worth between two pumps), then one Append over them. feed=none is the
// decisions alone; feed=set an encoded feed whose bound is 0, so every
// change is listed and read back at Append (what a feed costs when its
// pump falls behind); feed=encoded one whose changes are all encoded as
// they are made. ns/op is per change, the decision included: a feed's
// cost is the difference from none.
func BenchmarkFeedNext(b *testing.B) {
	enc := func(dst, key []byte, kind Kind, state []byte) []byte {
		dst = binary.AppendUvarint(dst, uint64(len(key)))
		dst = append(dst, key...)
		dst = binary.AppendUvarint(dst, uint64(1+len(state)))
		dst = append(dst, byte(kind))
		return append(dst, state...)
	}
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		for _, feed := range []string{"none", "set", "encoded"} {
			b.Run("keys="+strconv.Itoa(n)+"/feed="+feed, func(b *testing.B) {
				e, keys, g, now := filledThrottle(8, n)
				var f *Feed
				switch feed {
				case "set":
					f = e.NewEncodedFeed(enc, 0)
				case "encoded":
					f = e.NewEncodedFeed(enc, 1<<20)
				}
				var buf []byte
				st := e.Store()
				r := rand.New(rand.NewPCG(1, 2))
				seen := 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += 2048 {
					for range 2048 {
						st.Throttle(keys[r.IntN(n)], g, 1, now)
					}
					if f != nil {
						buf, _ = f.Append(buf[:0])
						seen += len(buf)
					}
				}
				if f != nil && seen == 0 {
					b.Fatal("the feed reported nothing")
				}
			})
		}
	}
}

// BenchmarkFeedSnapshot is a snapshot's read of a second's changes at
// the heaviest load: 100,000 keys, each changed seven times or so
// between two reads (700,000 CL.THROTTLE decisions on random keys, not
// timed), then one Append of every changed key, timed. scan=4 is the
// engine's default (a shard this busy is read in order,
// Feed.scanLocked); scan=0 looks each listed tag up. ns/key is per
// changed key read.
func BenchmarkFeedSnapshot(b *testing.B) {
	const keys, perRead = 100_000, 700_000
	for _, scan := range []int{defaultOptions.feedScanShare, 0} {
		b.Run("scan="+strconv.Itoa(scan), func(b *testing.B) {
			o := defaultOptions
			o.feedScanShare = scan
			e := newEngine(16, o)
			g, _ := NewGCRA(1e6, 1e6, 1)
			now := int64(1_700_000_000_000_000_000)
			names := make([][]byte, keys)
			for i := range names {
				names[i] = []byte("rl:gcra:" + strconv.Itoa(i))
				e.Store().Throttle(names[i], g, 1, now)
			}
			f := e.NewEncodedFeed(func(dst, key []byte, kind Kind, state []byte) []byte {
				return append(append(dst, key...), state...)
			}, 0)
			var buf []byte
			st := e.Store()
			r := rand.New(rand.NewPCG(1, 2))
			read := 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for range perRead {
					st.Throttle(names[r.IntN(keys)], g, 1, now)
				}
				read += f.Pending()
				b.StartTimer()
				buf, _ = f.Append(buf[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(read), "ns/key")
		})
	}
}

// BenchmarkFirstWrites is the write path when every write is a key's
// first since the feed's last read, as when every call writes and a
// snapshot reads every second: two goroutines (two event loops) each
// write their half of 100,000 RL.FIXED keys, in a random order, then,
// untimed, the feed is read. feed=none is the writes alone; ns/op is per
// write, so a feed's cost is the difference from none.
func BenchmarkFirstWrites(b *testing.B) {
	const keys, workers = 100_000, 2
	for _, feed := range []string{"none", "set"} {
		b.Run("feed="+feed, func(b *testing.B) {
			e := New(16)
			st := e.Store()
			p := Params{Limit: 1 << 40, Window: 60e9, Cost: 1}
			now := int64(1_700_000_000_000_000_000)
			names := make([][]byte, keys)
			for i := range names {
				names[i] = []byte("rl:fixed:" + strconv.Itoa(i))
				st.Limit(KindFixed, names[i], p, now)
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(keys, func(i, j int) { names[i], names[j] = names[j], names[i] })
			var f *Feed
			if feed == "set" {
				f = e.NewFeed()
			}
			read := func() {
				if f != nil {
					if f.Next(func(Record) {}); f.Pending() != 0 {
						b.Fatal("Pending after a read")
					}
				}
			}
			read()
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += keys {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						for i := w; i < keys; i += workers {
							st.Limit(KindFixed, names[i], p, now)
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				if f != nil && f.Pending() != keys {
					b.Fatalf("Pending %d after %d first writes", f.Pending(), keys)
				}
				read()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkFeedLogDeltas is a snapshot's read of 100,000 RL.LOG keys of
// 60 runs, each changed once since the last read (an admission a second
// under a one-minute window): as deltas (WriteDeltas), reading the
// shard's records in order (scan) or looking up each listed key (probe,
// scan=0). ns/key is per changed key read.
func BenchmarkFeedLogDeltas(b *testing.B) {
	const keys, runs = 100_000, 60
	for _, scan := range []int{defaultOptions.feedScanShare, 0} {
		b.Run("scan="+strconv.Itoa(scan), func(b *testing.B) {
			o := defaultOptions
			o.feedScanShare = scan
			e := newEngine(16, o)
			p := Params{Limit: 1e9, Window: 60e9, Cost: 1}
			now := int64(1_700_000_000_000_000_000)
			names := make([][]byte, keys)
			for i := range names {
				names[i] = []byte("rl:log:" + strconv.Itoa(i))
			}
			st := e.Store()
			admit := func() {
				for _, k := range names {
					st.Limit(KindLog, k, p, now)
				}
				now += 1e9
			}
			for range runs {
				admit()
			}
			f := e.NewEncodedFeed(func(dst, key []byte, kind Kind, state []byte) []byte {
				return append(append(dst, key...), state...)
			}, 0)
			f.WriteDeltas()
			admit()
			buf, _ := f.Append(nil) // whole, the first read
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				admit()
				b.StartTimer()
				buf, _ = f.Append(buf[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
			b.ReportMetric(float64(len(buf))/keys, "bytes/key")
		})
	}
}

// BenchmarkPipelinedLog is batches of 16 RL.LOG decisions on random keys
// of 100,000 long logs (limit 60 a minute, each key full), prefetched as
// a pipelined connection's are: a key is called about five times a
// second, so one call in five admits and rewrites the log and the others
// are refused and store nothing, as in the server's benchmark.
func BenchmarkPipelinedLog(b *testing.B) {
	const keys, runs = 100_000, 60
	e := New(16)
	st := e.Store()
	p := Params{Limit: runs, Window: 60e9, Cost: 1}
	now := int64(1_700_000_000_000_000_000)
	names := make([][]byte, keys)
	for i := range names {
		names[i] = []byte("rl:log:" + strconv.Itoa(i))
	}
	for range runs {
		for _, k := range names {
			st.Limit(KindLog, k, p, now)
		}
		now += 1e9
	}
	r := rand.New(rand.NewPCG(1, 2))
	batch := make([][]byte, 16)
	admitted := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch) {
		for j := range batch {
			batch[j] = names[r.IntN(keys)]
		}
		e.Prefetch(batch)
		for _, k := range batch {
			if res, _ := st.Limit(KindLog, k, p, now); !res.Limited {
				admitted++
			}
			now += 2_000 // 500,000 calls a second: five a key
		}
	}
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
}

// BenchmarkRestoreDelta is a load's apply of RL.LOG deltas (RestoreDelta):
// 100,000 logs of 60 runs a second apart under a 60 s window, each base
// restored whole, then each key's delta after one more admission, which
// also cut its oldest run off the end (so each delta keeps less of its
// base than the base holds after the join).
func BenchmarkRestoreDelta(b *testing.B) {
	const keys, runs = 100_000, 60
	e := New(16)
	p := Params{Limit: 1e9, Window: 60e9, Cost: 1}
	now := int64(1_700_000_000_000_000_000)
	names := make([][]byte, keys)
	for i := range names {
		names[i] = []byte("rl:log:" + strconv.Itoa(i))
	}
	admit := func() {
		for _, k := range names {
			if _, err := e.Store().Limit(KindLog, k, p, now); err != nil {
				b.Fatal(err)
			}
		}
		now += 1e9
	}
	f := e.NewEncodedFeed(encodeBinary, 0)
	f.WriteDeltas()
	for range runs {
		admit()
	}
	base, _ := f.Append(nil) // whole, the first read
	admit()
	deltas, _ := f.Append(nil)
	g := New(16)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		applyBinary(b, g, base)
		b.StartTimer()
		n := 0
		for rest := deltas; len(rest) > 0; n++ {
			key, kind, state, next := nextBinary(rest)
			if kind != KindLog|KindDelta {
				b.Fatalf("%q: kind %v, not a delta", key, kind)
			}
			if _, held, err := g.RestoreDelta(key, state); err != nil || !held {
				b.Fatalf("%q: held %v, %v", key, held, err)
			}
			rest = next
		}
		if n != keys {
			b.Fatalf("%d deltas, want %d", n, keys)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/delta")
}

// BenchmarkDecideAll is RL.ALL's engine path on the policy shape
// (a user's BUCKET and FIXED keys and one tenant SLIDE key, 1,000 users,
// the clock 1 ms on a call, every call admitted), against the same three
// limits as three Store.Limit calls: what deciding them as one costs
// over deciding them one by one.
func BenchmarkDecideAll(b *testing.B) {
	const users = 1000
	keys := make([][2][]byte, users)
	for i := range keys {
		keys[i] = [2][]byte{[]byte("{t42}:u:" + strconv.Itoa(i) + ":s"), []byte("{t42}:u:" + strconv.Itoa(i) + ":d")}
	}
	tenant := []byte("{t42}")
	bucket := Params{Limit: 1e9, Rate: 1e9, Window: 1e9, Cost: 1}
	fixed := Params{Limit: 1e9, Window: 86400e9, Cost: 1}
	slide := Params{Limit: 1e9, Window: 60e9, Cost: 1}
	b.Run("all", func(b *testing.B) {
		st := New(16).Store()
		now := int64(1_700_000_000_000_000_000)
		var bt Batch
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k := &keys[i%users]
			bt.Reset()
			bt.Add(Limit{Key: k[0], Kind: KindBucket, Params: bucket})
			bt.Add(Limit{Key: k[1], Kind: KindFixed, Params: fixed})
			bt.Add(Limit{Key: tenant, Kind: KindSlide, Params: slide})
			if limited, _, err := st.Decide(&bt, now); limited || err != nil {
				b.Fatal(limited, err)
			}
			now += 1e6
		}
	})
	// Each goroutine its own tenant and users, on two cores: what the
	// goroutines share beyond their keys' shards shows here.
	b.Run("all-parallel", func(b *testing.B) {
		st := New(16).Store()
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			g := strconv.Itoa(int(next.Add(1)))
			ks := make([][2][]byte, users)
			for i := range ks {
				ks[i] = [2][]byte{[]byte("{t" + g + "}:u:" + strconv.Itoa(i) + ":s"), []byte("{t" + g + "}:u:" + strconv.Itoa(i) + ":d")}
			}
			tenant := []byte("{t" + g + "}")
			now := int64(1_700_000_000_000_000_000)
			var bt Batch
			for i := 0; pb.Next(); i++ {
				k := &ks[i%users]
				bt.Reset()
				bt.Add(Limit{Key: k[0], Kind: KindBucket, Params: bucket})
				bt.Add(Limit{Key: k[1], Kind: KindFixed, Params: fixed})
				bt.Add(Limit{Key: tenant, Kind: KindSlide, Params: slide})
				if limited, _, err := st.Decide(&bt, now); limited || err != nil {
					panic(fmt.Sprint(limited, err))
				}
				now += 1e6
			}
		})
	})
	b.Run("three", func(b *testing.B) {
		st := New(16).Store()
		now := int64(1_700_000_000_000_000_000)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k := &keys[i%users]
			st.Limit(KindBucket, k[0], bucket, now)
			st.Limit(KindFixed, k[1], fixed, now)
			st.Limit(KindSlide, tenant, slide, now)
			now += 1e6
		}
	})
}
