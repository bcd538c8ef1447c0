package node

import (
	"sync"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/commands"
)

// aclLog keeps the refusals of the users' rules and the failed logins,
// newest first, as Redis 7.0's ACL LOG does: a refusal like one of the
// ten newest entries (same reason, context, object and user, within a
// minute of it) counts in that entry, which moves to the front, instead
// of taking a place of its own; past maxLen the oldest entries go.
type aclLog struct {
	mu      sync.Mutex
	maxLen  int64                  // acllog-max-len; under mu
	entries []commands.ACLLogEntry // newest first
}

// Redis's grouping: how many of the newest entries a refusal is compared
// with, and how far apart in time two refusals may be to share an entry.
const (
	aclLogScan     = 10
	aclLogGroupsMs = 60_000
)

// add logs e, which carries its time and client line.
func (l *aclLog) add(e commands.ACLLogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.entries[:min(len(l.entries), aclLogScan)] {
		m := &l.entries[i]
		d := e.Millis - m.Millis
		if m.Reason != e.Reason || m.Context != e.Context || d > aclLogGroupsMs || -d > aclLogGroupsMs ||
			m.Object != e.Object || m.Username != e.Username {
			continue
		}
		e.Count = m.Count + 1
		copy(l.entries[1:i+1], l.entries[:i])
		l.entries[0] = e
		return
	}
	e.Count = 1
	l.entries = append(l.entries, commands.ACLLogEntry{})
	copy(l.entries[1:], l.entries)
	l.entries[0] = e
	l.trimLocked()
}

// trimLocked drops the oldest entries past maxLen.
func (l *aclLog) trimLocked() {
	if int64(len(l.entries)) > l.maxLen {
		clear(l.entries[l.maxLen:])
		l.entries = l.entries[:l.maxLen]
	}
}

// setMaxLen changes acllog-max-len. As in Redis, a shorter log keeps its
// entries until the next one is logged.
func (l *aclLog) setMaxLen(n int64) {
	l.mu.Lock()
	l.maxLen = n
	l.mu.Unlock()
}

func (l *aclLog) getMaxLen() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxLen
}

// The ACL log's reasons, indexes of aclReasons and of the counters
// behind INFO's acl_access_denied_* fields (whose names say cmd for
// command).
const (
	reasonAuth = iota
	reasonCommand
	reasonKey
	reasonChannel
)

var aclReasons = [...]string{reasonAuth: "auth", reasonCommand: "command", reasonKey: "key", reasonChannel: "channel"}

// refused logs a refusal of c's rules (acl.Rules.Check): of the command
// cmd, or of the key or channel args[at].
func (n *Node) refused(c *Client, cmd *commands.Command, args [][]byte, d acl.Denial, at int) {
	reason, object := reasonCommand, cmd.Name
	switch d {
	case acl.DeniedKey:
		reason, object = reasonKey, string(args[at])
	case acl.DeniedChannel:
		reason, object = reasonChannel, string(args[at])
	}
	n.logRefusal(c.Session, reason, object, c.User().Name())
}

// ACLDenied counts the refusals logged since the start (or CONFIG
// RESETSTAT), by reason: auth, command, key, channel.
func (n *Node) ACLDenied() map[string]int64 {
	m := make(map[string]int64, len(aclReasons))
	for i, r := range aclReasons {
		m[r] = n.stats.aclDenied[i].Load()
	}
	return m
}

// logRefusal counts a refusal and logs it as s's: in the context "multi"
// while s is in MULTI (a command queued, or run by EXEC, which leaves
// MULTI only once its queue has run), else "toplevel".
func (n *Node) logRefusal(s *commands.Session, reason int, object, user string) {
	n.stats.aclDenied[reason].Add(1)
	e := commands.ACLLogEntry{Reason: aclReasons[reason], Context: "toplevel", Object: object, Username: user,
		Millis: time.Now().UnixMilli(), ClientInfo: commands.ClientInfo(s)}
	if s.InMulti() {
		e.Context = "multi"
	}
	n.acllog.add(e)
}

// ACLLog returns up to count of the ACL log's entries, newest first
// (commands.Node).
func (n *Node) ACLLog(count int) []commands.ACLLogEntry {
	n.acllog.mu.Lock()
	defer n.acllog.mu.Unlock()
	return append([]commands.ACLLogEntry(nil), n.acllog.entries[:min(count, len(n.acllog.entries))]...)
}

// ACLLogReset empties the ACL log (commands.Node).
func (n *Node) ACLLogReset() {
	n.acllog.mu.Lock()
	n.acllog.entries = nil
	n.acllog.mu.Unlock()
}
