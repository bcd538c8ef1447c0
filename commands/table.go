package commands

import (
	"sort"
	"strings"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/internal/ascii"
)

// Flag is a property of a command that the dispatcher enforces or that
// COMMAND reports.
type Flag uint32

// Command flags; the names are Redis's as COMMAND prints them.
const (
	FlagWrite Flag = 1 << iota
	FlagReadOnly
	FlagAdmin
	FlagFast
	FlagNoAuth   // runs before AUTH
	FlagNoScript // never inside scripts
	FlagLoading  // allowed while loading
	FlagStale    // allowed on a stale replica
	FlagModule   // CL.THROTTLE is a module command in redis-cell
	FlagNoMulti  // refused inside MULTI (SAVE, SHUTDOWN: they cannot run under EXEC's locks; REPLCONF: ACK answers nothing, which EXEC's array cannot hold)
	FlagDenyOOM
	FlagTxnControl  // not queued by MULTI; runs at once (EXEC, DISCARD, MULTI, QUIT, RESET). Not reported.
	FlagSkipSlowlog // not in the slow log (EXEC: its commands are, one by one)
	// Reported only, as Redis 7.0 reports them: nothing here blocks or
	// loads asynchronously, and pub/sub needs no flag to work.
	FlagPubSub
	FlagNoAsyncLoading
	FlagAllowBusy
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadOnly, "readonly"}, {FlagDenyOOM, "denyoom"}, {FlagModule, "module"},
	{FlagAdmin, "admin"}, {FlagPubSub, "pubsub"}, {FlagNoScript, "noscript"}, {FlagLoading, "loading"},
	{FlagStale, "stale"}, {FlagSkipSlowlog, "skip_slowlog"}, {FlagFast, "fast"}, {FlagNoAuth, "no_auth"},
	{FlagNoAsyncLoading, "no_async_loading"}, {FlagNoMulti, "no_multi"}, {FlagAllowBusy, "allow_busy"},
}

// Command is one entry of the command table: everything the dispatcher
// checks before the handler runs, and what COMMAND and COMMAND DOCS
// report.
type Command struct {
	Name  string // lower case; subcommands are "parent|sub"
	Arity int    // Redis convention: n exact, -n at least n (name included)
	Flags Flag
	// FirstKey, LastKey, Step locate key arguments (Redis convention;
	// LastKey -1 means the last argument). Zero FirstKey: no keys.
	FirstKey, LastKey, Step int
	// NextKey, if set, finds the keys instead, from the arguments: the
	// index of the key after the one at after (after 0: the first), 0 when
	// there is none. For a command with movable keys (RL.ALL), whose
	// FirstKey..LastKey name only the first; COMMAND reports it
	// "movablekeys". An iterator rather than a callback, so that the
	// dispatcher's checks allocate nothing.
	NextKey func(args [][]byte, after int) int
	// ACL are the command's ACL categories, e.g. "@keyspace", in Redis's
	// order (acl.CategoryNames): Redis's own for its commands, which
	// include those its flags imply (write, read, admin and dangerous,
	// fast, else slow).
	ACL []string
	// Channels says which arguments are pub/sub channels, for the users'
	// channel patterns.
	Channels              acl.Channels
	Group, Since, Summary string // COMMAND DOCS
	// Clockless commands never look at the time: the dispatcher does not
	// read the clock for them (Ctx.Now is 0).
	Clockless bool
	// KeySpecFlags overrides the key-spec flags COMMAND reports.
	KeySpecFlags []string
	// KeysOf, if set, is what the call does with its keys, for the users'
	// rules, where the key spec's flags depend on the arguments (Redis's
	// variable_flags).
	KeysOf func(args [][]byte) acl.Access
	// Tips are Redis 7.0's command tips (request_policy:all_shards, ...),
	// in its order: cluster clients route by them.
	Tips []string
	// Peek, for a write command, reports whether a call with args
	// changes nothing the primary would send (a limiter's cost 0): a
	// replica serves such calls from its replicated state.
	Peek func(args [][]byte) bool
	// Run executes the command; nil for a container of subcommands.
	Run func(x *Ctx)
	// Sub holds subcommands by lower-case name (CLIENT SETNAME ...).
	Sub map[string]*Command
	// Index numbers the commands and subcommands of a table from 0, in
	// name order (NewTable), so that the node can keep per-command
	// counters in a slice.
	Index int
}

