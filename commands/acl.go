package commands

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/redisint"
)

// The ACL family (docs/protocol.md, "Users and permissions"): SETUSER,
// DELUSER, GETUSER, LIST, USERS, WHOAMI, LOAD, SAVE, CAT, GENPASS,
// DRYRUN, LOG, HELP. The node keeps the users and the log of refusals; the
// rules are package acl's.

func cmdACLSetUser(x *Ctx) {
	name := string(x.Args[2])
	if !acl.ValidName(name) {
		x.Error(ErrUserName)
		return
	}
	rules := make([]string, 0, len(x.Args)-3)
	for _, a := range x.Args[3:] {
		rules = append(rules, string(a))
	}
	if err := x.N.SetUser(x.C, name, rules); err != nil {
		var re *acl.RuleError
		if errors.As(err, &re) {
			err = ErrACLSetUser(re)
		}
		x.Error(err)
		return
	}
	x.OK()
}

// cmdACLDelUser deletes the users named and closes their connections;
// the default user cannot be deleted (then nothing is).
func cmdACLDelUser(x *Ctx) {
	names := make([]string, 0, len(x.Args)-2)
	for _, a := range x.Args[2:] {
		if string(a) == "default" {
			x.Error(ErrDeleteDefault)
			return
		}
		names = append(names, string(a))
	}
	x.W.Int(int64(x.N.DeleteUsers(x.C, names)))
}

// cmdACLGetUser answers Redis 7.0's map: flags, passwords (digests),
// commands, keys, channels, and selectors (always none here).
func cmdACLGetUser(x *Ctx) {
	u := x.N.User(string(x.Args[2]))
	if u == nil {
		x.W.Null()
		return
	}
	r := u.Rules()
	w := x.W
	w.Map(6)
	w.BulkString("flags")
	flags := r.Flags()
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("passwords")
	pw := r.Passwords()
	w.Array(len(pw))
	for _, p := range pw {
		w.BulkString(p)
	}
	w.BulkString("commands")
	w.BulkString(r.CommandRules(x.N.ACLCatalog()))
	w.BulkString("keys")
	w.BulkString(r.KeyRules())
	w.BulkString("channels")
	w.BulkString(r.ChannelRules())
	w.BulkString("selectors")
	w.Array(0)
}

// cmdACLList answers each user as a line of the ACL file, by name.
func cmdACLList(x *Ctx) {
	users := x.N.Users()
	x.W.Array(len(users))
	for _, u := range users {
		x.W.BulkString("user " + u.Name() + " " + u.Rules().Describe(x.N.ACLCatalog()))
	}
}

func cmdACLUsers(x *Ctx) {
	users := x.N.Users()
	x.W.Array(len(users))
	for _, u := range users {
		x.W.BulkString(u.Name())
	}
}

func cmdACLWhoAmI(x *Ctx) { x.W.BulkString(x.C.User().Name()) }

func cmdACLLoad(x *Ctx) {
	if err := x.N.LoadUsers(x.C); err != nil {
		x.Error(err)
		return
	}
	x.OK()
}

func cmdACLSave(x *Ctx) {
	if err := x.N.SaveUsers(); err != nil {
		x.Error(err)
		return
	}
	x.OK()
}

// cmdACLCat lists the categories, or the commands and subcommands of
// one.
func cmdACLCat(x *Ctx) {
	var names []string
	switch len(x.Args) {
	case 2:
		names = acl.CategoryNames()
	case 3:
		c, ok := acl.ParseCategory(string(x.Args[2]))
		if !ok {
			x.Error(ErrUnknownCategory(x.Args[2]))
			return
		}
		names = x.N.ACLCatalog().InCategory(c)
	default:
		x.Error(ErrSubcommandSyntax(x.Args[1], "acl"))
		return
	}
	x.W.Array(len(names))
	for _, n := range names {
		x.W.BulkString(n)
	}
}

// cmdACLGenPass answers bits (default 256, at most 4096) random bits as
// hex digits.
func cmdACLGenPass(x *Ctx) {
	bits := int64(256)
	switch len(x.Args) {
	case 2:
	case 3:
		var ok bool
		if bits, ok = redisint.Parse(x.Args[2]); !ok {
			x.Error(ErrNotInteger)
			return
		}
	default:
		x.Error(ErrSubcommandSyntax(x.Args[1], "acl"))
		return
	}
	if bits <= 0 || bits > 4096 {
		x.Error(ErrGenpassBits)
		return
	}
	var b [4096 / 8]byte
	_, _ = rand.Read(b[:])
	x.W.BulkString(hex.EncodeToString(b[:])[:(bits+3)/4])
}

// cmdACLDryRun is ACL DRYRUN user command [arg ...]: whether the user
// may run the call, checked as the dispatcher checks it, without running
// it; a refusal is answered as a bulk string, Redis's way.
func cmdACLDryRun(x *Ctx) {
	u := x.N.User(string(x.Args[2]))
	if u == nil {
		x.Error(ErrDryRunUser(x.Args[2]))
		return
	}
	call := x.Args[3:]
	cmd := x.N.Commands().Lookup(call[0])
	if cmd != nil && cmd.Sub != nil && len(call) >= 2 {
		cmd = Table(cmd.Sub).Lookup(call[1])
	}
	if cmd == nil {
		x.Error(ErrDryRunCommand(call[0]))
		return
	}
	if !cmd.ArityOK(len(call)) {
		x.Error(ErrWrongArgs(cmd.Name))
		return
	}
	switch d, at := u.Rules().Check(x.N.ACLCatalog().Command(cmd.Index), call); d {
	case acl.DeniedCommand:
		x.W.BulkString("This user has no permissions to run the '" + cmd.Name + "' command")
	case acl.DeniedKey:
		x.W.BulkString("This user has no permissions to access the '" + string(call[at]) + "' key")
	case acl.DeniedChannel:
		x.W.BulkString("This user has no permissions to access the '" + string(call[at]) + "' channel")
	default:
		x.OK()
	}
}

func cmdACLHelp(x *Ctx) {
	writeHelp(x, []string{
		"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
		"HELP",
		"    Prints this help.",
	})
}

// cmdACLLog is ACL LOG [count | RESET]: the newest count entries (10 by
// default; a negative count none), each a map of Redis 7.0's seven
// fields, or RESET, which empties the log.
func cmdACLLog(x *Ctx) {
	count := int64(10)
	switch {
	case len(x.Args) > 3:
		x.Error(ErrSubcommandSyntax(x.Args[1], "acl"))
		return
	case len(x.Args) == 3 && ascii.EqualFold(x.Args[2], "reset"):
		x.N.ACLLogReset()
		x.OK()
		return
	case len(x.Args) == 3:
		n, ok := redisint.Parse(x.Args[2])
		if !ok {
			x.Error(ErrNotInteger)
			return
		}
		count = max(n, 0)
	}
	entries := x.N.ACLLog(int(min(count, 1<<30)))
	now := time.Now().UnixMilli()
	w := x.W
	w.Array(len(entries))
	for _, e := range entries {
		w.Map(7)
		w.BulkString("count")
		w.Int(e.Count)
		w.BulkString("reason")
		w.BulkString(e.Reason)
		w.BulkString("context")
		w.BulkString(e.Context)
		w.BulkString("object")
		w.BulkString(e.Object)
		w.BulkString("username")
		w.BulkString(e.Username)
		w.BulkString("age-seconds")
		w.Double(float64(now-e.Millis) / 1000)
		w.BulkString("client-info")
		w.BulkString(e.ClientInfo)
	}
}
