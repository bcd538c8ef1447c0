package commands

import "github.com/rlserver/rlserver/internal/ascii"

// CLIENT REPLY ON|OFF|SKIP, as Redis 7.0's: OFF sends no reply to the
// connection's commands until CLIENT REPLY ON (which answers +OK); SKIP
// sends none to the next command's. Out-of-band messages (published
// messages, invalidations) still go. Inside a transaction OFF and SKIP
// answer +OK in EXEC's array and hold from the command after EXEC.

// replyMode is a session's CLIENT REPLY state.
type replyMode uint8

const (
	replyOn       replyMode = iota
	replyOff                // no reply until CLIENT REPLY ON
	replySkipNext           // the command after this one gets no reply
	replySkip               // this command gets no reply
)

// Quiet reports whether the reply of the command now starting is to be
// dropped (CLIENT REPLY OFF, or SKIP before it).
func (s *Session) Quiet() bool { return s.reply == replyOff || s.reply == replySkip }

// cmdClientReply is CLIENT REPLY ON|OFF|SKIP.
func cmdClientReply(x *Ctx) {
	switch {
	case ascii.EqualFold(x.Args[2], "on"):
		x.C.reply = replyOn
		x.OK()
	case ascii.EqualFold(x.Args[2], "off"):
		x.C.reply = replyOff
		x.okInExec()
	case ascii.EqualFold(x.Args[2], "skip"):
		if x.C.reply != replyOff {
			x.C.reply = replySkipNext
		}
		x.okInExec()
	default:
		x.Error(ErrSyntax)
	}
}

// okInExec answers +OK to CLIENT REPLY OFF or SKIP run by EXEC, whose
// array has a place for it; the mode holds from the command after EXEC.
// (Redis answers nothing there and leaves the array short: the client
// can no longer read its replies.)
func (x *Ctx) okInExec() {
	if x.C.InMulti() {
		x.W.Simple("OK")
	}
}

// QuietWriter is the writer of a connection whose replies CLIENT REPLY
// drops: it passes on what it is given only while the session is not
// quiet (so CLIENT REPLY ON's +OK goes).
type QuietWriter struct {
	W Writer
	S *Session
}

var _ Writer = QuietWriter{}

func (q QuietWriter) Proto() int { return q.W.Proto() }
func (q QuietWriter) Simple(s string) {
	if !q.S.Quiet() {
		q.W.Simple(s)
	}
}
func (q QuietWriter) Error(s string) {
	if !q.S.Quiet() {
		q.W.Error(s)
	}
}
func (q QuietWriter) Int(n int64) {
	if !q.S.Quiet() {
		q.W.Int(n)
	}
}
func (q QuietWriter) Bulk(b []byte) {
	if !q.S.Quiet() {
		q.W.Bulk(b)
	}
}
func (q QuietWriter) BulkString(s string) {
	if !q.S.Quiet() {
		q.W.BulkString(s)
	}
}
func (q QuietWriter) Null() {
	if !q.S.Quiet() {
		q.W.Null()
	}
}
func (q QuietWriter) NullArray() {
	if !q.S.Quiet() {
		q.W.NullArray()
	}
}
func (q QuietWriter) Array(n int) {
	if !q.S.Quiet() {
		q.W.Array(n)
	}
}
func (q QuietWriter) Map(n int) {
	if !q.S.Quiet() {
		q.W.Map(n)
	}
}
func (q QuietWriter) Set(n int) {
	if !q.S.Quiet() {
		q.W.Set(n)
	}
}
func (q QuietWriter) Double(f float64) {
	if !q.S.Quiet() {
		q.W.Double(f)
	}
}
func (q QuietWriter) Verbatim(s string) {
	if !q.S.Quiet() {
		q.W.Verbatim(s)
	}
}
func (q QuietWriter) Push(n int) {
	if !q.S.Quiet() {
		q.W.Push(n)
	}
}