// Table is a command table indexed by lower-case name.
type Table map[string]*Command

// maxNameLen bounds command names looked up without allocating.
const maxNameLen = 32

// Lookup finds a command by a name of any case without allocating.
func (t Table) Lookup(name []byte) *Command {
	if len(name) > maxNameLen {
		return nil
	}
	var buf [maxNameLen]byte
	return t[string(ascii.AppendLower(buf[:0], name))]
}

// Sorted returns the table's commands ordered by name.
func (t Table) Sorted() []*Command {
	out := make([]*Command, 0, len(t))
	for _, c := range t {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Has reports whether the command has flag f.
func (c *Command) Has(f Flag) bool { return c.Flags&f != 0 }

// ArityOK reports whether n arguments (name included) satisfy the arity.
func (c *Command) ArityOK(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// KeyPositions calls fn with the index of every key argument of a call
// of the command with args (name included).
func (c *Command) KeyPositions(args [][]byte, fn func(i int)) {
	if c.NextKey != nil {
		for i := c.NextKey(args, 0); i > 0; i = c.NextKey(args, i) {
			fn(i)
		}
		return
	}
	if c.FirstKey <= 0 {
		return
	}
	nargs := len(args)
	last := c.LastKey
	if last < 0 {
		last = nargs + last
	}
	step := max(c.Step, 1)
	for i := c.FirstKey; i <= last && i < nargs; i += step {
		fn(i)
	}
}

// writeInfo writes the command's Redis 7 COMMAND entry: name, arity,
// flags, first key, last key, step, ACL categories, tips, key specs,
// subcommands.
func (c *Command) writeInfo(w Writer) {
	w.Array(10)
	w.BulkString(c.Name)
	w.Int(int64(c.Arity))
	var flags []string
	for _, f := range flagNames {
		if c.Flags&f.f != 0 {
			flags = append(flags, f.name)
		}
	}
	if c.NextKey != nil {
		flags = append(flags, "movablekeys")
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.Simple(f)
	}
	w.Int(int64(c.FirstKey))
	w.Int(int64(c.LastKey))
	w.Int(int64(c.Step))
	w.Set(len(c.ACL))
	for _, a := range c.ACL {
		w.Simple(a)
	}
	// The tips and the key specs are sets in RESP3, as Redis 7.0 sends
	// them (its addReplySetLen); the subcommands an array, or an empty
	// set for none.
	w.Set(len(c.Tips))
	for _, t := range c.Tips {
		w.BulkString(t)
	}
	switch {
	case c.NextKey != nil:
		// The first key at its index, then the rest where only the
		// command knows (Redis's "unknown" key spec): clients ask
		// COMMAND GETKEYS.
		w.Set(2)
		c.writeKeySpec(w)
		c.writeUnknownKeySpec(w)
	case c.FirstKey > 0:
		w.Set(1)
		c.writeKeySpec(w)
	default:
		w.Set(0)
	}
	subs := Table(c.Sub).Sorted()
	if len(subs) == 0 {
		w.Set(0)
		return
	}
	w.Array(len(subs))
	for _, s := range subs {
		s.writeInfo(w)
	}
}

// keySpecFlags are the flags of the command's key spec: KeySpecFlags,
// or those of a write or a read.
func (c *Command) keySpecFlags() []string {
	switch {
	case c.KeySpecFlags != nil:
		return c.KeySpecFlags
	case c.Has(FlagWrite):
		return []string{"RW", "access", "update"}
	}
	return []string{"RO", "access"}
}

func (c *Command) writeKeySpec(w Writer) {
	flags := c.keySpecFlags()
	w.Map(3)
	w.BulkString("flags")
	w.Set(len(flags))
	for _, f := range flags {
		w.Simple(f)
	}
	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	w.BulkString("index")
	w.BulkString("spec")
	w.Map(1)
	w.BulkString("index")
	w.Int(int64(c.FirstKey))
	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	w.BulkString("range")
	w.BulkString("spec")
	w.Map(3)
	w.BulkString("lastkey")
	switch {
	case c.LastKey < 0:
		w.Int(int64(c.LastKey))
	default:
		w.Int(int64(c.LastKey - c.FirstKey))
	}
	w.BulkString("keystep")
	w.Int(int64(max(c.Step, 1)))
	w.BulkString("limit")
	w.Int(0)
}

// writeUnknownKeySpec writes a key spec whose keys only the command can
// find (begin_search and find_keys of type "unknown", as Redis 7 reports
// for such commands).
func (c *Command) writeUnknownKeySpec(w Writer) {
	flags := c.keySpecFlags()
	w.Map(3)
	w.BulkString("flags")
	w.Set(len(flags))
	for _, f := range flags {
		w.Simple(f)
	}
	for _, part := range []string{"begin_search", "find_keys"} {
		w.BulkString(part)
		w.Map(2)
		w.BulkString("type")
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}
}

// writeDocs writes the command's COMMAND DOCS map.
func (c *Command) writeDocs(w Writer) {
	n := 3
	subs := Table(c.Sub).Sorted()
	if len(subs) > 0 {
		n++
	}
	w.Map(n)
	w.BulkString("summary")
	w.BulkString(c.Summary)
	w.BulkString("since")
	w.BulkString(c.Since)
	w.BulkString("group")
	w.BulkString(c.Group)
	if len(subs) > 0 {
		w.BulkString("subcommands")
		w.Map(len(subs))
		for _, s := range subs {
			w.BulkString(s.Name)
			s.writeDocs(w)
		}
	}
}

// All returns every command and subcommand of the table, ordered by name.
func (t Table) All() []*Command {
	var all []*Command
	for _, c := range t {
		all = append(all, c)
		for _, sc := range c.Sub {
			all = append(all, sc)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// Find resolves "name" or "parent|sub" (COMMAND INFO, COMMAND DOCS).
func (t Table) Find(n []byte) *Command {
	parent, sub, hasSub := strings.Cut(string(n), "|")
	c := t.Lookup([]byte(parent))
	if c == nil || !hasSub {
		return c
	}
	return Table(c.Sub).Lookup([]byte(sub))
}

// ACLCatalog is what the users' rules know of the table (package acl):
// every command and subcommand by its Index, with its categories, key
// positions and the access its key spec declares (access: read;
// insert, update, delete: write), and its channels. It panics on a
// category acl does not know, which a test of the table rules out.
func (t Table) ACLCatalog() *acl.Catalog {
	all := t.All()
	cmds := make([]acl.Command, 0, len(all))
	for _, c := range all {
		ac := acl.Command{ID: c.Index, Name: c.Name, Parent: -1, NoAuth: c.Has(FlagNoAuth),
			FirstKey: c.FirstKey, LastKey: c.LastKey, Step: c.Step, NextKey: c.NextKey, KeysOf: c.KeysOf, Channels: c.Channels}
		for _, name := range c.ACL {
			cat, ok := acl.ParseCategory(strings.TrimPrefix(name, "@"))
			if !ok {
				panic("commands: " + c.Name + ": unknown ACL category " + name)
			}
			ac.Categories |= cat
		}
		if parent, _, ok := strings.Cut(c.Name, "|"); ok {
			ac.Parent = t[parent].Index
		}
		for _, s := range c.Sub {
			ac.Subcommands = append(ac.Subcommands, s.Index)
		}
		for _, f := range c.keySpecFlags() {
			switch f {
			case "access":
				ac.Keys |= acl.Read
			case "insert", "update", "delete":
				ac.Keys |= acl.Write
			}
		}
		cmds = append(cmds, ac)
	}
	return acl.NewCatalog(cmds)
}
