package commands

import (
	"errors"

	"github.com/rlserver/rlserver/engine"
)

// Error is an error reply; its text is exactly what goes on the wire after
// the '-' (Redis prefixes such as "ERR " or "WRONGTYPE " included).
type Error string

func (e Error) Error() string { return string(e) }

// Redis's own wording for the errors clients match on.
const (
	ErrSyntax        Error = "ERR syntax error"
	ErrNotInteger    Error = "ERR value is not an integer or out of range"
	ErrWrongType     Error = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNoAuth        Error = "NOAUTH Authentication required."
	ErrWrongPass     Error = "WRONGPASS invalid username-password pair or user is disabled."
	ErrAuthNoPass    Error = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrDBIndex       Error = "ERR DB index is out of range"
	ErrNoProto       Error = "NOPROTO unsupported protocol version"
	ErrProtoNotInt   Error = "ERR Protocol version is not an integer or out of range"
	ErrMultiNested   Error = "ERR MULTI calls can not be nested"
	ErrExecNoMulti   Error = "ERR EXEC without MULTI"
	ErrDiscardNoMult Error = "ERR DISCARD without MULTI"
	ErrExecAbort     Error = "EXECABORT Transaction discarded because of previous errors."
	ErrNoSuchClient  Error = "ERR No such client"
	ErrClientName    Error = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrInvalidExpire Error = "ERR invalid expire time in 'set' command"
	ErrKeyTooLong    Error = "ERR Protocol error: key too long"
	ErrNeedManual    Error = "ERR DEBUG CLOCK needs the manual clock (--clock manual)"
	ErrClockBack     Error = "ERR DEBUG CLOCK SET would move the clock backwards"
	ErrClockValue    Error = "ERR DEBUG CLOCK invalid time or duration"
	ErrMaxClients    Error = "ERR max number of clients reached"
	ErrPersistOff    Error = "ERR persistence is disabled (--save-interval 0)"
)

// CL.THROTTLE keeps redis-cell's texts, which carry no "ERR " prefix
// (cl-throttle.md §2.3).
const (
	ErrCellUsage    Error = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	ErrCellZeroRate Error = "Cell error: Store error: Zero rates are not supported"
	ErrCellExpire   Error = "Cell error: Store error: Error while setting key expire"
	cellParsePrefix       = "Cell error: Store error: Couldn't parse as integer: "
)

// errorReply maps an error to its wire text, in one place: sentinel errors
// of lower layers get Redis's (or redis-cell's) wording.
func errorReply(err error) string {
	var e Error
	switch {
	case errors.As(err, &e):
		return string(e)
	case errors.Is(err, engine.ErrWrongType):
		return string(ErrWrongType)
	case errors.Is(err, engine.ErrZeroRate):
		return string(ErrCellZeroRate)
	case errors.Is(err, engine.ErrExpire):
		return string(ErrCellExpire)
	}
	return "ERR " + err.Error()
}
