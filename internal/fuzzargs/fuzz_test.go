// Package fuzzargs fuzzes every command's argument parsing: each command
// of the table (commands.NewTable) runs on fuzzed arguments through an
// in-process node, as a connection's commands run, and its replies and
// the keyspace are checked. It holds tests only: it imports node, which
// the commands package cannot.
package fuzzargs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/resp"
)

// skipped are the commands the fuzzer never runs, by name (full names,
// "parent|sub", for subcommands), and why.
//
// The node runs bare: in memory, without replication, cluster or
// configuration file, on a manual clock. So the other commands that would
// stop or block a real server answer at once here, and run, parsers
// included: SAVE and BGSAVE answer that persistence is off; REPLICAOF,
// SLAVEOF and PSYNC that there is no replication; WAIT, with no replicas
// to wait for, 0 whatever its timeout; CONFIG REWRITE that there is no
// configuration file; CLUSTER HANDOFF that cluster mode is off; DEBUG has
// only CLOCK, which moves this node's manual clock; SUBSCRIBE and the rest
// of pub/sub only mark the session, as they would a connection's; a
// CLIENT PAUSE holds nothing after its own command (exec ends it).
var skipped = map[string]string{
	// It stops the process: in process it closes the node's shutdown
	// channel and, as in Redis, sends no reply.
	"shutdown": "stops the server",
	// Were it added: it turns the connection into an endless stream.
	"monitor": "streams forever",
}

// Bounds on an input, so that what one can make a command allocate or
// take is bounded: the fuzzed script's size, and what one command may
// take (the bare node never blocks; a command that does is a finding).
const (
	maxScript   = 4 << 10
	maxCommands = 32
	maxTook     = 5 * time.Second
	// maxAlloc is what one input may allocate on the heap, the node's
	// own setup included (a few hundred KiB); maxHeld what the
	// keyspace's regions and tables may hold at its end
	// (engine.MemoryStats.Held).
	maxAlloc = 64 << 20
	maxHeld  = 16 << 20
)

// setup is the keyspace every input starts from: a key of each kind, with
// and without expiry, so that a refused command has something to leave
// unchanged.
var setup = [][]string{
	{"CL.THROTTLE", "k", "5", "10", "60"},
	{"CL.THROTTLE", "far", "0", "1", "9223372036854775807"},
	{"SET", "s", "1700000001000000000", "PX", "5000"},
	{"SET", "p", "7"},
	{"RL.FIXED", "f", "10", "60s"},
	{"RL.LOG", "l", "10", "60s", "COST", "3"},
	{"RL.SLIDE", "sl", "10", "60s"},
	{"RL.BUCKET", "b", "10", "5", "60s", "COST", "2"},
}

// FuzzArgs runs a script of commands, one per line in the transcripts'
// syntax (rltest.SplitArgs: fields, or Go-quoted strings such as
// "a\r\nb" or "\xff"), on a fresh node holding setup. For every command:
//
//   - nothing panics, and it takes less than maxTook;
//   - what it writes is one or more complete, well-formed RESP2/RESP3
//     values (only REPLCONF ACK and GETACK answer nothing, as in Redis),
//     which rltest.ReadReply renders;
//   - when it is refused with an error, the keyspace is unchanged: the
//     same keys (DBSIZE) holding the same states and expiries. The one
//     exception is redis-cell's expire error, which follows the write
//     (docs/cl-throttle.md §6.3).
//
// And the whole input allocates at most maxAlloc, and leaves the
// keyspace holding at most maxHeld.
//
// The seed corpus (testdata/fuzz/FuzzArgs) covers every command of the
// table by name, and every command the table holds is seeded here too,
// bare and with one argument, so a command added later is fuzzed as well.
func FuzzArgs(f *testing.F) {
	for _, c := range commands.NewTable().All() {
		name := strings.ReplaceAll(c.Name, "|", " ")
		f.Add(name)
		f.Add(name + " k")
	}
	f.Fuzz(func(t *testing.T, script string) { run(t, script, nil) })
}

