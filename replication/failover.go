package replication

import (
	"errors"
	"time"
)

// A coordinated failover (FAILOVER, Redis 6.2's): the primary holds its
// writes, waits until a replica has acknowledged everything it decided,
// becomes that replica's replica, and asks it to take over in its PSYNC
// (PSYNC replid offset FAILOVER). No decision is made on two nodes, and
// none is lost: the held writes run once it ends, on the new replica
// (READONLY), or on the primary again if it was aborted.
//
//	FAILOVER ──> waiting-for-sync ──(a replica acked the offset)──> failover-in-progress
//	                 │     (timeout, FORCE: the target anyway) ──────────^      │
//	                 │                                                          │
//	    (ABORT, timeout) ──> no-failover, primary         PSYNC refused, link failed, ABORT
//	                                                            ──> no-failover, primary again
//	                                   PSYNC accepted ──> no-failover, a replica of the target

// Failover states, as INFO's master_failover_state names them.
const (
	failoverNone       = "no-failover"
	failoverWaiting    = "waiting-for-sync"
	failoverInProgress = "failover-in-progress"
)

// FailoverOptions is a FAILOVER request and what the node does around it.
type FailoverOptions struct {
	// Host and Port name the target replica as INFO lists it (its
	// announced address and listening port); Host "" takes the first
	// replica to acknowledge everything.
	Host string
	Port int
	// Timeout bounds the wait for the target (0: none). Past it the
	// failover is aborted, or with Force goes to Host:Port anyway.
	Timeout time.Duration
	Force   bool
	// Hold makes the node hold its writes from now until End; it is
	// called before Failover returns, under the Manager's lock, so it
	// must neither block nor call the Manager. Settle returns
	// once every write that began before Hold has ended, so that the
	// stream holds every decision before it is waited for.
	Hold, Settle func()
	// End says the failover ended, and the node may run the writes it
	// held. followed: the node now follows Host:Port (the target chosen),
	// and refuses writes already.
	End func(followed bool, host string, port int)
}

// Reasons a FAILOVER is refused (the node answers Redis's texts).
var (
	ErrFailoverRunning       = errors.New("a failover is in progress")
	ErrFailoverOnReplica     = errors.New("a replica cannot fail over")
	ErrFailoverNoReplicas    = errors.New("no replica is connected")
	ErrFailoverForceArgs     = errors.New("FORCE needs a target and a timeout")
	ErrFailoverNotReplica    = errors.New("the target is not a replica")
	ErrFailoverTargetOffline = errors.New("the target is not online")
	ErrNoFailover            = errors.New("no failover is in progress")
)

// failover is a FAILOVER in progress. Guarded by m.mu.
type failover struct {
	o        FailoverOptions
	state    string
	deadline time.Time     // zero: no timeout
	abort    chan struct{} // closed by AbortFailover
	aborted  bool
}

// failoverPoll is how often a failover waiting for its target asks the
// replicas for an ack again: the stream may have grown meanwhile (an
// expiry sweep), and an ack answers one request.
const failoverPoll = 100 * time.Millisecond

// Failover starts a coordinated failover (FAILOVER). It checks the
// request as Redis does, in its order, holds the node's writes (o.Hold)
// and returns; the failover goes on in a goroutine of its own and ends
// with o.End.
func (m *Manager) Failover(o FailoverOptions) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.fo != nil:
		return ErrFailoverRunning
	case m.up != nil:
		return ErrFailoverOnReplica
	case len(m.links) == 0:
		return ErrFailoverNoReplicas
	case o.Force && (o.Timeout == 0 || o.Host == ""):
		return ErrFailoverForceArgs
	}
	if o.Host != "" {
		l := m.linkAtLocked(o.Host, o.Port)
		if l == nil {
			return ErrFailoverNotReplica
		}
		if !l.online {
			return ErrFailoverTargetOffline
		}
		m.log.Info("failover requested", "to", o.Host, "port", o.Port)
	} else {
		m.log.Info("failover requested to any replica")
	}
	f := &failover{o: o, state: failoverWaiting, abort: make(chan struct{})}
	if o.Timeout > 0 {
		f.deadline = time.Now().Add(o.Timeout)
	}
	m.fo = f
	o.Hold()
	go m.runFailover(f)
	return nil
}

// AbortFailover ends the failover in progress (FAILOVER ABORT): the node
// stays, or becomes again, a primary, and runs the writes it held.
func (m *Manager) AbortFailover() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fo == nil || m.fo.aborted || m.fo.state == failoverNone {
		return ErrNoFailover
	}
	m.fo.aborted = true
	close(m.fo.abort)
	return nil
}

// failoverStateLocked is INFO's master_failover_state.
func (m *Manager) failoverStateLocked() string {
	if m.fo == nil {
		return failoverNone
	}
	return m.fo.state
}

