package commands

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/internal/ascii"
)

// Session is one connection's protocol state: what the connection
// commands (AUTH, HELLO, CLIENT, MULTI, QUIT, RESET) read and change, and
// what CLIENT LIST shows. The node keeps one per client and hands it to
// every command of that connection. Only that connection's goroutine
// changes it, except the fields under mu and the atomics, which CLIENT
// LIST and CLIENT KILL use from other connections.
type Session struct {
	ID      int64
	Addr    string // remote address
	LAddr   string // local address
	Created time.Time

	proto  atomic.Int32 // 2 or 3; read by other connections (CLIENT LIST, PUBLISH)
	authed bool
	// user is who the connection runs as: the default user until AUTH
	// or HELLO AUTH logs in another. Read by other connections (CLIENT
	// LIST, ACL DELUSER).
	user atomic.Pointer[acl.User]

	// queued is len(queue) inside MULTI, -1 outside it: whether the
	// session is in MULTI, and what CLIENT LIST, run on another
	// connection too, shows of it (flags x, multi=).
	queued   atomic.Int32
	multiErr bool       // a command was refused while queueing: EXEC aborts
	queue    [][][]byte // the MULTI queue; owns copies of the arguments
	// watched are the keys WATCH watches, until EXEC, DISCARD, UNWATCH
	// or RESET.
	watched []WatchedKey

	// closeAfterReply asks the connection to close once the pending
	// replies are written (QUIT, a request over the limits, a kill of
	// oneself).
	closeAfterReply bool

	// Close closes the connection from another goroutine (CLIENT KILL).
	// It is set before the session is listed, so a kill never finds a
	// session it cannot close.
	Close func()

	// What a replica's handshake told (REPLCONF listening-port,
	// ip-address), for its PSYNC.
	ReplPort int
	ReplIP   string
	// wrote: a write command ran on this connection (WAIT).
	wrote bool
	// readOnly: the connection sent READONLY (cluster: a replica serves
	// its reads).
	readOnly bool
	// park, once set (a WAIT that must wait), blocks for the command's
	// reply (TakePark).
	park func(gone <-chan struct{}) func(Writer)

	// tracking is the connection's client-side caching mode (CLIENT
	// TRACKING, tracking.go), under mu: invalidations sent from other
	// connections read it. caching: CLIENT CACHING was given for the
	// next command (or transaction).
	tracking Tracking
	caching  bool
	// reply is CLIENT REPLY's mode (reply.go).
	reply replyMode

	// all holds an RL.ALL call's limits, results and the records of its
	// decisions, reused from call to call (all.go).
	all allScratch

	// The channels and patterns the connection subscribed to (pub/sub),
	// and how many in all, for other connections (CLIENT KILL TYPE
	// pubsub, CLIENT LIST).
	subs, psubs   map[string]struct{}
	nsubs, npsubs atomic.Int32 // all of them, and the patterns

	mu      sync.Mutex // guards name, libName, libVer, tracking
	name    string
	libName string
	libVer  string

	// What the connection holds, for CLIENT LIST: its socket (-1 when
	// not known), bytes read but not yet run, replies not yet written.
	fd         atomic.Int32
	qbuf, omem atomic.Int64
	lastCmd    atomic.Pointer[string] // the last command's name
	lastActive atomic.Int64           // clock.Mono ns at the last command's end
	killed     atomic.Bool            // CLIENT KILL took it: closing, no longer listed
	internal   bool                   // a front's client without a connection (SetInternal): never killed
}

// NewSession returns the state of a new connection: RESP2, running as
// user, authenticated when authed (the user needs no password).
func NewSession(id int64, addr, laddr string, user *acl.User, authed bool, close func()) *Session {
	s := &Session{ID: id, Addr: addr, LAddr: laddr, Created: time.Now(), authed: authed, Close: close}
	s.user.Store(user)
	s.proto.Store(2)
	s.fd.Store(-1)
	s.queued.Store(-1)
	s.lastActive.Store(clock.Mono())
	return s
}

// SetFD records the connection's socket descriptor (CLIENT LIST's fd).
func (s *Session) SetFD(fd int) { s.fd.Store(int32(fd)) }

// SetBuffers records what the connection holds now: bytes read and not
// yet run, and replies not yet written (CLIENT LIST's qbuf and omem).
func (s *Session) SetBuffers(qbuf, omem int) {
	s.qbuf.Store(int64(qbuf))
	s.omem.Store(int64(omem))
}

// Wrote records that a write command ran on the connection.
func (s *Session) Wrote() { s.wrote = true }

// HasWritten reports whether a write command ran on the connection.
func (s *Session) HasWritten() bool { return s.wrote }

// Park defers the current command's reply: wait blocks until it is
// known, or gone closes (the connection went: it may return nil), and
// returns what writes it. The connection runs wait on a
// goroutine of its own, reads nothing more meanwhile (as Redis blocks a
// client), and others on its event loop go on.
func (s *Session) Park(wait func(gone <-chan struct{}) func(Writer)) { s.park = wait }

// TakePark returns, once, the wait Park set for the current command, or
// nil.
func (s *Session) TakePark() func(gone <-chan struct{}) func(Writer) {
	p := s.park
	s.park = nil
	return p
}

