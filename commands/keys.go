package commands

import (
	"sort"
	"strconv"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/glob"
	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/redisint"
)

func cmdDel(x *Ctx) {
	n := 0
	for _, k := range x.Args[1:] {
		if x.Store.Delete(k, x.Now) {
			n++
		}
	}
	x.W.Int(int64(n))
}

func cmdExists(x *Ctx) {
	n := 0
	for _, k := range x.Args[1:] {
		if x.Store.Type(k, x.Now) != engine.KindNone {
			n++
		}
	}
	x.W.Int(int64(n))
}

// typeName is what TYPE answers for a kind of key: "string" for
// CL.THROTTLE keys (redis-cell keeps them as Redis strings), the
// algorithm's name for RL.* keys, "none" for a missing key.
func typeName(k engine.Kind) string {
	if k == engine.KindThrottle {
		return "string"
	}
	return k.Name()
}

func cmdType(x *Ctx) { x.W.Simple(typeName(x.Store.Type(x.Args[1], x.Now))) }

// pttl is a key's remaining life in ms as Redis's PTTL answers: -2 for a
// missing key, -1 for one without expiry.
func pttl(x *Ctx) int64 {
	switch l := x.Store.Life(x.Args[1], x.Now); {
	case !l.Found:
		return -2
	case l.Forever:
		return -1
	default:
		return l.Ms
	}
}

func cmdPTTL(x *Ctx) { x.W.Int(pttl(x)) }

// cmdTTL rounds the ms TTL to the nearest second, as Redis does.
func cmdTTL(x *Ctx) {
	ms := pttl(x)
	if ms < 0 {
		x.W.Int(ms)
		return
	}
	x.W.Int((ms + 500) / 1000)
}

// cmdGet reads a CL.THROTTLE key's TAT as redis-cell stores it: a decimal
// number of ns since the Unix epoch.
func cmdGet(x *Ctx) {
	tat, found, err := x.Store.GetThrottle(x.Args[1], x.Now)
	switch {
	case err != nil:
		x.Error(err)
	case !found:
		x.W.Null()
	default:
		var buf [20]byte
		x.W.Bulk(strconv.AppendUint(buf[:0], tat, 10))
	}
}

// setKeys is SET's key access for the users' rules, as Redis 7.0's
// setGetKeys decides it: a write, and a read too with GET.
func setKeys(args [][]byte) acl.Access {
	for _, a := range args[min(3, len(args)):] {
		if ascii.EqualFold(a, "get") {
			return acl.Read | acl.Write
		}
	}
	return acl.Write
}