// linkAtLocked is the replica listed at host:port, or nil.
func (m *Manager) linkAtLocked(host string, port int) *link {
	for _, l := range m.links {
		if l.ip == host && l.port == port {
			return l
		}
	}
	return nil
}

// runFailover is a failover's goroutine: the wait for a replica, then the
// hand-over.
func (m *Manager) runFailover(f *failover) {
	f.o.Settle()
	host, port, why := m.awaitTarget(f)
	if why != "" {
		m.endFailover(f, false, host, port, why)
		return
	}
	result := make(chan error, 1)
	m.replicaOf(host, port, result)
	var err error
	select {
	case err = <-result:
	case <-f.abort:
		select {
		case err = <-result: // the target answered first: its answer decides
		default:
			// As Redis's: the node is a primary again. A target that
			// accepts the PSYNC still in flight is one too.
			err = errors.New("failover manually aborted")
		}
	}
	if err != nil {
		// As Redis's abortFailover: a primary again, with a new id (its
		// replicas continue with the old one as replid2). Unless the
		// node stops: its link ended with Run.
		m.mu.Lock()
		stopped := m.stopped
		m.mu.Unlock()
		if !stopped {
			m.NoOne()
		}
		m.endFailover(f, false, host, port, "the target did not take over: "+err.Error())
		return
	}
	m.endFailover(f, true, host, port, "")
}

// awaitTarget waits until a replica has acknowledged everything the
// node decided (the target, or the first one), and returns where it
// listens; or why the failover ends instead.
func (m *Manager) awaitTarget(f *failover) (host string, port int, why string) {
	for {
		m.askAcks()
		m.mu.Lock()
		var t *link
		caught := func() bool {
			t = m.caughtUpLocked(f.o.Host, f.o.Port)
			return t != nil
		}
		wait := failoverPoll
		if !f.deadline.IsZero() {
			wait = min(wait, time.Until(f.deadline))
		}
		if wait > 0 {
			m.awaitLocked(caught, wait, f.abort)
		} else {
			caught()
		}
		switch {
		case t != nil:
			f.state = failoverInProgress
			host, port = t.ip, t.port
			m.log.Info("failover target is synced, failing over", "host", host, "port", port, "offset", m.offset)
		case f.aborted:
			why = "failover manually aborted"
		case m.stopped || m.stopping:
			why = "the node is stopping"
		case !f.deadline.IsZero() && !time.Now().Before(f.deadline) && f.o.Force:
			f.state = failoverInProgress
			host, port = f.o.Host, f.o.Port
			m.log.Warn("failover timed out, failing over anyway (FORCE)", "host", host, "port", port)
		case !f.deadline.IsZero() && !time.Now().Before(f.deadline):
			why = "replica never caught up before timeout"
		default:
			m.mu.Unlock()
			continue
		}
		m.mu.Unlock()
		return host, port, why
	}
}

// caughtUpLocked is the online replica at host:port (any, for host "")
// that acknowledged the whole stream, or nil.
func (m *Manager) caughtUpLocked(host string, port int) *link {
	for _, l := range m.links {
		if l.online && l.ack >= m.offset && (host == "" || l.ip == host && l.port == port) {
			return l
		}
	}
	return nil
}

// endFailover tells the node (End), then clears the failover. INFO says
// no-failover before End, so a held write answered after it finds it
// so, as in Redis; a new FAILOVER is refused until this one's held
// writes have been let go.
func (m *Manager) endFailover(f *failover, followed bool, host string, port int, why string) {
	m.mu.Lock()
	f.state = failoverNone
	m.mu.Unlock()
	if followed {
		m.log.Info("failover done: following the new primary", "host", host, "port", port)
	} else {
		m.log.Warn("failover aborted", "reason", why)
	}
	f.o.End(followed, host, port)
	m.mu.Lock()
	m.fo = nil
	m.mu.Unlock()
}

// Reasons a replica refuses to take over (PSYNC ... FAILOVER).
var (
	ErrTakeOverOnPrimary = errors.New("a primary cannot take over")
	ErrTakeOverReplID    = errors.New("the replication id is not this node's")
)

// TakeOver promotes a replica that its primary asks to take over (PSYNC
// replid offset FAILOVER). replid must be this node's, its primary's:
// only the primary it follows can ask.
func (m *Manager) TakeOver(replid string) error {
	m.mu.Lock()
	replica, ok := m.up != nil, replid == m.replid
	m.mu.Unlock()
	switch {
	case !replica:
		return ErrTakeOverOnPrimary
	case !ok:
		return ErrTakeOverReplID
	}
	m.log.Info("promoted to primary at its primary's request (FAILOVER)")
	m.NoOne()
	return nil
}
