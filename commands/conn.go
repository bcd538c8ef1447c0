package commands

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
)

func cmdPing(x *Ctx) {
	switch len(x.Args) {
	case 1:
		x.W.Simple("PONG")
	case 2:
		x.W.Bulk(x.Args[1])
	default:
		x.Error(Error("ERR wrong number of arguments for 'ping' command"))
	}
}

func cmdEcho(x *Ctx) { x.W.Bulk(x.Args[1]) }

// checkPassword reports whether user/pass authenticate as the only user,
// "default". With no requirepass, default accepts any password.
func (s *Server) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	want := *s.requirePass.Load()
	if want == "" {
		return true
	}
	return subtle.ConstantTimeCompare(pass, []byte(want)) == 1
}

func cmdAuth(x *Ctx) {
	var user, pass []byte
	switch len(x.Args) {
	case 2:
		if *x.S.requirePass.Load() == "" {
			x.Error(ErrAuthNoPass)
			return
		}
		user, pass = []byte("default"), x.Args[1]
	case 3:
		user, pass = x.Args[1], x.Args[2]
	default:
		x.Error(ErrSyntax)
		return
	}
	if !x.S.checkPassword(user, pass) {
		x.Error(ErrWrongPass)
		return
	}
	x.C.authed = true
	x.OK()
}

func cmdHello(x *Ctx) {
	proto := x.C.proto
	args := x.Args[1:]
	if len(args) > 0 {
		v, ok := parseInt64(args[0])
		if !ok {
			x.Error(ErrProtoNotInt)
			return
		}
		if v < 2 || v > 3 {
			x.Error(ErrNoProto)
			return
		}
		proto = int(v)
		args = args[1:]
	}
	var setName []byte
	authed := x.C.authed
	for len(args) > 0 {
		opt := strings.ToLower(string(args[0]))
		switch {
		case opt == "auth" && len(args) >= 3:
			if !x.S.checkPassword(args[1], args[2]) {
				x.Error(ErrWrongPass)
				return
			}
			authed = true
			args = args[3:]
		case opt == "setname" && len(args) >= 2:
			if !validClientName(args[1]) {
				x.Error(ErrClientName)
				return
			}
			setName = args[1]
			args = args[2:]
		default:
			x.Error(Error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", args[0])))
			return
		}
	}
	if !authed {
		x.Error(Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"))
		return
	}
	x.C.authed = true
	x.C.proto = proto
	if setName != nil {
		x.C.setName(string(setName))
	}
	w := x.W
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(RedisVersion)
	w.BulkString("proto")
	w.Int(int64(proto))
	w.BulkString("id")
	w.Int(x.C.ID)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
}

func cmdSelect(x *Ctx) {
	n, ok := parseInt64(x.Args[1])
	if !ok {
		x.Error(ErrNotInteger)
		return
	}
	if n != 0 {
		x.Error(ErrDBIndex)
		return
	}
	x.OK()
}

func cmdQuit(x *Ctx) {
	x.C.closeAfterReply = true
	x.OK()
}

func cmdReset(x *Ctx) {
	c := x.C
	c.multi, c.multiErr, c.queue = false, false, nil
	c.proto = 2
	c.setName("")
	c.authed = *x.S.requirePass.Load() == ""
	x.W.Simple("RESET")
}

func validClientName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

func (c *Client) setName(n string) {
	c.mu.Lock()
	c.name = n
	c.mu.Unlock()
}

func cmdClientID(x *Ctx) { x.W.Int(x.C.ID) }

func cmdClientSetName(x *Ctx) {
	if !validClientName(x.Args[2]) {
		x.Error(ErrClientName)
		return
	}
	x.C.setName(string(x.Args[2]))
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
	attr := strings.ToLower(string(x.Args[2]))
	val := string(x.Args[3])
	if !validClientName(x.Args[3]) && val != "" {
		x.Error(Error(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr)))
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
		x.Error(Error(fmt.Sprintf("ERR Unrecognized option '%s'", x.Args[2])))
		return
	}
	x.OK()
}

func cmdClientOnOff(x *Ctx) {
	switch strings.ToLower(string(x.Args[2])) {
	case "on", "off":
		x.OK()
	default:
		x.Error(ErrSyntax)
	}
}

// info is one client's CLIENT LIST line, in Redis 7's field order.
func (c *Client) info(s *Server, cur *Client) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	multi := -1
	if c.multi && c == cur {
		multi = len(c.queue)
	}
	flags := "N"
	if c.multi && c == cur {
		flags = "x"
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
		c.ID, c.Addr, c.LAddr, c.name, int(now.Sub(c.created).Seconds()), (monoNow()-c.lastActive.Load())/1e9,
		flags, multi, orNULL(c.lastCmd.Load()), c.proto, c.libName, c.libVer)
}

