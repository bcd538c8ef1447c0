package acl

import (
	"github.com/rlserver/rlserver/glob"
	"github.com/rlserver/rlserver/internal/ascii"
)

// Denial is why rules refuse a call, or Allowed.
type Denial uint8

// The answers of Check, Redis's ACL_OK and ACL_DENIED_*.
const (
	Allowed Denial = iota
	DeniedCommand
	DeniedKey
	DeniedChannel
)

// Check reports whether the rules let c run with args (the command's
// name first, as the dispatcher has them), as Redis's
// ACLSelectorCheckCmd decides: the command (or its first argument)
// must be allowed, unless anyone may run it (NoAuth); every key argument
// must match a key pattern granting the access the command needs; every
// channel a channel pattern (PSUBSCRIBE's patterns literally). For a
// denied key or channel, at is its argument's index. It allocates
// nothing.
func (r *Rules) Check(c *Command, args [][]byte) (d Denial, at int) {
	s := &r.commands
	if !s.all && !c.NoAuth && !s.has(c.ID) && !s.firstArgAllowed(c.ID, args) {
		return DeniedCommand, 0
	}
	need := c.Keys
	if c.KeysOf != nil && !r.allKeys {
		need = c.KeysOf(args)
	}
	if !r.allKeys && c.NextKey != nil {
		for i := c.NextKey(args, 0); i > 0; i = c.NextKey(args, i) {
			if !r.keyAllowed(args[i], need) {
				return DeniedKey, i
			}
		}
	} else if !r.allKeys && c.FirstKey > 0 {
		last := c.LastKey
		if last < 0 {
			last += len(args)
		}
		for i := c.FirstKey; i <= last && i < len(args); i += max(c.Step, 1) {
			if !r.keyAllowed(args[i], need) {
				return DeniedKey, i
			}
		}
	}
	if !r.allChannels && c.Channels != NoChannels {
		chans := args[1:]
		if c.Channels == PublishChannel {
			chans = args[1:min(2, len(args))]
		}
		for i, ch := range chans {
			if !r.channelAllowed(ch, c.Channels == SubscribePatterns) {
				return DeniedChannel, i + 1
			}
		}
	}
	return Allowed, 0
}

// keyAllowed: a pattern granting at least need matches key (case
// matters, as in Redis).
func (r *Rules) keyAllowed(key []byte, need Access) bool {
	for i := range r.keys {
		p := &r.keys[i]
		if p.access&need == need && glob.Match(p.b, key, false) {
			return true
		}
	}
	return false
}

// channelAllowed: a channel pattern matches ch, or, for a pattern a
// client subscribes to, equals it.
func (r *Rules) channelAllowed(ch []byte, isPattern bool) bool {
	for i := range r.channels {
		p := &r.channels[i]
		if isPattern && p.text == string(ch) || !isPattern && glob.Match(p.b, ch, false) {
			return true
		}
	}
	return false
}

// firstArgAllowed: the command, not itself allowed, is allowed with its
// first argument (+select|0).
func (s *commandSet) firstArgAllowed(id int, args [][]byte) bool {
	if len(args) < 2 || s.firstArgs == nil {
		return false
	}
	for _, a := range s.firstArgs[id] {
		if ascii.EqualFold(args[1], a) {
			return true
		}
	}
	return false
}

// AllowsSubscription reports whether the rules let a client stay
// subscribed to channel (a pattern if isPattern): ACL SETUSER closes the
// subscribers whose subscriptions the new rules no longer allow.
func (r *Rules) AllowsSubscription(channel string, isPattern bool) bool {
	return r.allChannels || r.channelAllowed([]byte(channel), isPattern)
}
