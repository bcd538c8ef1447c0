package commands

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
