package node

import (
	"slices"
	"sync"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/glob"
)

// pubsub is who subscribed to what: for each channel, and each pattern,
// the clients that listen. A PUBLISH encodes its message once per
// protocol and queues it on every listener's connection (Client.deliver).
type pubsub struct {
	mu       sync.Mutex
	channels map[string]map[*Client]struct{}
	patterns map[string]map[*Client]struct{}
}

func (p *pubsub) table(pattern bool) map[string]map[*Client]struct{} {
	if pattern {
		if p.patterns == nil {
			p.patterns = map[string]map[*Client]struct{}{}
		}
		return p.patterns
	}
	if p.channels == nil {
		p.channels = map[string]map[*Client]struct{}{}
	}
	return p.channels
}

// Subscribe registers s's client as a listener of channel (a pattern if
// pattern).
func (n *Node) Subscribe(s *commands.Session, channel string, pattern bool) {
	c := n.clientOf(s)
	if c == nil {
		return
	}
	n.ps.mu.Lock()
	defer n.ps.mu.Unlock()
	t := n.ps.table(pattern)
	if t[channel] == nil {
		t[channel] = map[*Client]struct{}{}
	}
	t[channel][c] = struct{}{}
}

// Unsubscribe forgets s's client as a listener of channel (pattern).
func (n *Node) Unsubscribe(s *commands.Session, channel string, pattern bool) {
	n.ps.mu.Lock()
	defer n.ps.mu.Unlock()
	t := n.ps.table(pattern)
	for c := range t[channel] {
		if c.Session == s {
			delete(t[channel], c)
		}
	}
	if len(t[channel]) == 0 {
		delete(t, channel)
	}
}

// Message is one published message on its way to a listener: immutable,
// shared by every listener's connection, which writes it in its own
// protocol (commands.WriteMessage).
type Message struct {
	Pattern []byte // the pattern that matched; nil for a channel listener
	Channel []byte
	Payload []byte
	// Invalidate makes it a client-side caching message instead
	// (tracking.go): Keys changed, or, for nil, every key.
	Invalidate bool
	Keys       [][]byte
	// RedirBroken, when not 0, makes it RESP3's tracking-redir-broken
	// push: the client ID a tracking connection redirected to is gone.
	RedirBroken int64
}

// WriteTo writes m in w's protocol.
func (m *Message) WriteTo(w commands.Writer) {
	switch {
	case m.RedirBroken != 0:
		commands.WriteRedirectBroken(w, m.RedirBroken)
	case m.Invalidate:
		commands.WriteInvalidation(w, m.Keys)
	default:
		commands.WriteMessage(w, m.Pattern, m.Channel, m.Payload)
	}
}

// Size is about how many bytes m takes on the wire, for the output limit
// of a connection that does not read its messages.
func (m *Message) Size() int {
	n := len(m.Pattern) + len(m.Channel) + len(m.Payload)
	for _, k := range m.Keys {
		n += len(k)
	}
	return n
}

// Publish delivers message on channel to every listener, by channel and
// by pattern, and returns how many deliveries it made (Redis counts a
// client once per matching subscription). The publisher's own message,
// if it listens, goes into w ahead of the reply; the others' are queued
// on their connections.
func (n *Node) Publish(s *commands.Session, w commands.Writer, channel, message []byte) int {
	var shared *Message // channel listeners share one
	send := func(c *Client, pattern []byte) {
		if c.Session == s {
			commands.WriteMessage(w, pattern, channel, message)
			return
		}
		if c.deliver == nil {
			return
		}
		if pattern != nil {
			c.deliver(&Message{Pattern: []byte(pattern), Channel: append([]byte(nil), channel...), Payload: append([]byte(nil), message...)})
			return
		}
		if shared == nil {
			shared = &Message{Channel: append([]byte(nil), channel...), Payload: append([]byte(nil), message...)}
		}
		c.deliver(shared)
	}
	n.ps.mu.Lock()
	defer n.ps.mu.Unlock()
	count := 0
	// A client CLIENT KILL took is gone, as in Redis, even while its
	// connection is still being torn down.
	for c := range n.ps.channels[string(channel)] {
		if c.Killed() {
			continue
		}
		send(c, nil)
		count++
	}
	for pat, cs := range n.ps.patterns {
		if !glob.Match([]byte(pat), channel, false) {
			continue
		}
		for c := range cs {
			if c.Killed() {
				continue
			}
			send(c, []byte(pat))
			count++
		}
	}
	return count
}

// PubsubChannels returns the channels with a subscriber, those matching
// the glob pattern if not nil, sorted (commands.Node).
func (n *Node) PubsubChannels(pattern []byte) []string {
	n.ps.mu.Lock()
	defer n.ps.mu.Unlock()
	var out []string
	for ch := range n.ps.channels {
		if pattern == nil || glob.Match(pattern, []byte(ch), false) {
			out = append(out, ch)
		}
	}
	slices.Sort(out)
	return out
}

// PubsubNumSub counts the connections subscribed to channel by name
// (commands.Node).
func (n *Node) PubsubNumSub(channel []byte) int {
	n.ps.mu.Lock()
	defer n.ps.mu.Unlock()
	return len(n.ps.channels[string(channel)])
}

// PubsubNumPat counts the patterns with a subscriber (commands.Node).
func (n *Node) PubsubNumPat() int {
	n.ps.mu.Lock()
	defer n.ps.mu.Unlock()
	return len(n.ps.patterns)
}
