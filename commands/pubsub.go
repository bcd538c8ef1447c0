package commands

import "sort"

// Pub/sub (docs/protocol.md, "Pub/sub"): SUBSCRIBE, UNSUBSCRIBE,
// PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH. The session keeps what it subscribed
// to; the node keeps who subscribed to what and delivers PUBLISH's
// messages to every subscriber's connection.

// subscribedOnly are the commands a RESP2 connection with subscriptions
// may run (Redis's subscribed mode).
var subscribedOnly = map[string]bool{
	"subscribe": true, "unsubscribe": true, "psubscribe": true, "punsubscribe": true,
	"ssubscribe": true, "sunsubscribe": true, "ping": true, "quit": true, "reset": true,
}

// SubscribedRefuses reports whether the session, in RESP2 subscribed mode,
// may not run the command named name (lower case), and then the error.
func (s *Session) SubscribedRefuses(name string) (Error, bool) {
	if s.Proto() != 2 || s.nsubs.Load() == 0 || subscribedOnly[name] {
		return "", false
	}
	return ErrSubscribedMode(name), true
}

// Subscriptions is how many channels and patterns the session is
// subscribed to; safe from any goroutine.
func (s *Session) Subscriptions() (channels, patterns int) {
	p := int(s.npsubs.Load())
	return int(s.nsubs.Load()) - p, p
}

// set is the session's channels, or its patterns.
func (s *Session) set(pattern bool) map[string]struct{} {
	if pattern {
		if s.psubs == nil {
			s.psubs = map[string]struct{}{}
		}
		return s.psubs
	}
	if s.subs == nil {
		s.subs = map[string]struct{}{}
	}
	return s.subs
}

func cmdSubscribe(x *Ctx)  { subscribe(x, false) }
func cmdPSubscribe(x *Ctx) { subscribe(x, true) }

func subscribe(x *Ctx, pattern bool) {
	kind := "subscribe"
	if pattern {
		kind = "psubscribe"
	}
	set := x.C.set(pattern)
	for _, a := range x.Args[1:] {
		name := string(a)
		if _, ok := set[name]; !ok {
			set[name] = struct{}{}
			x.C.count(pattern, 1)
			x.N.Subscribe(x.C, name, pattern)
		}
		x.W.Push(3)
		x.W.BulkString(kind)
		x.W.Bulk(a)
		x.W.Int(int64(x.C.nsubs.Load()))
	}
}

func cmdUnsubscribe(x *Ctx)  { unsubscribe(x, false) }
func cmdPUnsubscribe(x *Ctx) { unsubscribe(x, true) }

// unsubscribe leaves the channels (patterns) named, or all of them; with
// none to leave it still answers once, with a null name.
func unsubscribe(x *Ctx, pattern bool) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	set := x.C.set(pattern)
	var names []string
	if len(x.Args) > 1 {
		for _, a := range x.Args[1:] {
			names = append(names, string(a))
		}
	} else {
		for name := range set {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	if len(names) == 0 {
		x.W.Push(3)
		x.W.BulkString(kind)
		x.W.Null()
		x.W.Int(int64(x.C.nsubs.Load()))
		return
	}
	for _, name := range names {
		if _, ok := set[name]; ok {
			delete(set, name)
			x.C.count(pattern, -1)
			x.N.Unsubscribe(x.C, name, pattern)
		}
		x.W.Push(3)
		x.W.BulkString(kind)
		x.W.BulkString(name)
		x.W.Int(int64(x.C.nsubs.Load()))
	}
}

// UnsubscribeAll leaves every channel and pattern (RESET, a closed
// connection), telling the node.
func (s *Session) UnsubscribeAll(n Node) {
	for name := range s.subs {
		n.Unsubscribe(s, name, false)
	}
	for name := range s.psubs {
		n.Unsubscribe(s, name, true)
	}
	s.subs, s.psubs = nil, nil
	s.nsubs.Store(0)
	s.npsubs.Store(0)
}

// count adds d to the session's subscriptions, of patterns or channels.
func (s *Session) count(pattern bool, d int32) {
	s.nsubs.Add(d)
	if pattern {
		s.npsubs.Add(d)
	}
}

func cmdPublish(x *Ctx) {
	x.W.Int(int64(x.N.Publish(x.C, x.W, x.Args[1], x.Args[2])))
}

// WriteMessage writes a message as a subscriber receives it: a push of
// message, channel, payload, or of pmessage, pattern, channel, payload
// when pattern is not nil.
func WriteMessage(w Writer, pattern, channel, payload []byte) {
	if pattern != nil {
		w.Push(4)
		w.BulkString("pmessage")
		w.Bulk(pattern)
	} else {
		w.Push(3)
		w.BulkString("message")
	}
	w.Bulk(channel)
	w.Bulk(payload)
}

// cmdPubsubChannels is PUBSUB CHANNELS [pattern]: the channels with a
// subscriber, those matching pattern (a glob, case-sensitive) if given.
func cmdPubsubChannels(x *Ctx) {
	var pattern []byte
	switch len(x.Args) {
	case 2:
	case 3:
		pattern = x.Args[2]
	default:
		x.Error(ErrSubcommandSyntax(x.Args[1], "pubsub"))
		return
	}
	chs := x.N.PubsubChannels(pattern)
	x.W.Array(len(chs))
	for _, ch := range chs {
		x.W.BulkString(ch)
	}
}

// cmdPubsubNumSub is PUBSUB NUMSUB [channel ...]: each channel, then how
// many connections subscribed to it by name (pattern subscriptions are
// not counted), as one flat array in either protocol, as Redis 7.0.
func cmdPubsubNumSub(x *Ctx) { writeNumSub(x, x.N.PubsubNumSub) }

// writeNumSub writes NUMSUB's and SHARDNUMSUB's flat array: each channel
// named, then its count.
func writeNumSub(x *Ctx, count func(channel []byte) int) {
	x.W.Array(2 * (len(x.Args) - 2))
	for _, ch := range x.Args[2:] {
		x.W.Bulk(ch)
		x.W.Int(int64(count(ch)))
	}
}

// cmdPubsubNumPat is PUBSUB NUMPAT: how many patterns have a subscriber.
func cmdPubsubNumPat(x *Ctx) { x.W.Int(int64(x.N.PubsubNumPat())) }

// cmdPubsubShardChannels is PUBSUB SHARDCHANNELS [pattern]: none, as
// there is no SSUBSCRIBE; its arguments are checked as Redis checks them.
func cmdPubsubShardChannels(x *Ctx) {
	if len(x.Args) > 3 {
		x.Error(ErrSubcommandSyntax(x.Args[1], "pubsub"))
		return
	}
	x.W.Array(0)
}

// cmdPubsubShardNumSub is PUBSUB SHARDNUMSUB [channel ...]: each channel
// with 0 subscribers.
func cmdPubsubShardNumSub(x *Ctx) { writeNumSub(x, func([]byte) int { return 0 }) }

func cmdPubsubHelp(x *Ctx) {
	writeHelp(x, []string{
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		"HELP",
		"    Prints this help.",
	})
}
