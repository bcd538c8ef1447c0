package engine

import "errors"

// Kind is the algorithm a key holds. A key holds one kind for its life;
// another algorithm's command on it answers ErrWrongType.
type Kind uint8

// The kinds of key. KindNone is "no such key". A kind is stored in the low
// three bits of a record's header (record.go), so there is room for seven.
const (
	KindNone Kind = iota
	KindThrottle
	KindFixed
	KindLog
	KindSlide
	KindBucket
	KindLease
)

// KindDelta marks, in the kind an Encoder is given, a state that is an
// RL.LOG's delta (appendLogDelta) rather than the whole record: only a
// feed made to write them (Feed.WriteDeltas) hands one out. It is never
// stored in a record's header.
const KindDelta Kind = 0x80

// ErrWrongType: the key holds another algorithm's state.
var ErrWrongType = errors.New("engine: wrong kind of value")

// words is a state in its storage form: the three words a record holds
// (record.go) and persistence carries (Record.A, B, C). What each word
// means is the business of one algorithm, whose file names them in a
// state type of its own and converts to and from words.
type words struct{ a, b, c int64 }

// held is a key's state as the shard hands it to an algorithm and takes
// it back: the words, an RL.LOG's encoded runs (nil for other kinds), and
// the deadline (the first Unix ns at which the key is gone).
type held struct {
	w        words
	runs     []byte
	deadline int64
}

// Algorithm describes one kind of key: everything the shard, the record
// codec and persistence need to hold it without knowing what it means.
// Each algorithm's file defines one and the algorithms table lists it.
type Algorithm struct {
	Kind Kind
	// Name is the algorithm's name: what TYPE answers for RL.* keys, and
	// what benchmarks and logs call it.
	Name string
	// encode appends the state's body to a record whose deadline is dl
	// (record.go's body column). Every encoding is total: any words
	// round-trip exactly, with wrapping arithmetic.
	encode func(dst []byte, dl uint64, w words, runs []byte) []byte
	// decode reads a body at b[i:] written by encode for deadline dl. It
	// returns the words, the offset of the runs' length for a kind with
	// runs (0 otherwise), and the offset just past the body. It is on the
	// lookup's hot path.
	decode func(b []byte, i int, dl uint64) (w words, runs, end int)
	// decide runs an RL.* request of p at now against the state cur
	// (zero for a fresh key), a pure function: a next unlike cur must be
	// stored, and the key then lives until it is fresh again (ResetAfter);
	// a rejected request or a peek returns cur. For an algorithm whose
	// state is its words; nil for the others.
	decide func(p Params, cur words, now int64) (next words, r Result)
	// decideRuns is decide for an algorithm with runs (hasRuns): next
	// carries the runs and the deadline, and write reports that it must
	// be stored. scratch is room for next's runs, owned by the shard.
	// Two shapes rather than one: the words-only call passes and returns
	// small values, where copying the larger held through the call made
	// RL.FIXED, RL.SLIDE and RL.BUCKET 17-35% slower (bench/RESULTS.md,
	// the architecture change).
	decideRuns func(p Params, cur held, now int64, scratch []byte) (next held, r Result, write bool)
	// lifeMs is the key's remaining life in ms as TTL reports it, for a
	// key with a deadline; nil means the deadline's ms, rounded up.
	lifeMs func(e entry, now int64) int64
	// hasRuns: the state includes runs of bytes (RL.LOG's log, a lease
	// key's leases), carried as Record.Log. Such an algorithm decides
	// with decideRuns.
	hasRuns bool
	// toLog appends the runs of a state under deadline dl as Record.Log
	// carries them, and reports false (dst as it was) for runs it has no
	// form for, which the engine never makes; fromLog appends a Record's
	// Log encoded as runs to dst, and returns them with the words the log
	// determines (the others as w has them).
	toLog   func(dst []int64, dl uint64, w words, runs []byte) ([]int64, bool)
	fromLog func(dst []byte, dl uint64, w words, log []int64) (words, []byte)
	// found and stored, when set, run under the shard's lock around a
	// decision: found adjusts the state found (zero if none) before it is
	// decided, stored learns of a state written over cur (found or not).
	// A lease key's tokens use them (lease.go); nil for the others.
	found  func(s *shard, h held) held
	stored func(s *shard, cur words, wasFound bool, next words)
}

// algorithms is the table of every kind, indexed by Kind. A new algorithm
// is one file (its state, decision, codec and Algorithm) and one row here.
var algorithms = []*Algorithm{
	KindThrottle: &throttleAlgorithm,
	KindFixed:    &fixedAlgorithm,
	KindLog:      &logAlgorithm,
	KindSlide:    &slideAlgorithm,
	KindBucket:   &bucketAlgorithm,
	KindLease:    &leaseAlgorithm,
}

// algorithmOf returns k's descriptor; k must be a kind of the table
// (records only hold such kinds).
func algorithmOf(k Kind) *Algorithm { return algorithms[k] }

// Known reports whether k is an algorithm of the table (KindNone is not).
func (k Kind) Known() bool { return int(k) < len(algorithms) && algorithms[k] != nil }

// Name is the algorithm's name, "none" for KindNone or an unknown kind.
func (k Kind) Name() string {
	if !k.Known() {
		return "none"
	}
	return algorithms[k].Name
}

// Kinds lists the kinds of the table in order.
func Kinds() []Kind {
	var ks []Kind
	for k := range algorithms {
		if Kind(k).Known() {
			ks = append(ks, Kind(k))
		}
	}
	return ks
}
