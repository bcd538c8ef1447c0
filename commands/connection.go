package commands

import (
	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/redisint"
)

// The connection family: PING, ECHO, AUTH, HELLO, SELECT, QUIT, RESET.

func cmdPing(x *Ctx) {
	if x.C.Proto() == 2 && x.C.nsubs.Load() > 0 { // subscribed mode: Redis's shape
		x.W.Array(2)
		x.W.BulkString("pong")
		if len(x.Args) > 1 {
			x.W.Bulk(x.Args[1])
		} else {
			x.W.BulkString("")
		}
		return
	}
	switch len(x.Args) {
	case 1:
		x.W.Simple("PONG")
	case 2:
		x.W.Bulk(x.Args[1])
	default:
		x.Error(ErrWrongArgs("ping"))
	}
}

func cmdEcho(x *Ctx) { x.W.Bulk(x.Args[1]) }

// cmdAuth is AUTH [user] password: the one-argument form logs in the
// default user, and is an error while that user needs no password.
func cmdAuth(x *Ctx) {
	var user, pass []byte
	switch len(x.Args) {
	case 2:
		if x.N.User("default").Rules().NoPass() {
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
	u := x.N.Authenticate(x.C, x.Args[0], user, pass)
	if u == nil {
		x.Error(ErrWrongPass)
		return
	}
	x.C.logIn(u, true)
	x.OK()
}

// helloArgs is HELLO [protover [AUTH user pass] [SETNAME name]].
type helloArgs struct {
	proto      int    // 0: keep the current one
	user, pass []byte // nil: no AUTH
	name       []byte // nil: no SETNAME
}

func parseHello(args [][]byte) (helloArgs, error) {
	var h helloArgs
	if len(args) > 0 {
		v, ok := redisint.Parse(args[0])
		if !ok {
			return h, ErrProtoNotInt
		}
		if v < 2 || v > 3 {
			return h, ErrNoProto
		}
		h.proto = int(v)
		args = args[1:]
	}
	for len(args) > 0 {
		opt := ascii.Lower(args[0])
		switch {
		case opt == "auth" && len(args) >= 3:
			h.user, h.pass = args[1], args[2]
			args = args[3:]
		case opt == "setname" && len(args) >= 2:
			if !validClientName(args[1]) {
				return h, ErrClientName
			}
			h.name = args[1]
			args = args[2:]
		default:
			return h, ErrHelloOption(args[0])
		}
	}
	return h, nil
}

func cmdHello(x *Ctx) {
	h, err := parseHello(x.Args[1:])
	if err != nil {
		x.Error(err)
		return
	}
	if h.user != nil {
		u := x.N.Authenticate(x.C, x.Args[0], h.user, h.pass)
		if u == nil {
			x.Error(ErrWrongPass)
			return
		}
		x.C.logIn(u, true)
	}
	if !x.C.authed {
		x.Error(ErrHelloNoAuth)
		return
	}
	if h.proto != 0 {
		x.C.proto.Store(int32(h.proto))
	}
	if h.name != nil {
		x.C.SetName(string(h.name))
	}
	w := x.W
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(RedisVersion)
	w.BulkString("proto")
	w.Int(int64(x.C.Proto()))
	w.BulkString("id")
	w.Int(x.C.ID)
	w.BulkString("mode")
	if x.N.Cluster() != nil {
		w.BulkString("cluster")
	} else {
		w.BulkString("standalone")
	}
	w.BulkString("role")
	if x.N.Role().Replica {
		w.BulkString("replica")
	} else {
		w.BulkString("master")
	}
	w.BulkString("modules")
	w.Array(0)
}

func cmdSelect(x *Ctx) {
	n, ok := redisint.Parse(x.Args[1])
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
	c.endMulti()
	c.UnsubscribeAll(x.N)
	if c.TrackingOn() {
		x.N.Track(c, Tracking{})
	}
	c.proto.Store(2)
	c.reply = replyOn
	c.readOnly = false
	c.SetName("")
	def := x.N.User("default")
	c.logIn(def, def.Rules().NoPass() && def.Rules().On())
	x.W.Simple("RESET")
}

// validClientName: a name is printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}
