package commands

import "github.com/rlserver/rlserver/internal/ascii"

// The COMMAND family, generated from the table.

func cmdCommand(x *Ctx) {
	cmds := x.N.Commands().Sorted()
	x.W.Array(len(cmds))
	for _, c := range cmds {
		c.writeInfo(x.W)
	}
}

func cmdCommandCount(x *Ctx) { x.W.Int(int64(len(x.N.Commands()))) }

func cmdCommandList(x *Ctx) {
	cmds := x.N.Commands().Sorted()
	x.W.Array(len(cmds))
	for _, c := range cmds {
		x.W.BulkString(c.Name)
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
