package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/internal/ascii"
)

// Rules are one user's state: whether it may log in, with which
// passwords, which commands it may run and which keys and channels they
// may name. A Rules value never changes once built: Apply returns a new
// one, which User.SetRules installs for every connection at once.
type Rules struct {
	on       bool // "on": the user may log in
	nopass   bool // any password logs it in
	sanitize payloadFlag
	// passwords are the SHA-256 digests, in lower-case hex, in the order
	// added (Redis keeps only the digests).
	passwords []string

	allKeys bool // "~*" or "allkeys": every key, however accessed
	keys    []keyPattern

	allChannels bool // "&*" or "allchannels"
	channels    []pattern

	commands commandSet

	// unrestricted: every command, key and channel; the dispatcher
	// checks nothing more (the default user's fast path).
	unrestricted bool
}

// payloadFlag is Redis's sanitize-payload or skip-sanitize-payload,
// kept and shown (rlserver has no RESTORE whose payload they concern).
type payloadFlag uint8

const (
	payloadUnset payloadFlag = iota
	payloadSanitize
	payloadSkip
)

// pattern is a glob pattern as given and as bytes (matched without
// converting).
type pattern struct {
	text string
	b    []byte
}

func newPattern(s string) pattern { return pattern{text: s, b: []byte(s)} }

// keyPattern is a key pattern and the access it grants.
type keyPattern struct {
	pattern
	access Access
}

// Reason is why a rule cannot be applied, one per error Redis's ACL
// SETUSER tells apart (ACLSetUserStringError); the commands package has
// Redis's texts.
type Reason uint8

// The reasons.
const (
	UnknownName     Reason = iota + 1 // no such command or category
	BadSyntax                         // not a rule, or a bad pattern
	KeyAfterAll                       // a key pattern after ~* or allkeys
	ChannelAfterAll                   // a channel pattern after &* or allchannels
	NoSuchPassword                    // <password or !hash of a password the user does not have
	BadHash                           // #hash or !hash that is not 64 lower-case hex digits
	FirstArgOfSub                     // +container|sub|arg: a first argument of a subcommand
	Selectors                         // (...): rlserver has no selectors
)

var reasonNames = map[Reason]string{
	UnknownName: "unknown command or category", BadSyntax: "syntax error",
	KeyAfterAll: "key pattern after all keys", ChannelAfterAll: "channel pattern after all channels",
	NoSuchPassword: "no such password", BadHash: "bad password hash",
	FirstArgOfSub: "first argument of a subcommand", Selectors: "selectors are not supported",
}

func (r Reason) String() string { return reasonNames[r] }

// RuleError is a rule that cannot be applied, and why.
type RuleError struct {
	Rule   string
	Reason Reason
}

func (e *RuleError) Error() string { return fmt.Sprintf("ACL rule %q: %s", e.Rule, e.Reason) }

// NewRules are a new user's rules, as ACL SETUSER creates one: off, no
// password, no commands, keys or channels (Redis 7's
// acl-pubsub-default is resetchannels).
func NewRules(cat *Catalog) *Rules {
	return &Rules{commands: newCommandSet(cat)}
}

// DefaultRules are the default user's rules when nothing configures it:
// "on nopass ~* &* +@all".
func DefaultRules(cat *Catalog) *Rules {
	r, err := NewRules(cat).Apply(cat, "+@all", "~*", "&*", "on", "nopass")
	if err != nil {
		panic(err) // the rules above are valid
	}
	return r
}

// Apply returns r with the rules applied in order (ACL SETUSER's
// arguments). If one fails, it returns that one's error and r stands:
// all of them or none.
func (r *Rules) Apply(cat *Catalog, rules ...string) (*Rules, error) {
	n := r.clone()
	for _, op := range rules {
		if err := n.apply(cat, op); err != nil {
			return nil, err
		}
	}
	n.unrestricted = n.commands.all && n.allKeys && n.allChannels
	return n, nil
}

func (r *Rules) clone() *Rules {
	n := *r
	n.passwords = append([]string(nil), r.passwords...)
	n.keys = append([]keyPattern(nil), r.keys...)
	n.channels = append([]pattern(nil), r.channels...)
	n.commands = r.commands.clone()
	return &n
}

