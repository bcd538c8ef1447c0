package replication

import (
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persist"
	"github.com/stretchr/testify/require"
)

// TestFramesRoundTrip: records encoded one by one (a full sync) or as a
// body of entries cut into frames (the pump), with a flush and a
// heartbeat between, parse back to the same records in the same order,
// the pump's frames under the cut but for a single larger entry.
func TestFramesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var recs []engine.Record
	for i := range 3000 {
		rec := engine.Record{Key: "k" + strconv.Itoa(i), Kind: engine.KindFixed, Deadline: r.Int64(), A: r.Int64(), B: r.Int64N(100)}
		switch i % 5 {
		case 1:
			rec = engine.Record{Key: rec.Key} // a deletion
		case 2:
			rec.Kind, rec.B = engine.KindLog, 0
			for range r.IntN(20_000) { // a few entries larger than a frame's cut
				rec.Log = append(rec.Log, r.Int64N(1<<40))
			}
		}
		recs = append(recs, rec)
	}
	var fw frameWriter
	fw.start = -1
	for _, rec := range recs[:1000] {
		fw.record(rec, 7)
	}
	fw.close()
	fw.frame(frameFlush, 8)
	var body []byte
	for _, rec := range recs[1000:] {
		body = persist.AppendEntry(body, rec)
	}
	fw.entries(body, 9)
	fw.frame(frameHeartbeat, 10)

	var got []engine.Record
	var kinds []byte
	for b := fw.buf; len(b) > 0; {
		f, n, err := parseFrame(b)
		require.NoError(t, err)
		require.NotZero(t, n, "a whole frame")
		kinds = append(kinds, f.kind)
		entries := 0
		require.NoError(t, f.records(func(rec engine.Record) error {
			got = append(got, rec)
			entries++
			return nil
		}))
		if f.now == 9 && entries > 1 { // the pump's frames: whole entries under the cut
			require.LessOrEqual(t, len(f.body), recordsFrameCut)
		}
		b = b[n:]
	}
	require.Equal(t, len(recs), len(got))
	for i := range recs {
		want := recs[i]
		if want.Log == nil && got[i].Log != nil && len(got[i].Log) == 0 {
			got[i].Log = nil
		}
		require.Equal(t, want, got[i], "record %d", i)
	}
	require.Equal(t, byte(frameHeartbeat), kinds[len(kinds)-1])
	require.Contains(t, string(kinds), "rf", "the flush between the two batches")
}

