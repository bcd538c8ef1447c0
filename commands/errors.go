package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
)

// Error is an error reply; its text is exactly what goes on the wire after
// the '-' (Redis prefixes such as "ERR " or "WRONGTYPE " included). Every
// text rlserver sends is here: fixed ones as constants, those that quote
// an argument as functions.
type Error string

func (e Error) Error() string { return string(e) }

// Redis's own wording for the errors clients match on.
const (
	ErrSyntax        Error = "ERR syntax error"
	ErrNotInteger    Error = "ERR value is not an integer or out of range"
	ErrWatchInMulti  Error = "ERR WATCH inside MULTI is not allowed"
	ErrUnblockReason Error = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
	// CLIENT TRACKING and CLIENT CACHING (tracking.go).
	ErrTrackingRedirectTwice Error = "ERR A client can only redirect to a single other client"
	ErrTrackingRedirectGone  Error = "ERR The client ID you want redirect to does not exist"
	ErrTrackingPrefixNoBcast Error = "ERR PREFIX option requires BCAST mode to be enabled"
	ErrTrackingSwitchBcast   Error = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	ErrTrackingBcastOpt      Error = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	ErrTrackingOptInOut      Error = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	ErrTrackingSwitchOpt     Error = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	ErrCachingNoTracking     Error = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	ErrCachingYes            Error = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	ErrCachingNo             Error = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
	ErrNotPositive           Error = "ERR value is out of range, must be positive"
	ErrWrongType             Error = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNoAuth                Error = "NOAUTH Authentication required."
	ErrHelloNoAuth           Error = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	ErrWrongPass             Error = "WRONGPASS invalid username-password pair or user is disabled."
	ErrAuthNoPass            Error = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrDBIndex               Error = "ERR DB index is out of range"
	ErrNoProto               Error = "NOPROTO unsupported protocol version"
	ErrProtoNotInt           Error = "ERR Protocol version is not an integer or out of range"
	ErrMultiNested           Error = "ERR MULTI calls can not be nested"
	ErrExecNoMulti           Error = "ERR EXEC without MULTI"
	ErrDiscardNoMult         Error = "ERR DISCARD without MULTI"
	ErrExecAbort             Error = "EXECABORT Transaction discarded because of previous errors."
	ErrNotInMulti            Error = "ERR Command not allowed inside a transaction"
	ErrNoSuchClient          Error = "ERR No such client"
	ErrClientName            Error = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrClientID              Error = "ERR Invalid client ID"
	ErrKillClientID          Error = "ERR client-id should be greater than 0"
	ErrInvalidExpire         Error = "ERR invalid expire time in 'set' command"
	ErrInvalidCursor         Error = "ERR invalid cursor"
	ErrNoLFU                 Error = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	ErrKeyTooLong            Error = "ERR Protocol error: key too long"
	ErrNeedManual            Error = "ERR DEBUG CLOCK needs the manual clock (--clock manual)"
	ErrClockBack             Error = "ERR DEBUG CLOCK SET would move the clock backwards"
	ErrClockValue            Error = "ERR DEBUG CLOCK invalid time or duration"
	ErrMaxClients            Error = "ERR max number of clients reached"
	ErrPersistOff            Error = "ERR persistence is disabled (--save-interval 0)"
	ErrNoShutdown            Error = "ERR No shutdown in progress."
	ErrBgsaveRunning         Error = "ERR Background save already in progress"
	// ErrReadOnly is what a replica answers to a write.
	ErrReadOnly Error = "READONLY You can't write against a read only replica."
	// ErrNoReplicas is what a primary answers to a write while it has
	// fewer good replicas than --min-replicas-to-write.
	ErrNoReplicas Error = "NOREPLICAS Not enough good replicas to write."
	// Replication (docs/replication.md).
	ErrWaitOnReplica Error = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
	ErrPauseMode     Error = "ERR CLIENT PAUSE mode must be WRITE or ALL"
	ErrTimeoutNeg    Error = "ERR timeout is negative"
	ErrTimeoutInt    Error = "ERR timeout is not an integer or out of range"
	ErrMasterPort    Error = "ERR Invalid master port"
	// FAILOVER (docs/replication.md, "A coordinated failover").
	ErrFailoverCluster        Error = "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead."
	ErrFailoverNone           Error = "ERR No failover in progress."
	ErrFailoverTimeout        Error = "ERR FAILOVER timeout must be greater than 0"
	ErrFailoverRunning        Error = "ERR FAILOVER already in progress."
	ErrFailoverOnReplica      Error = "ERR FAILOVER is not valid when server is a replica."
	ErrFailoverNoReplicas     Error = "ERR FAILOVER requires connected replicas."
	ErrFailoverForce          Error = "ERR FAILOVER with force option requires both a timeout and target HOST and IP."
	ErrFailoverNotReplica     Error = "ERR FAILOVER target HOST and PORT is not a replica."
	ErrFailoverOffline        Error = "ERR FAILOVER target replica is not online."
	ErrPsyncFailoverOnPrimary Error = "ERR PSYNC FAILOVER can't be sent to a master."
	ErrPsyncFailoverReplID    Error = "ERR PSYNC FAILOVER replid must match my replid."
	ErrNoConfigFile           Error = "ERR The server is running without a config file"
	// ErrOOM refuses a new key over --maxmemory under noeviction.
	ErrOOM          Error = "OOM command not allowed when used memory > 'maxmemory'."
	ErrSlowlogCount Error = "ERR count should be greater than or equal to -1"
	// ErrDenied is what a connection from another host gets in protected
	// mode (protocol.md, "Connections and authentication"): Redis 7.0's
	// text, typo included.
	ErrDenied Error = "DENIED Redis is running in protected mode because protected " +
		"mode is enabled and no password is set for the default user. " +
		"In this mode connections are only accepted from the loopback interface. " +
		"If you want to connect from external computers to Redis you " +
		"may adopt one of the following solutions: " +
		"1) Just disable protected mode sending the command " +
		"'CONFIG SET protected-mode no' from the loopback interface " +
		"by connecting to Redis from the same host the server is " +
		"running, however MAKE SURE Redis is not publicly accessible " +
		"from internet if you do so. Use CONFIG REWRITE to make this " +
		"change permanent. " +
		"2) Alternatively you can just disable the protected mode by " +
		"editing the Redis configuration file, and setting the protected " +
		"mode option to 'no', and then restarting the server. " +
		"3) If you started the server manually just for testing, restart " +
		"it with the '--protected-mode no' option. " +
		"4) Setup a an authentication password for the default user. " +
		"NOTE: You only need to do one of the above things in order for " +
		"the server to start accepting connections from the outside."
	// Cluster (docs/cluster.md).
	ErrClusterOff       Error = "ERR This instance has cluster support disabled"
	ErrCrossSlot        Error = "CROSSSLOT Keys in request don't hash to the same slot"
	ErrClusterDown      Error = "CLUSTERDOWN Hash slot not served"
	ErrTryAgain         Error = "TRYAGAIN Multiple keys request during rehashing of slot"
	ErrInvalidSlot      Error = "ERR Invalid slot"
	ErrInvalidSlotCount Error = "ERR Invalid slot or number of keys"
	// CLUSTER HANDOFF's refusals: asked of a replica, or by a node the
	// map does not know (an importing slot is TRYAGAIN).
	ErrHandOffReplica Error = "ERR this node is not a primary"
	ErrHandOffUnknown Error = "ERR unknown node"
)

