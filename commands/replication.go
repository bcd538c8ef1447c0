package commands

import (
	"strconv"
	"time"

	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/redisint"
)

// Replication's commands (docs/replication.md): REPLICAOF/SLAVEOF, ROLE,
// WAIT, and the two a replica's handshake sends, REPLCONF and PSYNC.

func cmdReplicaOf(x *Ctx) {
	host, port := x.Args[1], x.Args[2]
	if ascii.EqualFold(host, "NO") && ascii.EqualFold(port, "ONE") {
		if err := x.N.ReplicaOfNoOne(x.C); err != nil {
			x.Error(err)
			return
		}
		x.OK()
		return
	}
	p, ok := redisint.Parse(port)
	if !ok || p < 0 || p > 65535 {
		x.Error(ErrMasterPort)
		return
	}
	already, err := x.N.ReplicaOf(x.C, string(host), int(p))
	switch {
	case err != nil:
		x.Error(err)
	case already:
		x.W.Simple("OK Already connected to specified master")
	default:
		x.OK()
	}
}

func cmdRole(x *Ctx) {
	r := x.N.Role()
	w := x.W
	if r.Replica {
		w.Array(5)
		w.BulkString("slave")
		w.BulkString(r.Host)
		w.Int(int64(r.Port))
		w.BulkString(r.State)
		w.Int(r.Offset)
		return
	}
	w.Array(3)
	w.BulkString("master")
	w.Int(r.Offset)
	w.Array(len(r.Replicas))
	for _, rep := range r.Replicas {
		w.Array(3)
		w.BulkString(rep.IP)
		w.BulkString(strconv.Itoa(rep.Port))
		w.BulkString(strconv.FormatInt(rep.Offset, 10))
	}
}

func cmdWait(x *Ctx) {
	n, ok := redisint.Parse(x.Args[1])
	if !ok {
		x.Error(ErrNotInteger)
		return
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
	now, later, err := x.N.Wait(x.C, int(min(max(n, 0), 1<<30)), millis(ms))
	switch {
	case err != nil:
		x.Error(err)
	case later == nil:
		x.W.Int(int64(now))
	default:
		x.C.Park(func(gone <-chan struct{}) func(Writer) {
			k := int64(later(gone))
			return func(w Writer) { w.Int(k) }
		})
	}
}

// cmdReplconf takes a replica's handshake options. ACK and GETACK on an
// ordinary connection are ignored without a reply, as Redis does.
func cmdReplconf(x *Ctx) {
	args := x.Args[1:]
	if len(args)%2 != 0 {
		x.Error(ErrSyntax)
		return
	}
	for i := 0; i < len(args); i += 2 {
		switch ascii.Lower(args[i]) {
		case "listening-port":
			p, ok := redisint.Parse(args[i+1])
			if !ok || p < 0 || p > 65535 {
				x.Error(ErrNotInteger)
				return
			}
			x.C.ReplPort = int(p)
		case "ip-address":
			x.C.ReplIP = string(args[i+1])
		case "capa", "rdb-only", "rdb-filter-only":
		case "ack", "getack":
			return
		default:
			x.Error(ErrReplconfOption(args[i]))
			return
		}
	}
	x.OK()
}

// cmdPsync hands the connection to replication, which answers.
func cmdPsync(x *Ctx) {
	off, ok := redisint.Parse(x.Args[2])
	if !ok {
		x.Error(ErrNotInteger)
		return
	}
	failover := len(x.Args) > 3 && ascii.EqualFold(x.Args[3], "FAILOVER")
	if err := x.N.Psync(x.C, string(x.Args[1]), off, failover); err != nil {
		x.Error(err)
	}
}

// FailoverArgs is a FAILOVER call: [TO host port [FORCE]] [TIMEOUT ms],
// or ABORT alone.
type FailoverArgs struct {
	Abort   bool
	Host    string // "" without TO
	Port    int
	Timeout time.Duration // 0 without TIMEOUT
	Force   bool
}

// cmdFailover parses FAILOVER as Redis 7.0's failoverCommand does: each
// option once, in any order, and ABORT only alone.
func cmdFailover(x *Ctx) {
	var a FailoverArgs
	args := x.Args[1:]
	if len(args) == 1 && ascii.EqualFold(args[0], "ABORT") {
		a.Abort = true
		args = nil
	}
	to := false
	for i := 0; i < len(args); i++ {
		switch opt := args[i]; {
		case ascii.EqualFold(opt, "TIMEOUT") && i+1 < len(args) && a.Timeout == 0:
			ms, ok := redisint.Parse(args[i+1])
			if !ok {
				x.Error(ErrNotInteger)
				return
			}
			if ms <= 0 {
				x.Error(ErrFailoverTimeout)
				return
			}
			a.Timeout = millis(ms)
			i++
		case ascii.EqualFold(opt, "TO") && i+2 < len(args) && !to:
			p, ok := redisint.Parse(args[i+2])
			if !ok {
				x.Error(ErrNotInteger)
				return
			}
			to, a.Host, a.Port = true, string(args[i+1]), int(min(max(p, -1), 1<<20))
			i += 2
		case ascii.EqualFold(opt, "FORCE") && !a.Force:
			a.Force = true
		default:
			x.Error(ErrSyntax)
			return
		}
	}
	if err := x.N.Failover(x.C, a); err != nil {
		x.Error(err)
		return
	}
	x.OK()
}
