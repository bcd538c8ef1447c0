package commands

import (
	"errors"
	"strconv"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/glob"
	"github.com/rlserver/rlserver/internal/ascii"
)

// The server family: INFO, CONFIG, TIME, DEBUG CLOCK, SAVE, BGSAVE,
// LASTSAVE, SHUTDOWN.

// Version is rlserver's version, reported by INFO and the start-up log.
const Version = "0.1.0"

// RedisVersion is the Redis version whose behaviour rlserver follows; it is
// what HELLO and INFO report as redis_version, for clients that check it.
const RedisVersion = "7.2.0"

func cmdInfo(x *Ctx) { x.W.Verbatim(x.N.Info(x.Args[1:], x.Now, x.Store)) }

func cmdTime(x *Ctx) {
	sec, us := x.Now/1e9, (x.Now%1e9)/1e3
	x.W.Array(2)
	x.W.BulkString(strconv.FormatInt(sec, 10))
	x.W.BulkString(strconv.FormatInt(us, 10))
}

// cmdDebugClock is DEBUG CLOCK SET time | ADVANCE duration | GET
// (docs/clock.md).
func cmdDebugClock(x *Ctx) {
	clk := x.N.Clock()
	if tl, ok := clk.(*clock.Timeline); ok {
		clk = tl.Own() // DEBUG CLOCK moves the node's own clock, also on a replica
	}
	m, ok := clk.(*clock.Manual)
	if !ok {
		x.Error(ErrNeedManual)
		return
	}
	op := ascii.Upper(x.Args[2])
	switch {
	case op == "GET" && len(x.Args) == 3:
		x.W.Int(m.Now())
	case (op == "SET" || op == "ADVANCE") && len(x.Args) == 4:
		d, err := clock.ParseDuration(string(x.Args[3]))
		if err != nil {
			x.Error(ErrClockValue)
			return
		}
		if op == "SET" {
			if err := m.Set(d); err != nil {
				x.Error(ErrClockBack)
				return
			}
		} else if _, err := m.Advance(d); err != nil {
			if errors.Is(err, clock.ErrBackwards) {
				x.Error(ErrClockBack)
			} else {
				x.Error(ErrClockValue)
			}
			return
		}
		x.OK()
	default:
		x.Error(ErrSyntax)
	}
}

// parseShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: whether
// to write a final snapshot, whether SAVE insisted on one, and whether
// NOW skips waiting for the replicas to acknowledge every change.
func parseShutdown(args [][]byte) (save, mustSave, now bool, err error) {
	nosave := false
	for _, a := range args {
		switch ascii.Upper(a) {
		case "NOW":
			now = true
		case "FORCE":
		case "NOSAVE":
			nosave = true
		case "SAVE":
			mustSave = true
		case "ABORT":
			return false, false, false, ErrNoShutdown
		default:
			return false, false, false, ErrSyntax
		}
	}
	if mustSave && nosave {
		return false, false, false, ErrSyntax
	}
	return !nosave, mustSave, now, nil
}

// cmdShutdown snapshots unless NOSAVE (SAVE needs persistence), then the
// process stops. As in Redis, a successful SHUTDOWN sends no reply.
func cmdShutdown(x *Ctx) {
	save, mustSave, now, err := parseShutdown(x.Args[1:])
	if err != nil {
		x.Error(err)
		return
	}
	if mustSave && !x.N.Persistent() {
		x.Error(ErrPersistOff)
		return
	}
	x.N.Logger().Info("shutdown requested by client", "id", x.C.ID, "addr", x.C.Addr, "save", save, "now", now)
	x.C.closeAfterReply = true
	x.N.RequestShutdown(save, now)
}

func cmdSave(x *Ctx) {
	if err := x.N.Save(); err != nil {
		x.Error(err)
		return
	}
	x.OK()
}

func cmdBgsave(x *Ctx) {
	if len(x.Args) > 2 || (len(x.Args) == 2 && !ascii.EqualFold(x.Args[1], "SCHEDULE")) {
		x.Error(ErrSyntax) // before anything else, as in Redis
		return
	}
	if !x.N.Persistent() {
		x.Error(ErrPersistOff)
		return
	}
	if err := x.N.BackgroundSave(); err != nil {
		x.Error(err)
		return
	}
	x.W.Simple("Background saving started")
}

func cmdLastsave(x *Ctx) { x.W.Int(x.N.LastSave()) }

func cmdConfigGet(x *Ctx) {
	params := x.N.ConfigParams()
	seen := map[string]bool{}
	var out []ConfigParam
	for _, pat := range x.Args[2:] {
		for _, p := range params {
			if !seen[p.Name] && glob.Match(pat, []byte(p.Name), true) {
				seen[p.Name] = true
				out = append(out, p)
			}
		}
	}
	x.W.Map(len(out))
	for _, p := range out {
		x.W.BulkString(p.Name)
		x.W.BulkString(p.Get())
	}
}

// cmdConfigSet checks every name before it sets any value.
func cmdConfigSet(x *Ctx) {
	args := x.Args[2:]
	if len(args)%2 != 0 {
		x.Error(ErrWrongArgs("config|set"))
		return
	}
	params := x.N.ConfigParams()
	type change struct {
		p ConfigParam
		v string
	}
	var changes []change
	for i := 0; i < len(args); i += 2 {
		name := ascii.Lower(args[i])
		var found *ConfigParam
		for j := range params {
			if params[j].Name == name {
				found = &params[j]
			}
		}
		if found == nil {
			x.Error(ErrConfigUnknown(args[i]))
			return
		}
		if found.Set == nil {
			x.Error(ErrConfigImmutable(name))
			return
		}
		for _, c := range changes {
			if c.p.Name == found.Name {
				x.Error(ErrConfigDuplicate(args[i]))
				return
			}
		}
		changes = append(changes, change{*found, string(args[i+1])})
	}
	for _, c := range changes {
		if err := c.p.Set(c.v); err != nil {
			x.Error(ErrConfigFailed(c.p.Name, err))
			return
		}
	}
	x.OK()
}

// cmdConfigRewrite writes the running configuration, the role included,
// into the configuration file; without one, Redis's error. Sentinel sends
// it inside the MULTI that promotes or re-points a node.
func cmdConfigRewrite(x *Ctx) {
	if err := x.N.RewriteConfig(x.C); err != nil {
		x.Error(err)
		return
	}
	x.OK()
}

func cmdConfigResetStat(x *Ctx) {
	x.N.ResetStats()
	x.OK()
}
