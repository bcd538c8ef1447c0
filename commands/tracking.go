package commands

import (
	"slices"
	"strings"

	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/redisint"
)

// Client-side caching, as Redis 6+ serves it (docs/protocol.md,
// "Client-side caching"): a connection turns tracking on, the server
// remembers the keys it reads, and when one of them changes the
// connection (or the one it redirects to) is told to drop it.
//
//	CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP]
//	CLIENT CACHING YES|NO      the next command's keys are (OPTIN) or are not (OPTOUT) remembered
//
// The session holds its mode; the node keeps the table of keys and sends
// the invalidations (node/tracking.go).

// Tracking is a connection's client-side caching mode.
type Tracking struct {
	On bool
	// BCast: told of every change to a key under one of Prefixes, read
	// or not; no key is remembered.
	BCast bool
	// OptIn: only the keys of a command right after CLIENT CACHING YES
	// are remembered; OptOut: all but those after CLIENT CACHING NO.
	OptIn, OptOut bool
	// NoLoop: not told of the changes the connection makes itself.
	NoLoop bool
	// Redirect is the client ID that gets the invalidations, 0 for this
	// connection.
	Redirect int64
	// Prefixes are BCAST's prefixes, "" for every key; owned by the
	// Tracking value (never changed in place).
	Prefixes []string
	// Broken: the redirect's client has gone (CLIENT LIST's flag R).
	Broken bool
}

// Tracking returns the connection's tracking mode (a copy).
func (s *Session) Tracking() Tracking {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tracking
}

// SetTracking sets the connection's tracking mode (the node's Track,
// on the connection's goroutine). Off forgets CLIENT CACHING too, as
// Redis's disableTracking does.
func (s *Session) SetTracking(t Tracking) {
	s.mu.Lock()
	s.tracking = t
	s.mu.Unlock()
	if !t.On {
		s.caching = false
	}
}

// TrackingOn reports whether tracking is on.
func (s *Session) TrackingOn() bool { return s.Tracking().On }

// BreakRedirect marks the redirect's client gone.
func (s *Session) BreakRedirect() {
	s.mu.Lock()
	s.tracking.Broken = true
	s.mu.Unlock()
}

// Remembers reports whether the keys of a read by the session are to be
// remembered for it: tracking on, not BCAST, and CLIENT CACHING as its
// OPTIN or OPTOUT mode asks.
func (s *Session) Remembers() bool {
	t := s.Tracking()
	return t.On && !t.BCast && !(t.OptIn && !s.caching) && !(t.OptOut && s.caching)
}

// cmdClientTracking is CLIENT TRACKING ON|OFF [options]: the options as
// Redis 7.0 reads them (a repeated one counts once, PREFIX adds), then
// its checks in its order, then the node turns tracking on or off.
func cmdClientTracking(x *Ctx) {
	var t Tracking
	redirect := false
	args := x.Args
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case ascii.EqualFold(args[j], "redirect") && more:
			j++
			if redirect {
				x.Error(ErrTrackingRedirectTwice)
				return
			}
			id, ok := redisint.Parse(args[j])
			if !ok {
				x.Error(ErrNotInteger)
				return
			}
			if !x.N.ClientExists(id) {
				x.Error(ErrTrackingRedirectGone)
				return
			}
			t.Redirect, redirect = id, true
		case ascii.EqualFold(args[j], "bcast"):
			t.BCast = true
		case ascii.EqualFold(args[j], "optin"):
			t.OptIn = true
		case ascii.EqualFold(args[j], "optout"):
			t.OptOut = true
		case ascii.EqualFold(args[j], "noloop"):
			t.NoLoop = true
		case ascii.EqualFold(args[j], "prefix") && more:
			j++
			t.Prefixes = append(t.Prefixes, string(args[j]))
		default:
			x.Error(ErrSyntax)
			return
		}
	}
	switch {
	case ascii.EqualFold(args[2], "off"):
		x.N.Track(x.C, Tracking{})
		x.OK()
		return
	case !ascii.EqualFold(args[2], "on"):
		x.Error(ErrSyntax)
		return
	}
	cur := x.C.Tracking()
	switch {
	case !t.BCast && len(t.Prefixes) > 0:
		x.Error(ErrTrackingPrefixNoBcast)
		return
	case cur.On && cur.BCast != t.BCast:
		x.Error(ErrTrackingSwitchBcast)
		return
	case t.BCast && (t.OptIn || t.OptOut):
		x.Error(ErrTrackingBcastOpt)
		return
	case t.OptIn && t.OptOut:
		x.Error(ErrTrackingOptInOut)
		return
	case cur.On && (t.OptIn && cur.OptOut || t.OptOut && cur.OptIn):
		x.Error(ErrTrackingSwitchOpt)
		return
	}
	if t.BCast {
		// Redis checks the prefixes given against the ones the
		// connection has, then against one another. None given is "",
		// every key, checked against nothing.
		old := cur.Prefixes
		if !cur.On {
			old = nil
		}
		for i, p := range t.Prefixes {
			for _, q := range old {
				if overlaps(p, q) {
					x.Error(ErrTrackingPrefixOverlap(p, q, true))
					return
				}
			}
			for _, q := range t.Prefixes[i+1:] {
				if overlaps(p, q) {
					x.Error(ErrTrackingPrefixOverlap(p, q, false))
					return
				}
			}
		}
		if len(t.Prefixes) == 0 {
			t.Prefixes = []string{""}
		}
		// The prefixes add up while BCAST stays on, each once, in order
		// (Redis keeps them in a radix tree).
		t.Prefixes = append(t.Prefixes, old...)
		slices.Sort(t.Prefixes)
		t.Prefixes = slices.Compact(t.Prefixes)
	}
	t.On = true
	x.N.Track(x.C, t)
	x.OK()
}