// FuzzRestored runs scripts as FuzzArgs does, with its checks, on a node
// that also holds the key "r" restored from any record: the kind, the
// words and the log as fuzzed, the deadline anywhere after now. A replica,
// a slot's new owner and a restart take records from outside and hold
// them as they came (engine/record.go: every encoding is total), so
// whatever a record holds, no command on its key may panic, hang, answer
// a malformed reply or, refused, change anything. And the key's record
// is a fixed point: restored into another engine, it dumps the same (a
// restore that lost or changed a word would not be).
func FuzzRestored(f *testing.F) {
	scripts := []string{
		"CL.THROTTLE r 5 10 60\nCL.THROTTLE r 5 10 60 3",
		"RL.FIXED r 10 60s\nRL.FIXED r 10 60s RESERVE 5s\nRL.CANCEL r 1700000001000000000",
		"RL.LOG r 10 60s COST 3\nRL.LOG r 10 60s RESERVE 2s",
		"RL.SLIDE r 10 60s\nRL.SLIDE r 1 1s COST 0",
		"RL.BUCKET r 10 5 60s COST 2\nRL.BUCKET r 1 1 1s RESERVE 4s\nRL.CANCEL r 1700000001000000000",
		"RL.ACQUIRE r 2 60s\nRL.LEASES r\nRL.RENEW r 1700000000000000001 1s\nRL.RELEASE r ANY",
		"RL.ALL r FIXED 5 1m AND x BUCKET 3 1 1s\nRL.ALL x LOG 2 1s AND r GCRA 1 2 3 AND y SLIDE 4 1m",
		"TYPE r\nPTTL r\nMEMORY USAGE r\nOBJECT ENCODING r\nSCAN 0\nDEBUG CLOCK ADVANCE 5h\nPTTL r\nDEL r",
	}
	for i, sc := range scripts {
		for kind := range byte(6) {
			f.Add(kind, uint64(60e9), int64(i), int64(7), int64(-3), []byte{1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0}, sc)
		}
	}
	f.Fuzz(func(t *testing.T, kind byte, ahead uint64, a, b, c int64, log []byte, script string) {
		// Any kind a record header has room for (three bits), once known.
		k := engine.Kind(1 + kind%7)
		if len(log) > 64*8 || !k.Known() {
			return
		}
		run(t, script, func(e *engine.Engine, now int64) {
			rec := engine.Record{Key: "r", Kind: k, Deadline: now + 1 + int64(ahead%(1<<62)), A: a, B: b, C: c}
			for l := log; len(l) >= 8; l = l[8:] {
				rec.Log = append(rec.Log, int64(binary.LittleEndian.Uint64(l)))
			}
			if !e.Restore(rec, now) {
				t.Fatalf("%+v is not held", rec)
			}
			held := recordOf(t, e, now)
			again := engine.New(1)
			again.Restore(held, now)
			if got := recordOf(t, again, now); !reflect.DeepEqual(got, held) {
				t.Fatalf("restored from %+v, the key dumps as %+v, and that restored dumps as %+v", rec, held, got)
			}
		})
	})
}

// recordOf is the record of "r" that e dumps at now.
func recordOf(t *testing.T, e *engine.Engine, now int64) engine.Record {
	var held []engine.Record
	e.Dump(now, func(r engine.Record) {
		if r.Key == "r" {
			held = append(held, r)
		}
	})
	if len(held) != 1 {
		t.Fatalf("%d records of r", len(held))
	}
	return held[0]
}

