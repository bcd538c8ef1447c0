package commands

import "slices"

// The transaction family: MULTI, EXEC, DISCARD. The dispatcher queues the
// commands between MULTI and EXEC (Session.Enqueue); EXEC hands the queue
// back to the node, which runs it as one atomic step.

func cmdMulti(x *Ctx) {
	if x.C.InMulti() {
		x.Error(ErrMultiNested)
		return
	}
	x.C.beginMulti()
	x.OK()
}

func cmdDiscard(x *Ctx) {
	if !x.C.InMulti() {
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
	if !x.C.InMulti() {
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
	x.N.RunQueued(x.C, x.C.queue, x.W, x.Now)
	x.C.endMulti()
}

// cmdWatch is WATCH key [key ...]: the session's next EXEC runs its
// queue only if none of the keys has changed by then (engine.Store.State:
// written, deleted, expired or come to be), and otherwise answers a null
// array and runs nothing. A key watched already keeps its first state.
func cmdWatch(x *Ctx) {
	if x.C.InMulti() {
		x.Error(ErrWatchInMulti)
		return
	}
	for _, k := range x.Args[1:] {
		if slices.ContainsFunc(x.C.watched, func(w WatchedKey) bool { return string(w.Key) == string(k) }) {
			continue
		}
		state, _ := x.Store.State(k, x.Now, nil)
		x.C.watched = append(x.C.watched, WatchedKey{Key: append([]byte(nil), k...), State: state})
	}
	x.OK()
}

// cmdUnwatch forgets the keys WATCH watches.
func cmdUnwatch(x *Ctx) {
	x.C.watched = nil
	x.OK()
}
