package commands

import (
	"strings"

	"github.com/rlserver/rlserver/glob"
	"github.com/rlserver/rlserver/internal/ascii"
)

// The COMMAND family, generated from the table.

func cmdCommand(x *Ctx) {
	cmds := x.N.Commands().Sorted()
	x.W.Array(len(cmds))
	for _, c := range cmds {
		c.writeInfo(x.W)
	}
}

func cmdCommandCount(x *Ctx) { x.W.Int(int64(len(x.N.Commands()))) }

// cmdCommandList is COMMAND LIST [FILTERBY MODULE name | ACLCAT category
// | PATTERN pattern]: every command and subcommand ("config|get"), by
// name, as Redis 7.0 lists them, or those of the filter: CL.THROTTLE for
// the module redis-cell (whose command it stands in for), those of an
// ACL category (none for a category that does not exist), those whose
// name matches a glob pattern, in any case. One FILTERBY, last, or a
// syntax error.
func cmdCommandList(x *Ctx) {
	keep := func(*Command) bool { return true }
	switch args := x.Args[2:]; {
	case len(args) == 0:
	case len(args) == 3 && ascii.EqualFold(args[0], "filterby"):
		arg := args[2]
		switch {
		case ascii.EqualFold(args[1], "module"):
			keep = func(c *Command) bool { return c.Name == "cl.throttle" && ascii.EqualFold(arg, "redis-cell") }
		case ascii.EqualFold(args[1], "aclcat"):
			keep = func(c *Command) bool {
				for _, cat := range c.ACL {
					if ascii.EqualFold(arg, strings.TrimPrefix(cat, "@")) {
						return true
					}
				}
				return false
			}
		case ascii.EqualFold(args[1], "pattern"):
			keep = func(c *Command) bool { return glob.Match(arg, []byte(c.Name), true) }
		default:
			x.Error(ErrSyntax)
			return
		}
	default:
		x.Error(ErrSyntax)
		return
	}
	var names []string
	for _, c := range x.N.Commands().All() {
		if keep(c) {
			names = append(names, c.Name)
		}
	}
	x.W.Array(len(names))
	for _, n := range names {
		x.W.BulkString(n)
	}
}

func cmdCommandInfo(x *Ctx) {
	names := x.Args[2:]
	if len(names) == 0 {
		cmdCommand(x)
		return
	}
	x.W.Array(len(names))
	for _, n := range names {
		if c := x.N.Commands().Find(n); c != nil {
			c.writeInfo(x.W)
		} else {
			x.W.Null() // Redis's addReplyNull: $-1 in RESP2
		}
	}
}

func cmdCommandDocs(x *Ctx) {
	var cmds []*Command
	if len(x.Args) == 2 {
		cmds = x.N.Commands().Sorted()
	} else {
		for _, n := range x.Args[2:] {
			if c := x.N.Commands().Find(n); c != nil {
				cmds = append(cmds, c)
			}
		}
	}
	x.W.Map(len(cmds))
	for _, c := range cmds {
		x.W.BulkString(c.Name)
		c.writeDocs(x.W)
	}
}

// cmdCommandGetKeys is COMMAND GETKEYS command args...: the keys of that
// call, as the command finds them (movable ones included), with Redis
// 7.0's errors.
func cmdCommandGetKeys(x *Ctx) {
	args := x.Args[2:]
	c := x.N.Commands().Lookup(args[0])
	if c != nil && c.Sub != nil && len(args) > 1 { // a subcommand: MEMORY USAGE key
		c, args = c.Sub[ascii.Lower(args[1])], args[1:]
	}
	switch {
	case c == nil || c.Sub != nil:
		x.Error(ErrGetKeysCommand)
		return
	case !c.ArityOK(len(args)):
		x.Error(ErrGetKeysArity)
		return
	}
	var keys []int
	c.KeyPositions(args, func(i int) { keys = append(keys, i) })
	if len(keys) == 0 {
		x.Error(ErrGetKeysNone)
		return
	}
	x.W.Array(len(keys))
	for _, i := range keys {
		x.W.Bulk(args[i])
	}
}