// run is one input of FuzzArgs or FuzzRestored: script's commands on a
// fresh node holding setup and, if restore is set, what it restores.
func run(t *testing.T, script string, restore func(e *engine.Engine, now int64)) {
	if len(script) > maxScript {
		return
	}
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)

	clk := clock.NewManual(rltest.StartNs)
	e := engine.New(4)
	n := node.New(node.Config{Shards: 4, MaxClients: 10}, e, clk, node.Options{})
	c, err := n.NewClient("fuzz", "fuzz", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.RemoveClient(c)
	w := resp.NewWriter(c.Proto)
	for _, args := range setup {
		if out := exec(n, c, w, rltest.Argv(args...)); bytes.HasPrefix(out, []byte("-")) {
			t.Fatalf("setup %q: %q", args, out)
		}
	}
	if restore != nil {
		restore(e, clk.Now())
	}

	ran := 0
	for _, line := range strings.Split(script, "\n") {
		args, err := rltest.SplitArgs(line)
		if err != nil || len(args) == 0 || ran == maxCommands {
			continue
		}
		if why, skip := skipped[fullName(n.Commands(), args)]; skip {
			t.Logf("%q skipped: %s", args, why)
			continue
		}
		ran++
		// Expired keys go first: a refused command may still drop
		// an expired key it looks at, as Redis does, and that is not
		// a change of the keyspace it sees.
		e.Sweep(clk.Now())
		before := digest(e, clk.Now())
		t0 := time.Now()
		quiet := c.Quiet()
		out := exec(n, c, w, rltest.Argv(args...))
		if took := time.Since(t0); took > maxTook {
			t.Fatalf("%q took %v", args, took)
		}
		if len(out) == 0 && strings.EqualFold(args[0], "replconf") {
			continue // ACK and GETACK: no reply, as in Redis
		}
		if len(out) == 0 && (quiet || c.Quiet()) {
			continue // CLIENT REPLY OFF or SKIP, or a command they keep from replying
		}
		if err := checkReplies(out); err != nil {
			t.Fatalf("%q: reply %q: %v", args, out, err)
		}
		if refused(out) {
			if after := digest(e, clk.Now()); after != before {
				t.Fatalf("%q refused with %q changed the keyspace:\nbefore:\n%s\nafter:\n%s", args, out, before, after)
			}
		}
	}

	if held := e.Store().Memory().Held; held > maxHeld {
		t.Fatalf("the keyspace holds %d bytes", held)
	}
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	if a := ms1.TotalAlloc - ms0.TotalAlloc; a > maxAlloc {
		t.Fatalf("the input allocated %d bytes", a)
	}
}

// TestSeedsCoverEveryCommand: the seed corpus names every command and
// subcommand of the table at least once (FuzzArgs seeds them too, but
// only bare or with one argument).
func TestSeedsCoverEveryCommand(t *testing.T) {
	const dir = "testdata/fuzz/FuzzArgs"
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	table := commands.NewTable()
	named := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		head, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		lit, ok := strings.CutPrefix(lit, "string(")
		lit, ok2 := strings.CutSuffix(lit, ")")
		script, err := strconv.Unquote(lit)
		if head != "go test fuzz v1" || !ok || !ok2 || err != nil {
			t.Fatalf("%s: not a corpus file of one string: %q", f.Name(), b)
		}
		for _, line := range strings.Split(script, "\n") {
			args, err := rltest.SplitArgs(line)
			if err != nil || len(args) == 0 {
				continue
			}
			named[fullName(table, args)] = true
			if c := table.Lookup([]byte(args[0])); c != nil {
				named[c.Name] = true
			}
		}
	}
	for _, c := range table.All() {
		if !named[c.Name] {
			t.Errorf("no seed in %s runs %q: add one", dir, c.Name)
		}
	}
}

// exec runs one command as a connection would (as testnode.Local's Do
// does): the reply, or replies, as the wire encodes them.
func exec(n *node.Node, c *node.Client, w *resp.Writer, args [][]byte) []byte {
	w.Reset()
	c.Mark()
	n.Exec(c, args, w)
	for p := c.TakePark(); p != nil; p = c.TakePark() { // a WAIT that waits: here, in line
		p(nil)(w)
	}
	// A CLIENT PAUSE ends with its command: the script's later commands
	// would otherwise wait out its timeout, on the one client there is.
	n.Unpause()
	return bytes.Clone(w.Bytes())
}

// fullName is the table's name for args: "parent|sub" for a container's
// subcommand, else the lower-case command name ("" if unknown).
func fullName(t commands.Table, args []string) string {
	cmd := t.Lookup([]byte(args[0]))
	if cmd == nil {
		return ""
	}
	if cmd.Sub != nil && len(args) > 1 {
		if sub := commands.Table(cmd.Sub).Lookup([]byte(args[1])); sub != nil {
			return sub.Name
		}
	}
	return cmd.Name
}