// overlaps reports whether one of two prefixes starts the other.
func overlaps(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }

// cmdClientCaching is CLIENT CACHING YES|NO.
func cmdClientCaching(x *Ctx) {
	t := x.C.Tracking()
	switch {
	case !t.On:
		x.Error(ErrCachingNoTracking)
	case ascii.EqualFold(x.Args[2], "yes") && !t.OptIn:
		x.Error(ErrCachingYes)
	case ascii.EqualFold(x.Args[2], "no") && !t.OptOut:
		x.Error(ErrCachingNo)
	case ascii.EqualFold(x.Args[2], "yes"), ascii.EqualFold(x.Args[2], "no"):
		x.C.caching = true
		x.OK()
	default:
		x.Error(ErrSyntax)
	}
}

// cmdClientGetRedir is CLIENT GETREDIR: the client ID the invalidations
// go to, 0 for this connection, -1 with tracking off.
func cmdClientGetRedir(x *Ctx) {
	t := x.C.Tracking()
	if !t.On {
		x.W.Int(-1)
		return
	}
	x.W.Int(t.Redirect)
}

// cmdClientTrackingInfo is CLIENT TRACKINGINFO: the mode's flags, the
// redirect (-1 with tracking off) and BCAST's prefixes.
func cmdClientTrackingInfo(x *Ctx) {
	t := x.C.Tracking()
	w := x.W
	w.Map(3)
	w.BulkString("flags")
	var flags []string
	if !t.On {
		flags = append(flags, "off")
	} else {
		flags = append(flags, "on")
		for _, f := range []struct {
			on   bool
			name string
		}{{t.BCast, "bcast"}, {t.OptIn, "optin"}, {t.OptOut, "optout"},
			{x.C.caching && t.OptIn, "caching-yes"}, {x.C.caching && t.OptOut, "caching-no"},
			{t.NoLoop, "noloop"}, {t.Broken, "broken_redirect"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	if t.On {
		w.Int(t.Redirect)
	} else {
		w.Int(-1)
	}
	w.BulkString("prefixes")
	w.Array(len(t.Prefixes))
	for _, p := range t.Prefixes {
		w.BulkString(p)
	}
}

// WriteInvalidation writes a tracking message in w's protocol: the keys
// to drop, or, for nil, every key (a flush). In RESP3 a
// push, ">2 invalidate keys"; in RESP2, to a redirect's subscriber, a
// message on __redis__:invalidate.
func WriteInvalidation(w Writer, keys [][]byte) {
	if w.Proto() >= 3 {
		w.Push(2)
		w.BulkString("invalidate")
	} else {
		w.Push(3)
		w.BulkString("message")
		w.BulkString(InvalidateChannel)
	}
	if keys == nil {
		w.Null()
		return
	}
	w.Array(len(keys))
	for _, k := range keys {
		w.Bulk(k)
	}
}

// WriteRedirectBroken writes the RESP3 push that tells a tracking
// connection its redirect's client has gone.
func WriteRedirectBroken(w Writer, id int64) {
	w.Push(2)
	w.BulkString("tracking-redir-broken")
	w.Int(id)
}

// InvalidateChannel is where a RESP2 redirect's subscriber gets the
// invalidations.
const InvalidateChannel = "__redis__:invalidate"
