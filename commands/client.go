package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/redisint"
)

// The CLIENT family. The node lists the sessions; the line CLIENT LIST
// prints and the kill are the commands'.

func cmdClientID(x *Ctx) { x.W.Int(x.C.ID) }

func cmdClientSetName(x *Ctx) {
	if !validClientName(x.Args[2]) {
		x.Error(ErrClientName)
		return
	}
	x.C.SetName(string(x.Args[2]))
	x.OK()
}

func cmdClientGetName(x *Ctx) {
	x.C.mu.Lock()
	n := x.C.name
	x.C.mu.Unlock()
	if n == "" {
		x.W.Null()
		return
	}
	x.W.BulkString(n)
}

func cmdClientSetInfo(x *Ctx) {
	attr := ascii.Lower(x.Args[2])
	val := string(x.Args[3])
	if !validClientName(x.Args[3]) && val != "" {
		x.Error(ErrClientInfoChars(attr))
		return
	}
	x.C.mu.Lock()
	defer x.C.mu.Unlock()
	switch attr {
	case "lib-name":
		x.C.libName = val
	case "lib-ver":
		x.C.libVer = val
	default:
		x.Error(ErrUnrecognizedOption(x.Args[2]))
		return
	}
	x.OK()
}

func cmdClientOnOff(x *Ctx) {
	switch ascii.Lower(x.Args[2]) {
	case "on", "off":
		x.OK()
	default:
		x.Error(ErrSyntax)
	}
}

// clientLine is a session's CLIENT LIST line, in Redis 7's field order.
func clientLine(c *Session) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	multi := int(c.queued.Load())
	sub, psub := c.Subscriptions()
	t := c.tracking
	redir := int64(-1)
	if t.On {
		redir = t.Redirect
	}
	// Redis's letters, in its order.
	var f []byte
	for _, l := range []struct {
		on bool
		c  byte
	}{{sub+psub > 0, 'P'}, {multi >= 0, 'x'}, {t.On, 't'}, {t.On && t.Broken, 'R'}, {t.On && t.BCast, 'B'}} {
		if l.on {
			f = append(f, l.c)
		}
	}
	flags := string(f)
	if flags == "" {
		flags = "N"
	}
	qbuf, omem := c.qbuf.Load(), c.omem.Load()
	events := "r"
	if omem > 0 {
		events = "rw"
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=0 sub=%d psub=%d ssub=0 multi=%d qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=%d tot-mem=%d events=%s cmd=%s user=%s redir=%d resp=%d lib-name=%s lib-ver=%s\n",
		c.ID, c.Addr, c.LAddr, c.fd.Load(), c.name, int(time.Since(c.Created).Seconds()), int64(c.Idle().Seconds()),
		flags, sub, psub, multi, qbuf, omem, qbuf+omem, events, orNULL(c.lastCmd.Load()), c.User().Name(), redir, c.Proto(), c.libName, c.libVer)
}