func orNULL(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

func (s *Server) clientList() []*Client {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	out := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		if !c.killed.Load() { // killed clients are gone even before their goroutine ends
			out = append(out, c)
		}
	}
	sortClients(out)
	return out
}

func sortClients(cs []*Client) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].ID < cs[j-1].ID; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

func cmdClientList(x *Ctx) {
	var ids map[int64]bool
	args := x.Args[2:]
	for len(args) > 0 {
		switch strings.ToLower(string(args[0])) {
		case "type":
			if len(args) < 2 {
				x.Error(ErrSyntax)
				return
			}
			t := strings.ToLower(string(args[1]))
			if t != "normal" && t != "master" && t != "replica" && t != "slave" && t != "pubsub" {
				x.Error(Error("ERR Unknown client type '" + string(args[1]) + "'"))
				return
			}
			if t != "normal" {
				ids = map[int64]bool{}
			}
			args = args[2:]
		case "id":
			if len(args) < 2 {
				x.Error(ErrSyntax)
				return
			}
			if ids == nil {
				ids = map[int64]bool{}
			}
			for _, a := range args[1:] {
				id, ok := parseInt64(a)
				if !ok || id <= 0 {
					x.Error(Error("ERR Invalid client ID"))
					return
				}
				ids[id] = true
			}
			args = nil
		default:
			x.Error(ErrSyntax)
			return
		}
	}
	var b strings.Builder
	for _, c := range x.S.clientList() {
		if ids != nil && !ids[c.ID] {
			continue
		}
		b.WriteString(c.info(x.S, x.C))
	}
	x.W.Verbatim(b.String())
}

func cmdClientInfo(x *Ctx) { x.W.Verbatim(x.C.info(x.S, x.C)) }

func cmdClientKill(x *Ctx) {
	args := x.Args[2:]
	if len(args) == 1 { // old form: CLIENT KILL addr
		n := x.S.killClients(func(c *Client) bool { return c.Addr == string(args[0]) }, x.C, false)
		if n == 0 {
			x.Error(ErrNoSuchClient)
			return
		}
		x.OK()
		return
	}
	if len(args)%2 != 0 {
		x.Error(ErrSyntax)
		return
	}
	var filters []func(*Client) bool
	skipMe := true
	for i := 0; i < len(args); i += 2 {
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "id":
			id, ok := parseInt64(args[i+1])
			if !ok || id <= 0 {
				x.Error(Error("ERR client-id should be greater than 0"))
				return
			}
			filters = append(filters, func(c *Client) bool { return c.ID == id })
		case "addr":
			filters = append(filters, func(c *Client) bool { return c.Addr == v })
		case "laddr":
			filters = append(filters, func(c *Client) bool { return c.LAddr == v })
		case "user":
			filters = append(filters, func(*Client) bool { return v == "default" })
		case "type":
			t := strings.ToLower(v)
			filters = append(filters, func(*Client) bool { return t == "normal" })
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				x.Error(ErrSyntax)
				return
			}
		case "maxage":
			age, ok := parseInt64(args[i+1])
			if !ok {
				x.Error(ErrNotInteger)
				return
			}
			filters = append(filters, func(c *Client) bool { return time.Since(c.created) >= time.Duration(age)*time.Second })
		default:
			x.Error(ErrSyntax)
			return
		}
	}
	match := func(c *Client) bool {
		for _, f := range filters {
			if !f(c) {
				return false
			}
		}
		return true
	}
	x.W.Int(int64(x.S.killClients(match, x.C, skipMe)))
}

// killClients closes every client that match accepts and returns how many.
// The calling client, when matched and not skipped, is closed after its
// reply.
func (s *Server) killClients(match func(*Client) bool, self *Client, skipSelf bool) int {
	n := 0
	for _, c := range s.clientList() {
		if !match(c) || (skipSelf && c == self) {
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

func cmdClientHelp(x *Ctx) {
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ID", "INFO", "LIST [TYPE normal|master|replica|pubsub] [ID id ...]", "KILL <ip:port> | KILL <filter> <value> ...",
		"GETNAME", "SETNAME <name>", "SETINFO <LIB-NAME|LIB-VER> <value>", "NO-EVICT (ON|OFF)", "NO-TOUCH (ON|OFF)", "HELP",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}