// apply applies one rule (Redis's ACLSetUser and ACLSetSelector).
func (r *Rules) apply(cat *Catalog, op string) *RuleError {
	fail := func(why Reason) *RuleError { return &RuleError{Rule: op, Reason: why} }
	if op == "" {
		return nil
	}
	is := func(word string) bool { return ascii.EqualFold(op, word) }
	switch {
	case is("on"):
		r.on = true
	case is("off"):
		r.on = false
	case is("skip-sanitize-payload"):
		r.sanitize = payloadSkip
	case is("sanitize-payload"):
		r.sanitize = payloadSanitize
	case is("nopass"):
		r.nopass, r.passwords = true, nil
	case is("resetpass"):
		r.nopass, r.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		h := op[1:]
		if op[0] == '>' {
			h = HashPassword(op[1:])
		} else if !validHash(h) {
			return fail(BadHash)
		}
		if !contains(r.passwords, h) {
			r.passwords = append(r.passwords, h)
		}
		r.nopass = false
	case op[0] == '<' || op[0] == '!':
		h := op[1:]
		if op[0] == '<' {
			h = HashPassword(op[1:])
		} else if !validHash(h) {
			return fail(BadHash)
		}
		i := index(r.passwords, h)
		if i < 0 {
			return fail(NoSuchPassword)
		}
		r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
	case op[0] == '(' && op[len(op)-1] == ')':
		return fail(Selectors)
	case is("clearselectors"): // there are none to clear
	case is("reset"):
		r.nopass, r.passwords = false, nil
		r.allKeys, r.keys = false, nil
		r.allChannels, r.channels = false, nil
		r.on = false
		r.sanitize = payloadSanitize
		r.commands.setNone()
	default:
		if why := r.applySelector(cat, op); why != 0 {
			return fail(why)
		}
	}
	return nil
}

// applySelector applies a rule on keys, channels or commands.
func (r *Rules) applySelector(cat *Catalog, op string) Reason {
	is := func(word string) bool { return ascii.EqualFold(op, word) }
	second := byte(0)
	if len(op) > 1 {
		second = op[1]
	}
	switch {
	case is("allkeys") || op == "~*":
		r.allKeys, r.keys = true, nil
	case is("resetkeys"):
		r.allKeys, r.keys = false, nil
	case is("allchannels") || op == "&*":
		r.allChannels, r.channels = true, nil
	case is("resetchannels"):
		r.allChannels, r.channels = false, nil
	case is("allcommands") || is("+@all"):
		r.commands.setAll()
	case is("nocommands") || is("-@all"):
		r.commands.setNone()
	case op[0] == '~' || op[0] == '%':
		if r.allKeys {
			return KeyAfterAll
		}
		access, rest := Read|Write, op[1:]
		if op[0] == '%' {
			access = 0
			i := 1
			for ; i < len(op) && op[i] != '~'; i++ {
				switch c := op[i] | 0x20; {
				case c == 'r' && access&Read == 0:
					access |= Read
				case c == 'w' && access&Write == 0:
					access |= Write
				default:
					return BadSyntax
				}
			}
			if i == len(op) || access == 0 { // %R without ~: not a pattern
				return BadSyntax
			}
			rest = op[i+1:]
		}
		if hasSpaces(rest) {
			return BadSyntax
		}
		for i := range r.keys {
			if r.keys[i].text == rest {
				r.keys[i].access |= access
				return 0
			}
		}
		r.keys = append(r.keys, keyPattern{newPattern(rest), access})
	case op[0] == '&':
		if r.allChannels {
			return ChannelAfterAll
		}
		if hasSpaces(op[1:]) {
			return BadSyntax
		}
		for _, c := range r.channels {
			if c.text == op[1:] {
				return 0
			}
		}
		r.channels = append(r.channels, newPattern(op[1:]))
	case op[0] == '+' && second != '@':
		return r.commands.allow(cat, op[1:])
	case op[0] == '-' && second != '@':
		c, ok := cat.Lookup(op[1:])
		if !ok {
			return UnknownName
		}
		r.commands.change(cat, c.ID, false)
	case (op[0] == '+' || op[0] == '-') && second == '@':
		c, ok := ParseCategory(op[2:])
		if !ok {
			return UnknownName
		}
		r.commands.category(cat, c, op[0] == '+')
	default:
		return BadSyntax
	}
	return 0
}

// HashPassword is a password as users keep it: its SHA-256 digest in
// lower-case hex (ACL LIST shows it after '#').
func HashPassword(pass string) string {
	h := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(h[:])
}

