package commands

// The transaction family: MULTI, EXEC, DISCARD. The dispatcher queues the
// commands between MULTI and EXEC (Session.Enqueue); EXEC hands the queue
// back to the node, which runs it as one atomic step.

func cmdMulti(x *Ctx) {
	if x.C.multi {
		x.Error(ErrMultiNested)
		return
	}
	x.C.beginMulti()
	x.OK()
}

func cmdDiscard(x *Ctx) {
	if !x.C.multi {
		x.Error(ErrDiscardNoMult)
		return
	}
	x.C.endMulti()
	x.OK()
}

// cmdExec runs the queued commands as one atomic step: every shard is
// locked for the duration and all of them see one clock reading, so no
// other client's command interleaves and time does not move inside it.
func cmdExec(x *Ctx) {
	if !x.C.multi {
		x.Error(ErrExecNoMulti)
		return
	}
	if x.C.multiErr {
		x.C.endMulti()
		x.Error(ErrExecAbort)
		return
	}
	// The session stays in MULTI while its queue runs, as Redis's client
	// does: CLIENT INFO and the ACL log's client line say so (flags x,
	// multi the commands queued).
	queue := x.C.queue
	x.W.Array(len(queue))
	x.N.RunQueued(x.C, queue, x.W, x.Now)
	x.C.endMulti()
}