// ErrExecRefused is EXEC's answer when the checks before any command
// refuse EXEC itself (its arity, the login, the user's permissions, a
// subscribed connection): Redis discards the transaction and names the
// refusal, without its ERR.
func ErrExecRefused(err Error) Error {
	return Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(string(err), "ERR "))
}

// ErrMoved sends the client to the node at addr ("ip:port"), which serves
// slot.
func ErrMoved(slot int, addr string) Error { return Error(fmt.Sprintf("MOVED %d %s", slot, addr)) }

// ErrAsk sends the client to the node at addr for this one request: it
// still decides slot while this node takes it over.
func ErrAsk(slot int, addr string) Error { return Error(fmt.Sprintf("ASK %d %s", slot, addr)) }

// ErrWrongArgs is Redis's arity error for the command (or "parent|sub").
func ErrWrongArgs(name string) Error {
	return Error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", name))
}

// ErrUnknownCommand words the error as Redis 7 does: the name, then the
// arguments quoted, stopping once 128 bytes of them are listed.
func ErrUnknownCommand(args [][]byte) Error {
	b := make([]byte, 0, 128)
	for _, a := range args[1:] {
		if len(b) >= 128 {
			break
		}
		n := min(len(a), 128-len(b))
		b = append(b, '\'')
		b = append(b, a[:n]...)
		b = append(b, '\'', ' ')
	}
	return Error(fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", args[0], b))
}

// ErrUnknownSubcommand is Redis's error for a container's unknown
// subcommand.
func ErrUnknownSubcommand(sub []byte, parent string) Error {
	return Error(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.", sub, ascii.Upper(parent)))
}

// ErrSubcommandSyntax is Redis's error for a subcommand called with
// arguments it does not take (addReplySubcommandSyntaxError).
func ErrSubcommandSyntax(sub []byte, parent string) Error {
	return Error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try %s HELP.", sub, ascii.Upper(parent)))
}

// ErrHelloOption: an option HELLO does not know.
func ErrHelloOption(opt []byte) Error {
	return Error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", opt))
}

// ErrClientInfoChars: a CLIENT SETINFO value with spaces or control bytes.
func ErrClientInfoChars(attr string) Error {
	return Error(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr))
}

// ErrUnrecognizedOption: a CLIENT SETINFO attribute it does not know.
func ErrUnrecognizedOption(opt []byte) Error {
	return Error(fmt.Sprintf("ERR Unrecognized option '%s'", opt))
}

// ErrClientType: CLIENT LIST TYPE with an unknown type.
// ErrSubscribedMode is Redis's answer to a command a RESP2 connection in
// subscribed mode may not run.
func ErrSubscribedMode(name string) Error {
	return Error("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}

// ErrReplconfOption is REPLCONF's answer to an option it does not know.
func ErrReplconfOption(opt []byte) Error {
	return Error(fmt.Sprintf("ERR Unrecognized REPLCONF option: %s", opt))
}

func ErrClientType(t []byte) Error { return Error(fmt.Sprintf("ERR Unknown client type '%s'", t)) }

// ErrConfigUnknown, ErrConfigImmutable and ErrConfigFailed are CONFIG
// SET's refusals: no such parameter, one fixed at start, a bad value.
func ErrConfigUnknown(name []byte) Error {
	return Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", name))
}

func ErrConfigImmutable(name string) Error {
	return Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config", name))
}

// ErrConfigDuplicate refuses a CONFIG SET that names a parameter twice,
// the second as given; nothing is set.
func ErrConfigDuplicate(name []byte) Error {
	return Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - duplicate parameter", name))
}

func ErrConfigFailed(name string, err error) Error {
	return Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, err))
}

// ErrPeriod: an RL.* window or period that does not parse or is out of
// range.
func ErrPeriod(arg []byte) Error {
	return Error(fmt.Sprintf("ERR invalid period '%s': use an integer with ms, s, m, h or d, from 1ms to 3650d", arg))
}

// Reservations (docs/reservations.md).
const ErrSlideReserve Error = "ERR RL.SLIDE takes no RESERVE: its weighted estimate has no future slot to reserve (use RL.LOG, RL.BUCKET or RL.FIXED)"

// ErrReserveKind: RESERVE on an RL.ALL group that cannot wait.
const ErrReserveKind Error = "ERR RESERVE takes a BUCKET, LOG or FIXED group: the other algorithms have no future slot to reserve"

// ErrMaxWait: a RESERVE maxwait that is neither 0 nor an RL.* duration.
func ErrMaxWait(arg []byte) Error {
	return Error(fmt.Sprintf("ERR invalid maxwait '%s': use 0 or an integer with ms, s, m, h or d, up to 3650d", arg))
}

// COMMAND GETKEYS, as Redis 7.0 words them.
const (
	ErrGetKeysCommand Error = "ERR Invalid command specified"
	ErrGetKeysArity   Error = "ERR Invalid number of arguments specified for command"
	ErrGetKeysNone    Error = "ERR The command has no key arguments"
)

// RL.ALL (docs/algorithms.md, "Several limits at once").
const (
	ErrAllSameKey  Error = "ERR the same key twice in one call"
	ErrAllZeroRate Error = "ERR GCRA: zero rates are not supported"
	ErrAllExpire   Error = "ERR GCRA: the expiry computes below -1 ms"
)

// ErrAllAlgorithm: an RL.ALL algorithm name that is none of the five.
func ErrAllAlgorithm(arg []byte) Error {
	return Error(fmt.Sprintf("ERR unknown algorithm '%s': use FIXED, SLIDE, LOG, BUCKET or GCRA", arg))
}

// ErrAllGroup is err as one group of an RL.ALL call met it: its own code
// first (ERR, WRONGTYPE, OOM), so a client classifies it as it would the
// single command's, then the group's number (from 1) and the message.
func ErrAllGroup(group int, err error) Error {
	switch {
	case errors.Is(err, engine.ErrSameKey):
		err = ErrAllSameKey
	case errors.Is(err, engine.ErrZeroRate):
		err = ErrAllZeroRate
	case errors.Is(err, engine.ErrExpire):
		err = ErrAllExpire
	}
	code, msg, _ := strings.Cut(errorReply(err), " ")
	return Error(fmt.Sprintf("%s RL.ALL group %d: %s", code, group, msg))
}

// CL.THROTTLE keeps redis-cell's texts, which carry no "ERR " prefix
// (docs/cl-throttle.md §2.3).
const (
	ErrCellUsage    Error = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	ErrCellZeroRate Error = "Cell error: Store error: Zero rates are not supported"
	ErrCellExpire   Error = "Cell error: Store error: Error while setting key expire"
)

// ErrCellParse: a CL.THROTTLE argument that is not an integer.
func ErrCellParse(arg []byte) Error {
	return Error("Cell error: Store error: Couldn't parse as integer: " + string(arg))
}

// ErrCellUTF8: a CL.THROTTLE argument that is not UTF-8, with the message
// Rust's decoder gives (utf8Error).
func ErrCellUTF8(msg string) Error { return Error("Cell error: " + msg) }

// errorReply maps an error to its wire text, in one place: sentinel errors
// of lower layers get Redis's (or redis-cell's) wording.
func errorReply(err error) string {
	var e Error
	switch {
	case errors.As(err, &e):
		return string(e)
	case errors.Is(err, engine.ErrWrongType):
		return string(ErrWrongType)
	case errors.Is(err, engine.ErrOOM):
		return string(ErrOOM)
	case errors.Is(err, cluster.ErrNotPrimary):
		return string(ErrHandOffReplica)
	case errors.Is(err, cluster.ErrUnknownNode):
		return string(ErrHandOffUnknown)
	case errors.Is(err, cluster.ErrImporting):
		return string(ErrTryAgain)
	case errors.Is(err, engine.ErrZeroRate):
		return string(ErrCellZeroRate)
	case errors.Is(err, engine.ErrExpire):
		return string(ErrCellExpire)
	}
	return "ERR " + err.Error()
}

// Users and permissions (docs/protocol.md, "Users and permissions"):
// Redis 7.0's texts.
const (
	ErrUserName      Error = "ERR Usernames can't contain spaces or null characters"
	ErrDeleteDefault Error = "ERR The 'default' user cannot be removed"
	// ErrNoACLFile keeps Redis's first sentence; its second points to
	// rlserver's flag (Redis's suggests CONFIG REWRITE, which does not
	// write users here).
	ErrNoACLFile     Error = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then start rlserver with --aclfile FILE, whose users ACL SAVE writes and ACL LOAD reads."
	ErrACLSave       Error = "ERR There was an error trying to save the ACLs. Please check the server logs for more information"
	ErrGenpassBits   Error = "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"
	ErrNoPermKey     Error = "NOPERM this user has no permissions to access one of the keys used as arguments"
	ErrNoPermChannel Error = "NOPERM this user has no permissions to access one of the channels used as arguments"
)

// ErrRequirePassACLFile is why CONFIG SET requirepass is refused with an
// ACL file (ErrConfigFailed words it): the default user's password
// belongs in the file, and a requirepass that CONFIG REWRITE kept would
// stop the next start.
var ErrRequirePassACLFile = errors.New("the default user's password is kept in the ACL file: use ACL SETUSER default and ACL SAVE")

// ErrNoPermCommand refuses a command (or "parent|sub") the user may not
// run.
func ErrNoPermCommand(name string) Error {
	return Error("NOPERM this user has no permissions to run the '" + name + "' command")
}

// ErrNoPerm words a refusal of the rules: at the command's turn, or, for
// a command EXEC runs (inExec), Redis's text for rules that changed since
// it was queued.
func ErrNoPerm(d acl.Denial, name string, inExec bool) Error {
	if inExec {
		why := "no permission to execute the command or subcommand"
		switch d {
		case acl.DeniedKey:
			why = "no permission to touch the specified keys"
		case acl.DeniedChannel:
			why = "no permission to access one of the channels used as arguments"
		}
		return Error("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why)
	}
	switch d {
	case acl.DeniedKey:
		return ErrNoPermKey
	case acl.DeniedChannel:
		return ErrNoPermChannel
	}
	return ErrNoPermCommand(name)
}

// aclReasons are Redis's words for why a rule cannot be applied
// (ACLSetUserStringError), and rlserver's for selectors.
var aclReasons = map[acl.Reason]string{
	acl.UnknownName:     "Unknown command or category name in ACL",
	acl.BadSyntax:       "Syntax error",
	acl.KeyAfterAll:     "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
	acl.ChannelAfterAll: "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
	acl.NoSuchPassword:  "The password you are trying to remove from the user does not exist",
	acl.BadHash:         "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
	acl.FirstArgOfSub:   "Allowing first-arg of a subcommand is not supported",
	acl.Selectors:       "Selectors are not supported",
}

// ErrACLSetUser: a rule of ACL SETUSER that cannot be applied.
func ErrACLSetUser(e *acl.RuleError) Error {
	return Error(fmt.Sprintf("ERR Error in ACL SETUSER modifier '%s': %s", e.Rule, aclReasons[e.Reason]))
}

// ErrUnknownCategory: ACL CAT of a category that does not exist.
func ErrUnknownCategory(cat []byte) Error {
	return Error(fmt.Sprintf("ERR Unknown category '%.128s'", cat))
}

// ErrNoSuchUser: CLIENT KILL USER of a user that does not exist.
func ErrNoSuchUser(name []byte) Error { return Error(fmt.Sprintf("ERR No such user '%s'", name)) }

// ErrDryRunUser and ErrDryRunCommand: ACL DRYRUN of a user or a command
// that does not exist.
func ErrDryRunUser(name []byte) Error { return Error(fmt.Sprintf("ERR User '%s' not found", name)) }

func ErrDryRunCommand(name []byte) Error {
	return Error(fmt.Sprintf("ERR Command '%s' not found", name))
}

// ErrACLOpen: the ACL file cannot be read.
func ErrACLOpen(path string, err error) Error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // Redis's strerror, without Go's "open path: "
	}
	return Error(fmt.Sprintf("ERR Error loading ACLs, opening file '%s': %s", path, err))
}