// FuzzFrames: whatever bytes a replica reads from its link, parsing them
// as frames and applying the records frames to an engine, as the replica
// does, never panics. A records frame that decodes, encoded again, decodes
// to the same records, and gives the same records and the same failure
// with its keys prefetched (recordsInto). verify, which a replica runs on
// a unit (and a full sync) before applying any of it, fails exactly where
// applyTo would, else a unit could be half applied, and counts the
// records.
func FuzzFrames(f *testing.F) {
	var fw frameWriter
	fw.start = -1
	fw.frame(frameHeartbeat, 5)
	for i, kind := range []engine.Kind{engine.KindThrottle, engine.KindFixed, engine.KindLog, engine.KindSlide, engine.KindBucket, engine.KindLease, engine.KindNone} {
		r := engine.Record{Key: "k" + strconv.Itoa(i), Kind: kind, Deadline: 9e18, A: 3, B: -4, C: 5}
		if kind == engine.KindLog || kind == engine.KindLease {
			r.B, r.Log = 0, []int64{8e18, 2, 8e18 + 5, 1}
		}
		fw.record(r, 6)
	}
	fw.close()
	f.Add(fw.buf)
	var body []byte
	for i := range 3 {
		r := engine.Record{Key: "m" + strconv.Itoa(i), Kind: engine.KindFixed, Deadline: 9e18, A: 1, B: 2}
		body = persist.AppendEntry(body, r)
	}
	fw = frameWriter{start: -1}
	fw.entries(body, 7)
	fw.frame(frameFlush, 8)
	fw.frame(frameSyncStart, 9)
	fw.frame(frameSyncEnd, 10)
	f.Add(fw.buf)
	f.Add([]byte{frameRecords, 0x80})
	// What a primary's pump sends: states in the engine's layout (version
	// 3), of every kind, and a deletion.
	src := engine.New(1)
	feed := src.NewEncodedFeed(persist.AppendStateEntry, 1<<20)
	for i, kind := range []engine.Kind{engine.KindThrottle, engine.KindFixed, engine.KindLog, engine.KindSlide, engine.KindBucket, engine.KindLease} {
		r := engine.Record{Key: "s" + strconv.Itoa(i), Kind: kind, Deadline: 9e18, A: 3, B: 4, C: 5}
		if kind == engine.KindLog || kind == engine.KindLease {
			r.B, r.Log = 0, []int64{8e18, 2, 8e18 + 5, 1}
		}
		src.Apply(r, 6)
	}
	src.Apply(engine.Record{Key: "s1"}, 6)
	body, _ = feed.Append(nil)
	fw = frameWriter{start: -1}
	fw.entries(body, 7)
	f.Add(fw.buf)
	f.Fuzz(func(t *testing.T, b []byte) {
		e := engine.New(2)
		// applied applies each frame by applyTo, the replica's path, and
		// must end as e, which applies records' Records.
		applied := engine.New(2)
		// The frames as one unit, as a replica takes a unit: every
		// record checked first, then applied as its check found it
		// (check, applyChecked). Compared when every frame checks.
		var unit []frame
		whole := true
		defer func() {
			if t.Failed() {
				return
			}
			var want, got []engine.Record
			e.Dump(0, func(r engine.Record) { want = append(want, r) })
			applied.Dump(0, func(r engine.Record) { got = append(got, r) })
			byKey := func(a, b engine.Record) int { return strings.Compare(a.Key, b.Key) }
			slices.SortFunc(want, byKey) // the engines' seeds, so their orders, differ
			slices.SortFunc(got, byKey)
			require.Equal(t, want, got, "applyTo and Apply(records) left different keyspaces")
			if !whole {
				return
			}
			var checked []engine.Checked
			for _, fr := range unit {
				var err error
				checked, _, err = fr.check(checked, true)
				require.NoError(t, err)
			}
			viaCheck := engine.New(2)
			for _, fr := range unit {
				var err error
				checked, err = fr.applyChecked(viaCheck, fr.now, checked)
				require.NoError(t, err)
			}
			require.Empty(t, checked, "a check found more records than were applied")
			var unitGot []engine.Record
			viaCheck.Dump(0, func(r engine.Record) { unitGot = append(unitGot, r) })
			slices.SortFunc(unitGot, byKey)
			require.Equal(t, got, unitGot, "the unit applied as checked and applyTo left different keyspaces")
		}()
		for len(b) > 0 {
			fr, n, err := parseFrame(b)
			if err != nil || n == 0 {
				return
			}
			if n > len(b) {
				t.Fatalf("a frame of %d bytes in %d", n, len(b))
			}
			b = b[n:]
			if fr.kind != frameRecords && fr.kind != frameMore {
				continue
			}
			var recs, ahead []engine.Record
			err = fr.records(func(r engine.Record) error {
				recs = append(recs, r)
				e.Apply(r, fr.now)
				return nil
			})
			errAhead := fr.recordsInto(e, func(r engine.Record) error {
				ahead = append(ahead, r)
				return nil
			})
			if (err == nil) != (errAhead == nil) || !reflect.DeepEqual(recs, ahead) {
				t.Fatalf("with its keys prefetched the frame gave %v, %v; else %v, %v", ahead, errAhead, recs, err)
			}
			n, errVerify := fr.verify()
			errApplied := fr.applyTo(applied, fr.now)
			unit = append(unit, fr)
			whole = whole && errVerify == nil
			if (err == nil) != (errApplied == nil) || (err == nil) != (errVerify == nil) {
				t.Fatalf("records: %v; applyTo: %v; verify: %v", err, errApplied, errVerify)
			}
			if err == nil && n != len(recs) {
				t.Fatalf("verify counted %d records of %d", n, len(recs))
			}
			if err != nil {
				continue
			}
			i := 0
			_, err = DecodeRecords(EncodeRecords(fr.now, recs), func(r engine.Record) error {
				if len(r.Log) == 0 && len(recs[i].Log) == 0 {
					r.Log = recs[i].Log
				}
				require.Equal(t, recs[i], r)
				i++
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, len(recs), i)
		}
	})
}

// TestStateRecordsArePinned: the records a primary's writes send are the
// engine's own layout (persist.RecordVersionState), which a replica of
// another build must read. This pins the bytes for a state of every kind
// and a deletion, and requires them to read back as the states applied.
// If the engine's layout changes, this fails: the new layout needs a new
// record version, and replicas a decoder for both.
func TestStateRecordsArePinned(t *testing.T) {
	const dl = 1_800_000_000_000_000_000 // Unix ns
	recs := []engine.Record{
		{Key: "t", Kind: engine.KindThrottle, Deadline: dl, A: dl - 3e9},
		{Key: "f", Kind: engine.KindFixed, Deadline: dl, A: dl - 60e9, B: 7},
		{Key: "l", Kind: engine.KindLog, Deadline: dl, A: 3, Log: []int64{dl - 5e9, -(dl - 4e9) - 1, 2}},
		{Key: "s", Kind: engine.KindSlide, Deadline: dl, A: dl - 90e9, B: 4, C: 9},
		{Key: "b", Kind: engine.KindBucket, Deadline: dl, A: 10, B: 1e9, C: -5},
		{Key: "f", Kind: engine.KindNone},
	}
	e := engine.New(1)
	feed := e.NewEncodedFeed(persist.AppendStateEntry, 1<<20)
	for _, r := range recs {
		e.Apply(r, dl-100e9)
	}
	body, _ := feed.Append(nil)
	// Each entry: key length, key, record length, version 3, kind, the
	// deadline (8 bytes LE: 1.8e18 is 0000b49376e2fa18), the body.
	const want = "0174" + "0f" + "0301" + "0000b49376e2fa18" + "80f882ad16" + // zz(3 s) in ns
		"0166" + "0d" + "0302" + "0000b49376e2fa18" + "e303" + "07" + // dur(60 s), count
		"016c" + "12" + "0303" + "0000b49376e2fa18" + "032b00040223010b" +
		"0173" + "0e" + "0304" + "0000b49376e2fa18" + "d305" + "04" + "09" + // dur(90 s), counts
		"0162" + "27" + "0305" + "0000b49376e2fa18" + "fbffffffffffffffff01" + "ffa7f6e1a394b6e6f901" + "ecff9fbbd29df1fa31" +
		"0166" + "02" + "0300" // a deletion
	require.Equal(t, want, hex.EncodeToString(body), "the engine's layout changed: give it a new persist.RecordVersionState")

	var got []engine.Record
	require.NoError(t, frame{body: body}.records(func(r engine.Record) error {
		got = append(got, r)
		return nil
	}))
	require.Equal(t, recs, got)
}

// BenchmarkApplyRecords is a replica's work on a records frame of the
// pump (frame.applyTo): decode each entry and apply it, for 1,000
// RL.BUCKET keys, with the records as persistence encodes them
// (record=persist, as a full sync sends them) and as the pump
// sends a kept change (record=state, the engine's layout); and 1,000
// RL.LOG keys of 60 admissions in the engine's layout (record=state-log),
// and 1,000 RL.BUCKET keys with four reservations in line (state-line).
// verify=... is the check a replica makes of a unit before applying it
// (frame.verify), on the same frames. ns/record is per record.
func BenchmarkApplyRecords(b *testing.B) {
	const n = 1000
	const now = int64(1_800_000_000_000_000_000)
	var recs []engine.Record
	for i := range n {
		recs = append(recs, engine.Record{Key: "rl:bucket:" + strconv.Itoa(100000+i), Kind: engine.KindBucket, Deadline: now + 60e9, A: 100, B: int64(i) * 1e6, C: 7})
	}
	src := engine.New(1)
	feed := src.NewEncodedFeed(persist.AppendStateEntry, 1<<20)
	for _, r := range recs {
		src.Apply(r, now)
	}
	state, _ := feed.Append(nil)
	var persisted []byte
	for _, r := range recs {
		persisted = persist.AppendEntry(persisted, r)
	}
	// RL.LOG keys of 60 admissions a second apart, in the engine's layout.
	for i := range n {
		log := make([]int64, 60)
		for j := range log {
			log[j] = now - 60e9 + int64(j+1)*1e9 + int64(i)
		}
		src.Apply(engine.Record{Key: "rl:log:" + strconv.Itoa(100000+i), Kind: engine.KindLog, Deadline: log[59] + 60e9, A: 60, Log: log}, now)
	}
	logs, _ := feed.Append(nil)
	// RL.BUCKET keys with a line of four reservations each.
	for i := range n {
		key := []byte("rl:line:" + strconv.Itoa(100000+i))
		for range 5 { // the first is admitted, the next four wait
			if _, err := src.Store().Reserve(engine.KindBucket, key, engine.Params{Limit: 1, Window: 1e9, Rate: 1, Cost: 1}, 10e9, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	lines, _ := feed.Append(nil)
	for _, tc := range []struct {
		name string
		body []byte
	}{{"persist", persisted}, {"state", state}, {"state-log", logs}, {"state-line", lines}} {
		b.Run("record="+tc.name, func(b *testing.B) {
			e := engine.New(1)
			b.ReportAllocs()
			for b.Loop() {
				if err := (frame{body: tc.body}).applyTo(e, now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
		// What a replica's check of a unit adds to its apply (verify).
		b.Run("verify="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (frame{kind: frameRecords, body: tc.body}).verify(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
		// A unit as a replica takes it: checked, then applied as the
		// check found it (unit); or checked, then parsed again as it is
		// applied (twice).
		for _, once := range []bool{true, false} {
			name := map[bool]string{true: "unit=", false: "unit-twice="}[once]
			b.Run(name+tc.name, func(b *testing.B) {
				e := engine.New(1)
				fr := frame{kind: frameRecords, body: tc.body}
				var checked []engine.Checked
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if checked, _, err = fr.check(checked[:0], true); err != nil {
						b.Fatal(err)
					}
					if !once {
						checked = checked[:0]
					}
					if _, err := fr.applyChecked(e, now, checked); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			})
		}
	}
}

// BenchmarkApplyRecordsLarge is a replica's apply on a large keyspace:
// 300,000 CL.THROTTLE keys held, frames of 1,000 changes to random ones
// among them, as a pump sends them. "ahead" brings each next batch's keys
// into the cache first (frame.recordsInto), "none" does not; "applyTo" is
// the replica's path, ahead with no Record built (persist.ApplyRecord).
func BenchmarkApplyRecordsLarge(b *testing.B) {
	const held, perFrame, frames = 300_000, 1000, 64
	const now = int64(1_800_000_000_000_000_000)
	rng := rand.New(rand.NewPCG(1, 2))
	src := engine.New(16)
	for i := range held {
		src.Apply(engine.Record{Key: "rl:gcra:" + strconv.Itoa(i), Kind: engine.KindThrottle, Deadline: now + 60e9, A: now + int64(i)}, now)
	}
	feed := src.NewEncodedFeed(persist.AppendStateEntry, 1<<30)
	var bodies [][]byte
	for range frames {
		for range perFrame {
			i := rng.IntN(held)
			src.Apply(engine.Record{Key: "rl:gcra:" + strconv.Itoa(i), Kind: engine.KindThrottle, Deadline: now + 61e9, A: now + 1e9 + int64(i)}, now)
		}
		body, _ := feed.Append(nil)
		bodies = append(bodies, body)
	}
	for _, mode := range []string{"none", "ahead", "applyTo"} {
		b.Run(mode, func(b *testing.B) {
			e := engine.New(16)
			e.Fill(held, func() {
				src.Dump(now, func(r engine.Record) { e.Apply(r, now) })
			})
			var pf *engine.Engine
			if mode == "ahead" {
				pf = e
			}
			apply := func(r engine.Record) error {
				e.Apply(r, now)
				return nil
			}
			b.ReportAllocs()
			records := 0
			for i := 0; b.Loop(); i++ {
				body := bodies[i%frames]
				var err error
				if mode == "applyTo" {
					err = frame{body: body}.applyTo(e, now)
				} else {
					err = frame{body: body}.recordsInto(pf, apply)
				}
				if err != nil {
					b.Fatal(err)
				}
				records += perFrame
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
		})
	}
}