// validHash: 64 lower-case hex digits.
func validHash(h string) bool {
	if len(h) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// hasSpaces: Redis's ACLStringHasSpaces, a C isspace or a NUL byte.
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// ValidName reports whether name can name a user: no spaces or NUL
// bytes.
func ValidName(name string) bool { return !hasSpaces(name) }

func contains(list []string, s string) bool { return index(list, s) >= 0 }

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// On reports whether the user may log in.
func (r *Rules) On() bool { return r.on }

// NoPass reports whether any password logs the user in.
func (r *Rules) NoPass() bool { return r.nopass }

// Unrestricted reports whether the rules allow every command on every
// key and channel: nothing need be checked.
func (r *Rules) Unrestricted() bool { return r.unrestricted }

// AllChannels reports whether the rules allow every channel.
func (r *Rules) AllChannels() bool { return r.allChannels }

// LogsIn reports whether pass logs the user in (Redis's
// ACLCheckUserCredentials): the user is on, and either nopass or pass's
// digest is one of its passwords, compared in constant time.
func (r *Rules) LogsIn(pass []byte) bool {
	if !r.on {
		return false
	}
	if r.nopass {
		return true
	}
	sum := sha256.Sum256(pass)
	var h [sha256.Size * 2]byte
	hex.Encode(h[:], sum[:])
	ok := 0
	for _, p := range r.passwords {
		ok |= subtle.ConstantTimeCompare(h[:], []byte(p))
	}
	return ok == 1
}

// commandSet is which commands rules allow (Redis's selector bitmap):
// a bit per command ID, with Redis's two flags.
type commandSet struct {
	// all: every command, without looking at bits (ALLCOMMANDS); cleared
	// by any command or category taken away.
	all bool
	// future: the set was last made whole by +@all (Redis's reserved
	// bit for commands loaded later); only -@all clears it. ACL LIST
	// starts from +@all when it is set.
	future bool
	bits   []uint64
	// firstArgs are the first arguments allowed of a command that is
	// itself not allowed (+select|0), by ID.
	firstArgs map[int][]string
}

func newCommandSet(cat *Catalog) commandSet {
	return commandSet{bits: make([]uint64, (cat.Len()+63)/64)}
}

func (s commandSet) clone() commandSet {
	s.bits = append([]uint64(nil), s.bits...)
	if s.firstArgs != nil {
		fa := make(map[int][]string, len(s.firstArgs))
		for id, args := range s.firstArgs {
			fa[id] = append([]string(nil), args...)
		}
		s.firstArgs = fa
	}
	return s
}

func (s *commandSet) has(id int) bool { return s.bits[id/64]&(1<<(id%64)) != 0 }

func (s *commandSet) set(id int, v bool) {
	if v {
		s.bits[id/64] |= 1 << (id % 64)
	} else {
		s.bits[id/64] &^= 1 << (id % 64)
		s.all = false
	}
}

func (s *commandSet) setAll() {
	for i := range s.bits {
		s.bits[i] = ^uint64(0)
	}
	s.all, s.future, s.firstArgs = true, true, nil
}

func (s *commandSet) setNone() {
	clear(s.bits)
	s.all, s.future, s.firstArgs = false, false, nil
}

// change allows or denies a command and, for a container, every one of
// its subcommands (Redis's ACLChangeSelectorPerm).
func (s *commandSet) change(cat *Catalog, id int, v bool) {
	s.set(id, v)
	delete(s.firstArgs, id)
	for _, sub := range cat.Command(id).Subcommands {
		s.set(sub, v)
	}
}

// category allows or denies every command and subcommand of cat; a
// container in it takes all its subcommands along, as in Redis.
func (s *commandSet) category(cat *Catalog, c Categories, v bool) {
	for id := 0; id < cat.Len(); id++ {
		if cat.Command(id).Categories&c != 0 {
			s.change(cat, id, v)
		}
	}
}

// allow is "+name": a command, a container's subcommand
// ("config|get"), or the first argument of a command without
// subcommands ("select|0").
func (s *commandSet) allow(cat *Catalog, name string) Reason {
	i := strings.LastIndexByte(name, '|')
	if i < 0 {
		c, ok := cat.Lookup(name)
		if !ok {
			return UnknownName
		}
		s.change(cat, c.ID, true)
		return 0
	}
	c, ok := cat.Lookup(name[:i])
	switch {
	case !ok:
		return UnknownName
	case c.Parent >= 0:
		return FirstArgOfSub
	case i == len(name)-1:
		return BadSyntax
	case len(c.Subcommands) > 0:
		sub, ok := cat.Lookup(name)
		if !ok {
			return UnknownName
		}
		s.change(cat, sub.ID, true)
		return 0
	}
	arg := name[i+1:]
	for _, a := range s.firstArgs[c.ID] {
		if ascii.EqualFold(arg, a) {
			return 0
		}
	}
	if s.firstArgs == nil {
		s.firstArgs = map[int][]string{}
	}
	s.firstArgs[c.ID] = append(s.firstArgs[c.ID], arg)
	return 0
}