func orNULL(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// ofType matches the sessions of client type t (lower case), as CLIENT
// LIST and CLIENT KILL filter them: pubsub while a session has
// subscriptions, else normal. Replication's links are not sessions, so
// master and replica match none. ok is false for a name that is no type.
func ofType(t string) (match func(*Session) bool, ok bool) {
	switch t {
	case "normal", "pubsub":
		return func(c *Session) bool { return (c.nsubs.Load() > 0) == (t == "pubsub") }, true
	case "master", "replica", "slave":
		return func(*Session) bool { return false }, true
	}
	return nil, false
}

// parseClientList is CLIENT LIST's filter, as Redis 7.0 reads it: TYPE
// type (ofType), or ID id..., or nothing (nil: every session). An ID is
// any integer; one that names no session lists nothing.
func parseClientList(args [][]byte) (func(*Session) bool, error) {
	switch {
	case len(args) == 0:
		return nil, nil
	case len(args) == 2 && ascii.EqualFold(args[0], "type"):
		if match, ok := ofType(ascii.Lower(args[1])); ok {
			return match, nil
		}
		return nil, ErrClientType(args[1])
	case len(args) > 1 && ascii.EqualFold(args[0], "id"):
		ids := map[int64]bool{}
		for _, a := range args[1:] {
			id, ok := redisint.Parse(a)
			if !ok {
				return nil, ErrClientID
			}
			ids[id] = true
		}
		return func(c *Session) bool { return ids[c.ID] }, nil
	}
	return nil, ErrSyntax
}

func cmdClientList(x *Ctx) {
	listed, err := parseClientList(x.Args[2:])
	if err != nil {
		x.Error(err)
		return
	}
	var b strings.Builder
	for _, c := range x.N.Sessions() {
		if listed != nil && !listed(c) {
			continue
		}
		b.WriteString(clientLine(c))
	}
	x.W.Verbatim(b.String())
}

func cmdClientInfo(x *Ctx) { x.W.Verbatim(clientLine(x.C)) }

// killFilter is CLIENT KILL's selection: every filter must match; the
// caller is spared when skipMe.
type killFilter struct {
	match  []func(*Session) bool
	skipMe bool
	old    bool // CLIENT KILL addr: an error, not 0, when none matches
	// links is "master" or "replica" for TYPE master / replica / slave:
	// replication's links, which are not sessions.
	links string
}

func (f killFilter) matches(c *Session) bool {
	for _, m := range f.match {
		if !m(c) {
			return false
		}
	}
	return true
}

func parseClientKill(x *Ctx, args [][]byte) (killFilter, error) {
	if len(args) == 1 { // old form: CLIENT KILL addr
		addr := string(args[0])
		return killFilter{match: []func(*Session) bool{func(c *Session) bool { return c.Addr == addr }}, old: true}, nil
	}
	f := killFilter{skipMe: true}
	if len(args)%2 != 0 {
		return f, ErrSyntax
	}
	for i := 0; i < len(args); i += 2 {
		v := string(args[i+1])
		switch ascii.Lower(args[i]) {
		case "id":
			id, ok := redisint.Parse(args[i+1])
			if !ok || id <= 0 {
				return f, ErrKillClientID
			}
			f.match = append(f.match, func(c *Session) bool { return c.ID == id })
		case "addr":
			f.match = append(f.match, func(c *Session) bool { return c.Addr == v })
		case "laddr":
			f.match = append(f.match, func(c *Session) bool { return c.LAddr == v })
		case "user":
			u := x.N.User(v)
			if u == nil {
				return f, ErrNoSuchUser(args[i+1])
			}
			f.match = append(f.match, func(c *Session) bool { return c.User() == u })
		case "type":
			t := ascii.Lower(v)
			match, ok := ofType(t)
			if !ok {
				return f, ErrClientType(args[i+1])
			}
			switch t {
			case "master":
				f.links = t
			case "replica", "slave":
				f.links = "replica"
			}
			f.match = append(f.match, match)
		case "skipme":
			switch ascii.Lower(v) {
			case "yes":
				f.skipMe = true
			case "no":
				f.skipMe = false
			default:
				return f, ErrSyntax
			}
		case "maxage":
			age, ok := redisint.Parse(args[i+1])
			if !ok {
				return f, ErrNotInteger
			}
			f.match = append(f.match, func(c *Session) bool { return time.Since(c.Created) >= time.Duration(age)*time.Second })
		default:
			return f, ErrSyntax
		}
	}
	return f, nil
}

func cmdClientKill(x *Ctx) {
	f, err := parseClientKill(x, x.Args[2:])
	if err != nil {
		x.Error(err)
		return
	}
	n := kill(x.N.Sessions(), f, x.C)
	switch f.links {
	case "master":
		n += x.N.KillPrimaryLink()
	case "replica":
		n += x.N.KillReplicaLinks()
	}
	if f.old {
		if n == 0 {
			x.Error(ErrNoSuchClient)
			return
		}
		x.OK()
		return
	}
	x.W.Int(int64(n))
}

// Kill closes the sessions, self's after its reply, and returns how many
// were not closing already: what CLIENT KILL does to those it selects
// (the node closes a deleted user's connections with it).
func Kill(sessions []*Session, self *Session) int { return kill(sessions, killFilter{}, self) }

// kill closes every session f selects and returns how many. The calling
// session, when selected and not spared, is closed after its reply. An
// internal session (a front's, SetInternal) has no connection to close:
// it is never selected.
func kill(sessions []*Session, f killFilter, self *Session) int {
	n := 0
	for _, c := range sessions {
		if !f.matches(c) || (f.skipMe && c == self) || c.internal {
			continue
		}
		if !c.killed.CompareAndSwap(false, true) {
			continue // already being closed by another kill
		}
		n++
		if c == self {
			c.closeAfterReply = true
		} else if c.Close != nil {
			c.Close()
		}
	}
	return n
}

// cmdClientPause is CLIENT PAUSE timeout [WRITE|ALL], Redis 7.0's
// checks in its order: the count, the mode, then the timeout (ms).
func cmdClientPause(x *Ctx) {
	if len(x.Args) > 4 {
		x.Error(ErrSubcommandSyntax(x.Args[1], "client"))
		return
	}
	all := true
	if len(x.Args) == 4 {
		switch m := x.Args[3]; {
		case ascii.EqualFold(m, "WRITE"):
			all = false
		case ascii.EqualFold(m, "ALL"):
		default:
			x.Error(ErrPauseMode)
			return
		}
	}
	ms, ok := redisint.Parse(x.Args[2])
	switch {
	case !ok:
		x.Error(ErrTimeoutInt)
		return
	case ms < 0:
		x.Error(ErrTimeoutNeg)
		return
	}
	x.N.Pause(x.C, millis(ms), all)
	x.OK()
}

// millis is a timeout of ms milliseconds (not negative), at most some 146
// years: Redis takes any timeout, and a longer one would overflow a
// time.Duration (WAIT, FAILOVER, CLIENT PAUSE).
func millis(ms int64) time.Duration {
	return time.Duration(min(ms, int64(1<<62)/int64(time.Millisecond))) * time.Millisecond
}

// cmdClientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: no command
// blocks a connection here, so none is unblocked (0), once the arguments
// are checked in Redis 7.0's order.
func cmdClientUnblock(x *Ctx) {
	if len(x.Args) > 4 {
		x.Error(ErrSubcommandSyntax(x.Args[1], "client"))
		return
	}
	if len(x.Args) == 4 && !ascii.EqualFold(x.Args[3], "timeout") && !ascii.EqualFold(x.Args[3], "error") {
		x.Error(ErrUnblockReason)
		return
	}
	if _, ok := redisint.Parse(x.Args[2]); !ok {
		x.Error(ErrNotInteger)
		return
	}
	x.W.Int(0)
}

// cmdClientUnpause is CLIENT UNPAUSE.
func cmdClientUnpause(x *Ctx) {
	x.N.Unpause()
	x.OK()
}

func cmdClientHelp(x *Ctx) {
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ID", "INFO", "LIST [TYPE normal|master|replica|pubsub] [ID id ...]", "KILL <ip:port> | KILL <filter> <value> ...",
		"GETNAME", "SETNAME <name>", "SETINFO <LIB-NAME|LIB-VER> <value>", "NO-EVICT (ON|OFF)", "NO-TOUCH (ON|OFF)",
		"PAUSE <timeout> [WRITE|ALL]", "UNPAUSE", "REPLY (ON|OFF|SKIP)", "UNBLOCK <clientid> [TIMEOUT|ERROR]",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT] [NOLOOP]", "CACHING (YES|NO)",
		"GETREDIR", "TRACKINGINFO", "HELP",
	}
	writeHelp(x, lines)
}

// ClientInfo is s's CLIENT INFO line without its newline, as the ACL log
// keeps it for a refusal of s.
func ClientInfo(s *Session) string { return strings.TrimSuffix(clientLine(s), "\n") }