// Proto is the negotiated protocol version, 2 or 3.
func (s *Session) Proto() int { return int(s.proto.Load()) }

// Authenticated reports whether the connection may run commands that
// need authentication.
func (s *Session) Authenticated() bool { return s.authed }

// User is the user the connection runs as.
func (s *Session) User() *acl.User { return s.user.Load() }

// logIn makes the connection run as u, authenticated (AUTH, HELLO AUTH);
// authed false is RESET's return to the default user without a login.
func (s *Session) logIn(u *acl.User, authed bool) {
	s.user.Store(u)
	s.authed = authed
}

// CloseAfterReply reports whether the connection must be closed once the
// pending replies are written.
func (s *Session) CloseAfterReply() bool { return s.closeAfterReply }

// CloseWhenReplied asks the connection to close after the pending replies.
func (s *Session) CloseWhenReplied() { s.closeAfterReply = true }

// Killed reports that CLIENT KILL took the session: its connection runs
// nothing more and closes.
func (s *Session) Killed() bool { return s.killed.Load() }

// Named records the command the session sent last, for CLIENT LIST's
// cmd: Redis names a command as soon as it finds it, so one refused too,
// and nil (cmd=NULL) for a name it does not know.
func (s *Session) Named(name *string) { s.lastCmd.Store(name) }

// Done records that a command ended at the monotonic instant mono
// (clock.Mono), for CLIENT LIST's idle.
func (s *Session) Done(mono int64) { s.lastActive.Store(mono) }

// Idle is how long the session has been without a command.
func (s *Session) Idle() time.Duration { return time.Duration(clock.Mono() - s.lastActive.Load()) }

// InMulti reports whether commands are being queued (MULTI).
func (s *Session) InMulti() bool { return s.queued.Load() >= 0 }

// Enqueue adds a copy of args to the MULTI queue.
func (s *Session) Enqueue(args [][]byte) {
	s.queue = append(s.queue, CloneArgs(args))
	s.queued.Store(int32(len(s.queue)))
}

// WatchedKey is a key WATCH watches and its state then
// (engine.Store.State; empty for no key, as a live key's holds at least
// its kind): EXEC runs its queue only if every watched key's state is
// still that.
type WatchedKey struct {
	Key   []byte
	State []byte
}

// Watched returns the keys the session watches.
func (s *Session) Watched() []WatchedKey { return s.watched }

// beginMulti enters MULTI with an empty queue.
func (s *Session) beginMulti() {
	s.multiErr, s.queue = false, nil
	s.queued.Store(0)
}

// CloneArgs copies a command's arguments, which are valid only during the
// call (a connection's read buffer), for a command that runs later.
func CloneArgs(args [][]byte) [][]byte {
	q := make([][]byte, len(args))
	for i, a := range args {
		q[i] = append([]byte(nil), a...)
	}
	return q
}

// RefusedInMulti records that a command was refused while queueing, so
// EXEC aborts; it does nothing outside MULTI.
func (s *Session) RefusedInMulti() {
	if s.InMulti() {
		s.multiErr = true
	}
}

// Name is the connection's name (CLIENT SETNAME), "" if none.
func (s *Session) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name
}

// ReadOnlyCluster reports whether the connection sent READONLY (and no
// READWRITE since): in a cluster, a replica serves its read-only
// commands for its own shard's slots.
func (s *Session) ReadOnlyCluster() bool { return s.readOnly }

// Queued is what MULTI has queued so far (EXEC's cluster check).
func (s *Session) Queued() [][][]byte { return s.queue }

// DiscardMulti leaves MULTI, dropping the queue (an EXEC refused by the
// cluster check).
func (s *Session) DiscardMulti() { s.endMulti() }

// endMulti leaves MULTI, dropping the queue and the watched keys.
func (s *Session) endMulti() {
	s.multiErr, s.queue = false, nil
	s.queued.Store(-1)
	s.watched = nil
}

// SetInternal marks the session as a front's internal client, with no
// connection of its own: CLIENT KILL (and Sentinel's CLIENT KILL TYPE
// normal) passes it by. Call it before the session is listed.
func (s *Session) SetInternal() { s.internal = true }

// Internal reports whether the session is a front's internal client
// (SetInternal), which has no connection to park.
func (s *Session) Internal() bool { return s.internal }

// SetName names the connection (CLIENT SETNAME's effect).
func (s *Session) SetName(n string) {
	s.mu.Lock()
	s.name = n
	s.mu.Unlock()
}

// EndCommand moves the per-command states on once a command (args) has
// run, as Redis's resetClient does: CLIENT REPLY SKIP skips the command
// after it, not the one after that; CLIENT CACHING holds for the next
// command or transaction, so it ends after any command but CLIENT's
// outside MULTI.
func (s *Session) EndCommand(args [][]byte) {
	switch s.reply {
	case replySkip:
		s.reply = replyOn
	case replySkipNext:
		s.reply = replySkip
	}
	if s.caching && !s.InMulti() && !ascii.EqualFold(args[0], "client") {
		s.caching = false
	}
}
