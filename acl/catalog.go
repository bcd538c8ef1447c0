// Package acl is rlserver's users and permissions, Redis 7.0's ACL subset
// (docs/protocol.md, "Users and permissions"):
//
//   - catalog.go: the ACL categories and what the rules know of each
//     command of the table (Catalog), which the commands package builds;
//   - rules.go: a user's rules (Rules) and Redis's ACL SETUSER rule
//     language that changes them;
//   - check.go: whether rules let a call run (Rules.Check), pure and
//     free of allocations;
//   - describe.go: rules as ACL LIST, ACL GETUSER and the ACL file show
//     them, by Redis's own algorithm;
//   - user.go: a user, whose rules change in place for every connection
//     logged in as it;
//   - file.go: the ACL file (Redis's "user <name> <rule> ..." lines).
//
// Wire texts are not here: the errors carry what went wrong, and the
// commands package words them as Redis does. This package imports only
// the standard library and glob.
package acl

import (
	"sort"

	"github.com/rlserver/rlserver/internal/ascii"
)

// Categories is a set of ACL categories, one bit each, in Redis's order
// (its ACLCommandCategories) and then rlserver's ratelimit.
type Categories uint32

// categoryNames are the categories by bit.
var categoryNames = [...]string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting", "ratelimit",
}

// CategoryNames lists every category, without '@', in order (ACL CAT).
func CategoryNames() []string { return append([]string(nil), categoryNames[:]...) }

// ParseCategory finds a category by its name, in any case, without '@'.
func ParseCategory(name string) (Categories, bool) {
	for i, n := range categoryNames {
		if ascii.EqualFold(name, n) {
			return 1 << i, true
		}
	}
	return 0, false
}

// Names lists the set's categories with their '@', in order (COMMAND's
// ACL categories).
func (c Categories) Names() []string {
	var out []string
	for i, n := range categoryNames {
		if c&(1<<i) != 0 {
			out = append(out, "@"+n)
		}
	}
	return out
}

// Access is what a command does with its keys, as its key specs say:
// Read to access them, Write to insert, update or delete. A key pattern
// grants Read, Write or both (%R~, %W~, ~).
type Access uint8

// The accesses.
const (
	Read Access = 1 << iota
	Write
)

// Channels says which arguments of a command are pub/sub channels.
type Channels uint8

// The ways a command names channels (Redis checks publishing and
// subscribing, never unsubscribing).
const (
	NoChannels        Channels = iota
	PublishChannel             // the first argument (PUBLISH)
	SubscribeChannels          // every argument (SUBSCRIBE)
	SubscribePatterns          // every argument, a pattern compared literally with the user's (PSUBSCRIBE)
)

// Command is what the rules and the checks know of one command or
// subcommand of the table.
type Command struct {
	// ID is the command's place in a user's set of commands: the table's
	// Index, from 0.
	ID int
	// Name is the lower-case name; a subcommand's is "parent|sub".
	Name       string
	Categories Categories
	// Parent is the container's ID, or -1 for a top-level command;
	// Subcommands are a container's.
	Parent      int
	Subcommands []int
	// NoAuth commands (AUTH, HELLO, QUIT, RESET) run for every user.
	NoAuth bool
	// FirstKey, LastKey and Step locate the key arguments, Redis's way
	// (LastKey -1 is the last argument; FirstKey 0: no keys); Keys is
	// what the command does with them.
	FirstKey, LastKey, Step int
	Keys                    Access
	// KeysOf, if set, is Keys for a call's arguments: a command whose
	// key spec has Redis's variable_flags (SET writes without reading,
	// unless it has GET).
	KeysOf func(args [][]byte) Access
	// NextKey, if set, finds the key arguments instead (a command with
	// movable keys, RL.ALL): the key after the one at after (0: the
	// first), 0 when there is none.
	NextKey  func(args [][]byte, after int) int
	Channels Channels
}

// Catalog is what the rules know of a command table: each command by ID
// and by name.
type Catalog struct {
	cmds   []Command
	byName map[string]int
	top    []int // top-level commands, by name
}

// NewCatalog indexes cmds; their IDs must be 0 to len(cmds)-1, each once.
// It panics otherwise (a table that cannot be right).
func NewCatalog(cmds []Command) *Catalog {
	c := &Catalog{cmds: make([]Command, len(cmds)), byName: make(map[string]int, len(cmds))}
	seen := make([]bool, len(cmds))
	for _, cmd := range cmds {
		if cmd.ID < 0 || cmd.ID >= len(cmds) || seen[cmd.ID] {
			panic("acl: command IDs must number the commands from 0: " + cmd.Name)
		}
		seen[cmd.ID] = true
		c.cmds[cmd.ID] = cmd
		c.byName[cmd.Name] = cmd.ID
	}
	for i := range c.cmds {
		sort.Slice(c.cmds[i].Subcommands, func(a, b int) bool {
			return c.cmds[c.cmds[i].Subcommands[a]].Name < c.cmds[c.cmds[i].Subcommands[b]].Name
		})
		if c.cmds[i].Parent < 0 {
			c.top = append(c.top, i)
		}
	}
	sort.Slice(c.top, func(a, b int) bool { return c.cmds[c.top[a]].Name < c.cmds[c.top[b]].Name })
	return c
}

// Len is the number of commands and subcommands.
func (c *Catalog) Len() int { return len(c.cmds) }

// Command is the command of ID id.
func (c *Catalog) Command(id int) *Command { return &c.cmds[id] }

// Lookup finds a command by its name, "parent|sub" for a subcommand, in
// any case.
func (c *Catalog) Lookup(name string) (*Command, bool) {
	id, ok := c.byName[ascii.Lower(name)]
	if !ok {
		return nil, false
	}
	return &c.cmds[id], true
}

// InCategory lists the names of the commands and subcommands in cat, by
// name, each container followed by its subcommands (ACL CAT category).
func (c *Catalog) InCategory(cat Categories) []string {
	var out []string
	var walk func(ids []int)
	walk = func(ids []int) {
		for _, id := range ids {
			if c.cmds[id].Categories&cat != 0 {
				out = append(out, c.cmds[id].Name)
			}
			walk(c.cmds[id].Subcommands)
		}
	}
	walk(c.top)
	return out
}
