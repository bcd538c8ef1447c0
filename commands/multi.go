package commands

import "github.com/rlserver/rlserver/engine"

func cmdMulti(x *Ctx) {
	if x.C.multi {
		x.Error(ErrMultiNested)
		return
	}
	x.C.multi, x.C.multiErr, x.C.queue = true, false, nil
	x.OK()
}

func cmdDiscard(x *Ctx) {
	if !x.C.multi {
		x.Error(ErrDiscardNoMult)
		return
	}
	x.C.multi, x.C.multiErr, x.C.queue = false, false, nil
	x.OK()
}

// cmdExec runs the queued commands as one atomic step: every shard is
// locked for the duration and all of them see one clock reading, so no
// other client's command interleaves and time does not move inside it.
func cmdExec(x *Ctx) {
	c := x.C
	if !c.multi {
		x.Error(ErrExecNoMulti)
		return
	}
	queue, aborted := c.queue, c.multiErr
	c.multi, c.multiErr, c.queue = false, false, nil
	if aborted {
		x.Error(ErrExecAbort)
		return
	}
	s, w, now, self := x.S, x.W, x.Now, x.cmd
	w.Array(len(queue))
	s.Engine.Atomic(func(st engine.Store) {
		for _, args := range queue {
			cmd, rejected := s.resolve(c, args)
			if rejected != "" {
				w.Error(rejected)
				continue
			}
			s.run(c, cmd, args, w, now, st)
		}
	})
	*x = Ctx{S: s, C: c, W: w, Now: now, cmd: self} // the queued runs reused c.ctx
}