// ErrACLFile: an ACL file with bad lines, every problem in Redis's words
// (ACLLoadFromFile), then its warning that nothing changed.
func ErrACLFile(e *acl.FileError) Error {
	var b strings.Builder
	for _, p := range e.Problems {
		switch p.Kind {
		case acl.NotUserLine:
			fmt.Fprintf(&b, "%s:%d should start with user keyword followed by the username. ", e.Path, p.Line)
		case acl.BadUserName: // Redis's stray quote kept
			fmt.Fprintf(&b, "'%s:%d: username '%s' contains invalid characters. ", e.Path, p.Line, p.Name)
		case acl.DuplicateUser:
			fmt.Fprintf(&b, "WARNING: Duplicate user '%s' found on line %d. ", p.Name, p.Line)
		case acl.BadRule:
			if p.Rule.Reason == acl.UnknownName {
				fmt.Fprintf(&b, "%s:%d: Error in applying operation '%s': %s. ", e.Path, p.Line, p.Rule.Rule, aclReasons[p.Rule.Reason])
			} else {
				fmt.Fprintf(&b, "%s:%d: %s. ", e.Path, p.Line, aclReasons[p.Rule.Reason])
			}
		}
	}
	b.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	return Error("ERR " + b.String())
}

// ErrTrackingPrefixOverlap is Redis's refusal of a BCAST prefix that
// starts another or is started by it: one the connection has (existing)
// or another given with it.
func ErrTrackingPrefixOverlap(prefix, other string, existing bool) Error {
	if existing {
		return Error(fmt.Sprintf("ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap.", prefix, other))
	}
	return Error(fmt.Sprintf("ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap.", prefix, other))
}