// refused reports whether out is one error reply that must have changed
// nothing.
func refused(out []byte) bool {
	return out[0] == '-' && !bytes.Equal(out, []byte("-"+string(commands.ErrCellExpire)+"\r\n")) &&
		bytes.IndexByte(out, '\n') == len(out)-1
}

// digest is the keyspace at now as a string: the number of keys and every
// key's record (kind, expiry, state).
func digest(e *engine.Engine, now int64) string {
	var recs []string
	e.Dump(now, func(r engine.Record) { recs = append(recs, fmt.Sprintf("%q %+v", r.Key, r)) })
	sort.Strings(recs)
	return fmt.Sprintf("%d keys\n%s", e.Store().Len(), strings.Join(recs, "\n"))
}

// checkReplies requires out to be one or more complete values, each
// strictly well-formed (wellFormed) and rendered by rltest.ReadReply.
func checkReplies(out []byte) error {
	if len(out) == 0 {
		return errors.New("no reply")
	}
	for rest := out; len(rest) > 0; {
		next, err := wellFormed(rest, 0)
		if err != nil {
			return err
		}
		rest = next
	}
	rd := bufio.NewReader(bytes.NewReader(out))
	for {
		if _, err := rltest.ReadReply(rd); err != nil {
			return fmt.Errorf("ReadReply: %w", err)
		}
		if _, err := rd.Peek(1); err == io.EOF {
			return nil
		}
	}
}

// wellFormed checks the RESP2/RESP3 value at the start of b and returns
// what follows it: a simple string or error holds no CR or LF, numbers
// parse, a blob's length matches its bytes, an aggregate holds as many
// values as it says.
func wellFormed(b []byte, depth int) ([]byte, error) {
	if depth > 64 {
		return nil, errors.New("nested too deep")
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, fmt.Errorf("no complete line in %q", b)
	}
	kind, line, rest := b[0], string(b[1:i]), b[i+2:]
	if strings.ContainsAny(line, "\r\n") {
		return nil, fmt.Errorf("CR or LF inside the line %q", b[:i])
	}
	count := func() (int, error) {
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 {
			return 0, fmt.Errorf("bad length %q", line)
		}
		return n, nil
	}
	switch kind {
	case '+', '-':
		return rest, nil
	case ':':
		_, err := strconv.ParseInt(line, 10, 64)
		return rest, err
	case '(':
		if _, ok := new(big.Int).SetString(line, 10); !ok {
			return nil, fmt.Errorf("bad big number %q", line)
		}
		return rest, nil
	case ',':
		if line != "inf" && line != "-inf" && line != "nan" {
			if _, err := strconv.ParseFloat(line, 64); err != nil {
				return nil, err
			}
		}
		return rest, nil
	case '#':
		if line != "t" && line != "f" {
			return nil, fmt.Errorf("bad boolean %q", line)
		}
		return rest, nil
	case '_':
		if line != "" {
			return nil, fmt.Errorf("bad null %q", line)
		}
		return rest, nil
	case '$', '=', '!':
		n, err := count()
		if err != nil || n < 0 {
			if kind == '$' && n == -1 {
				return rest, nil
			}
			return nil, fmt.Errorf("bad blob length %q", line)
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, fmt.Errorf("blob of %d bytes does not end in CRLF", n)
		}
		if kind == '=' && (n < 4 || rest[3] != ':') {
			return nil, fmt.Errorf("verbatim string without its format: %q", rest[:n])
		}
		return rest[n+2:], nil
	case '*', '~', '>', '%', '|':
		n, err := count()
		if err != nil {
			return nil, err
		}
		if n == -1 && kind != '*' {
			return nil, fmt.Errorf("null %c", kind)
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		for ; n > 0; n-- {
			if rest, err = wellFormed(rest, depth+1); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	return nil, fmt.Errorf("unknown type %q", kind)
}