// cmdSet stores a CL.THROTTLE TAT (docs/cl-throttle.md: SET exists for this
// only): SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
// The value must parse as an unsigned 64-bit integer.
func cmdSet(x *Ctx) {
	var (
		cond    = engine.SetAlways
		get     bool
		keepTTL bool
		expKind string
		expArg  []byte
	)
	args := x.Args[3:]
	for i := 0; i < len(args); i++ {
		opt := ascii.Upper(args[i])
		switch {
		case opt == "NX" && cond == engine.SetAlways:
			cond = engine.SetIfMissing
		case opt == "XX" && cond == engine.SetAlways:
			cond = engine.SetIfExists
		case opt == "GET":
			get = true
		case opt == "KEEPTTL" && expKind == "":
			keepTTL = true
		case (opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT") && expKind == "" && !keepTTL && i+1 < len(args):
			expKind, expArg = opt, args[i+1]
			i++
		default:
			x.Error(ErrSyntax)
			return
		}
	}
	// Redis's absolute expiry in ms, as its t_string.c
	// getExpireMillisecondsOrReply computes it: any positive int64, far
	// past the ns range included (cl-throttle.md §6.4).
	expMs := int64(engine.NoExpiry)
	if expKind != "" {
		n, ok := redisint.Parse(expArg)
		if !ok {
			x.Error(ErrNotInteger)
			return
		}
		nowMs := x.Now / 1_000_000
		switch expKind {
		case "EX", "EXAT":
			if n <= 0 || n > (1<<63-1)/1000 {
				x.Error(ErrInvalidExpire)
				return
			}
			n *= 1000
		case "PX", "PXAT":
			if n <= 0 {
				x.Error(ErrInvalidExpire)
				return
			}
		}
		if expKind == "EX" || expKind == "PX" {
			if n > 1<<63-1-nowMs {
				x.Error(ErrInvalidExpire)
				return
			}
			expMs = nowMs + n
		} else {
			expMs = n
		}
	}
	tat, ok := parseUint64(x.Args[2])
	if !ok {
		x.Error(ErrNotInteger)
		return
	}
	var old uint64
	var hadOld bool
	if get {
		var err error
		old, hadOld, err = x.Store.GetThrottle(x.Args[1], x.Now)
		if err != nil {
			x.Error(err)
			return
		}
	}
	written, err := x.Store.SetThrottle(x.Args[1], tat, expMs, keepTTL, cond, x.Now)
	if err != nil {
		x.Error(err)
		return
	}
	switch {
	case get && hadOld:
		x.W.BulkString(strconv.FormatUint(old, 10))
	case get:
		x.W.Null()
	case written:
		x.OK()
	default:
		x.W.Null()
	}
}

func cmdDBSize(x *Ctx) { x.W.Int(int64(x.Store.Len())) }

func cmdFlushAll(x *Ctx) {
	if len(x.Args) > 2 {
		x.Error(ErrSyntax)
		return
	}
	if len(x.Args) == 2 {
		m := ascii.Upper(x.Args[1])
		if m != "ASYNC" && m != "SYNC" {
			x.Error(ErrSyntax)
			return
		}
	}
	x.Store.Flush()
	x.OK()
}

func cmdKeys(x *Ctx) {
	pat := x.Args[1]
	var keys []string
	for i := 0; i < x.N.Shards(); i++ {
		x.Store.ScanShard(i, x.Now, func(k engine.KeyInfo) {
			if glob.Match(pat, []byte(k.Key), false) {
				keys = append(keys, k.Key)
			}
		})
	}
	sort.Strings(keys) // shards and maps have no order worth exposing; sorted output is reproducible
	x.W.Array(len(keys))
	for _, k := range keys {
		x.W.BulkString(k)
	}
}

// cmdScan iterates the keyspace: SCAN cursor [MATCH p] [COUNT n] [TYPE t].
// The cursor is a shard index in its high bits and a position within the
// shard (engine.ScanSlots) in its low bits; a key present for the whole
// iteration is returned at least once (more than once if its shard was
// compacted meanwhile).
func cmdScan(x *Ctx) {
	cursor, ok := parseCursor(x.Args[1])
	if !ok {
		x.Error(ErrInvalidCursor)
		return
	}
	count := 10
	var match, typ []byte
	args := x.Args[2:]
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			x.Error(ErrSyntax)
			return
		}
		switch ascii.Upper(args[i]) {
		case "MATCH":
			match = args[i+1]
		case "COUNT":
			n, ok := redisint.Parse(args[i+1])
			if !ok {
				x.Error(ErrNotInteger)
				return
			}
			if n < 1 {
				x.Error(ErrSyntax)
				return
			}
			count = int(min(n, 1<<20))
		case "TYPE":
			typ = args[i+1]
		default:
			x.Error(ErrSyntax)
			return
		}
	}
	const slotBits = engine.ScanPosBits
	shard, slot := int(cursor>>slotBits), int64(cursor&(1<<slotBits-1))
	var keys []string
	for shard < x.N.Shards() && len(keys) < count {
		next := x.Store.ScanSlots(shard, slot, count-len(keys), x.Now, func(k engine.KeyInfo) {
			if match != nil && !glob.Match(match, []byte(k.Key), false) {
				return
			}
			if typ != nil && !ascii.EqualFold(typ, typeName(k.Kind)) {
				return
			}
			keys = append(keys, k.Key)
		})
		if next < 0 {
			shard, slot = shard+1, 0
		} else {
			slot = next
		}
	}
	next := uint64(0)
	if shard < x.N.Shards() {
		next = uint64(shard)<<slotBits | uint64(slot)
	}
	x.W.Array(2)
	x.W.BulkString(strconv.FormatUint(next, 10))
	x.W.Array(len(keys))
	for _, k := range keys {
		x.W.BulkString(k)
	}
}

func cmdMemoryUsage(x *Ctx) {
	// Any number of SAMPLES n, each checked, as Redis reads them (a
	// record has no samples to take, so n changes nothing).
	for j := 3; j < len(x.Args); j += 2 {
		if !ascii.EqualFold(x.Args[j], "SAMPLES") || j+1 == len(x.Args) {
			x.Error(ErrSyntax)
			return
		}
		n, ok := redisint.Parse(x.Args[j+1])
		if !ok {
			x.Error(ErrNotInteger)
			return
		}
		if n < 0 {
			x.Error(ErrSyntax)
			return
		}
	}
	n, ok := x.Store.MemoryUsage(x.Args[2], x.Now)
	if !ok {
		x.W.Null()
		return
	}
	x.W.Int(n)
}

// OBJECT ENCODING: a CL.THROTTLE key is a Redis string holding an integer
// (the TAT), which Redis encodes as "int"; RL.* state is a record of the
// engine's own ("record"). A missing key is nil, as in Redis.
func cmdObjectEncoding(x *Ctx) {
	switch k := x.Store.Type(x.Args[2], x.Now); k {
	case engine.KindNone:
		x.W.Null()
	case engine.KindThrottle:
		x.W.BulkString("int")
	default:
		x.W.BulkString("record")
	}
}

// OBJECT REFCOUNT: values are never shared, so 1 (nil for a missing key).
func cmdObjectRefcount(x *Ctx) {
	if x.Store.Type(x.Args[2], x.Now) == engine.KindNone {
		x.W.Null()
		return
	}
	x.W.Int(1)
}

// OBJECT FREQ answers as Redis does without an LFU maxmemory policy: nil
// for a missing key, else the error.
func cmdObjectFreq(x *Ctx) {
	if x.Store.Type(x.Args[2], x.Now) == engine.KindNone {
		x.W.Null()
		return
	}
	x.Error(ErrNoLFU)
}

func cmdObjectHelp(x *Ctx) {
	lines := []string{
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>", "    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>", "    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"REFCOUNT <key>", "    Return the number of references of the value associated with the specified",
		"    <key>.",
		"HELP", "    Print this help.",
	}
	writeHelp(x, lines)
}
