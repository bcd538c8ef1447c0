package resp

import (
	"errors"
	"io"

	"github.com/rlserver/rlserver/internal/redisint"
	"github.com/rlserver/rlserver/internal/sdsargs"
)

// ProtocolError is malformed input. Its text is Redis's reply for it; the
// connection is closed after sending it.
type ProtocolError string

func (e ProtocolError) Error() string { return string(e) }

// Redis's protocol error texts.
const (
	errMultibulkLen  ProtocolError = "ERR Protocol error: invalid multibulk length"
	errBulkLen       ProtocolError = "ERR Protocol error: invalid bulk length"
	errBigMbulkCount ProtocolError = "ERR Protocol error: too big mbulk count string"
	errBigBulkCount  ProtocolError = "ERR Protocol error: too big bulk count string"
	errBigInline     ProtocolError = "ERR Protocol error: too big inline request"
	errUnbalanced    ProtocolError = "ERR Protocol error: unbalanced quotes in request"
	errUnauthMbulk   ProtocolError = "ERR Protocol error: unauthenticated multibulk length"
	errUnauthBulk    ProtocolError = "ERR Protocol error: unauthenticated bulk length"
)

// maxHeaderLine bounds "*N" and "$N" lines and inline requests (Redis's
// PROTO_INLINE_MAX_SIZE).
const maxHeaderLine = 64 << 10

const initialBuf = 16 << 10

// A connection that must still log in may send commands of at most
// unauthMaxArgs arguments of at most unauthMaxArgLen bytes, as in Redis
// 7.0: before a password is checked, no one can make the server buffer a
// large request.
const (
	unauthMaxArgs   = 10
	unauthMaxArgLen = 16 << 10
)

// Reader parses commands from a stream with limits on argument count and
// size. Argument slices returned by Next point into its buffer and are
// valid only until the next call.
type Reader struct {
	rd         io.Reader
	buf        []byte
	start, end int
	args       [][]byte
	// Commands Lookahead parsed (ahead[aheadAt:] not yet returned), with
	// their arguments in pre; the buffer holding them stays in place
	// until Next has returned them all, as it reads only after that.
	pre       [][]byte
	preSpare  [][]byte // the previous pre, which may hold the arguments Next returned last
	ahead     []parsedCmd
	aheadAt   int
	inline    []byte // scratch for unescaped inline arguments
	bounds    []int  // their start and end offsets in inline
	maxArgs   int
	maxArgLen int
	count     int // bytes read since the last TakeCount
	// BeforeRead, if set, runs before each blocking read (idle deadlines).
	BeforeRead func()
	// Unauthenticated, if set, reports whether the connection must still
	// log in. It is asked only about a command past the limits above
	// (unauthMaxArgs), at the moment Next takes it: a command before it
	// in the same read may be the AUTH that lifts them.
	Unauthenticated func() bool
}

// NewReader returns a reader over rd accepting at most maxArgs arguments
// of at most maxArgLen bytes each.
func NewReader(rd io.Reader, maxArgs, maxArgLen int) *Reader {
	return &Reader{rd: rd, buf: make([]byte, initialBuf), maxArgs: maxArgs, maxArgLen: maxArgLen}
}

// TakeCount returns the bytes read since its last call (for INFO stats).
func (r *Reader) TakeCount() int {
	n := r.count
	r.count = 0
	return n
}

// Unparsed returns a copy of the bytes read but not yet returned as
// commands: what a connection handed over (a replica link) must read
// first.
func (r *Reader) Unparsed() []byte { return append([]byte(nil), r.buf[r.start:r.end]...) }

// Buffered reports whether input is waiting to be parsed (so replies can
// wait to be flushed with the next command's).
func (r *Reader) Buffered() int { return r.end - r.start }

// Next returns the next command's arguments. Errors are io errors from the
// stream or a ProtocolError.
func (r *Reader) Next() ([][]byte, error) {
	for r.aheadAt < len(r.ahead) {
		c := r.ahead[r.aheadAt]
		r.aheadAt++
		r.start += c.used
		if c.n > 0 {
			if c.over != "" && r.Unauthenticated() {
				return nil, c.over
			}
			return r.pre[c.at : c.at+c.n : c.at+c.n], nil
		}
	}
	for {
		if r.start < r.end {
			args, need, err := r.parse()
			if err != nil {
				return nil, err
			}
			if args != nil {
				return args, nil
			}
			if need == 0 { // consumed an empty command (blank line, *0)
				continue
			}
			if err := r.fill(need); err != nil {
				return nil, err
			}
			continue
		}
		if err := r.fill(1); err != nil {
			return nil, err
		}
	}
}

// fill reads until at least need more bytes than now are buffered (need is
// a lower bound; the parser asks again if it was not enough), compacting
// or growing the buffer as needed.
func (r *Reader) fill(need int) error {
	if r.start == r.end {
		r.start, r.end = 0, 0
		if len(r.buf) > initialBuf*4 { // give back memory a big command took
			r.buf = make([]byte, initialBuf)
		}
	}
	want := r.end - r.start + need
	if want > len(r.buf) {
		n := max(2*len(r.buf), want)
		nb := make([]byte, n)
		copy(nb, r.buf[r.start:r.end])
		r.buf, r.end, r.start = nb, r.end-r.start, 0
	} else if r.start+want > len(r.buf) {
		copy(r.buf, r.buf[r.start:r.end])
		r.end -= r.start
		r.start = 0
	}
	target := r.end + need
	for r.end < target {
		if r.BeforeRead != nil {
			r.BeforeRead()
		}
		n, err := r.rd.Read(r.buf[r.end:])
		r.end += n
		r.count += n
		if err != nil {
			if n > 0 && r.end >= target {
				return nil
			}
			if errors.Is(err, io.EOF) && r.end > r.start {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if n > 0 {
			return nil // let the parser look; it asks again if it needs more
		}
	}
	return nil
}

// parse tries to take one command from the buffer. It returns the args, or
// nil args and how many more bytes are needed at least (0 when an empty
// command was consumed), or a protocol error.
func (r *Reader) parse() ([][]byte, int, error) {
	b := r.buf[r.start:r.end]
	if b[0] != '*' {
		return r.parseInline(b)
	}
	args, used, need, _, err := r.parseMultibulk(b, r.args[:0], false)
	if args != nil {
		r.args = args
	}
	if args != nil || (err == nil && need == 0) {
		r.start += used
	}
	return args, need, err
}

// parseMultibulk parses the multibulk command at the start of b into args
// (reusing its array). It returns the args and the bytes they took, or nil
// args and how many more bytes are needed at least, or used > 0 with nil
// args for an empty command (*0, *-1), or a protocol error.
//
// A command past the limits of a connection that must still log in is
// refused at its first header past them if r.Unauthenticated says so;
// parsed ahead, it is not asked, and over is the error the command gets if
// the connection must log in when Next takes it.
func (r *Reader) parseMultibulk(b []byte, args [][]byte, ahead bool) (_ [][]byte, used, need int, over ProtocolError, err error) {
	count, n := shortBulkLen(b) // "*N\r\n" reads as "$N\r\n"
	if n == 0 {
		line, m, err := readLine(b, 1, errBigMbulkCount)
		if err != nil || m < 0 {
			return nil, 0, 1, "", err
		}
		var ok bool
		if count, ok = atoi(line); !ok {
			return nil, 0, 0, "", errMultibulkLen
		}
		n = m
	}
	if count > unauthMaxArgs && r.Unauthenticated != nil {
		if ahead {
			over = errUnauthMbulk
		} else if r.Unauthenticated() {
			return nil, 0, 0, "", errUnauthMbulk
		}
	}
	if count > int64(r.maxArgs) {
		return nil, 0, 0, "", errMultibulkLen
	}
	if count <= 0 {
		return nil, n, 0, "", nil
	}
	pos := n
	for i := int64(0); i < count; i++ {
		if pos >= len(b) {
			return nil, 0, 1, "", nil
		}
		if b[pos] != '$' {
			return nil, 0, 0, "", ProtocolError("ERR Protocol error: expected '$', got '" + printable(b[pos]) + "'")
		}
		size, n := shortBulkLen(b[pos:])
		if n == 0 {
			line, m, err := readLine(b[pos:], 1, errBigBulkCount)
			if err != nil {
				return nil, 0, 0, "", err
			}
			if m < 0 {
				return nil, 0, 1, "", nil
			}
			var ok bool
			if size, ok = atoi(line); !ok || size < 0 {
				return nil, 0, 0, "", errBulkLen
			}
			n = m
		}
		if size > unauthMaxArgLen && over == "" && r.Unauthenticated != nil {
			if ahead {
				over = errUnauthBulk
			} else if r.Unauthenticated() {
				return nil, 0, 0, "", errUnauthBulk
			}
		}
		if size > int64(r.maxArgLen) {
			return nil, 0, 0, "", errBulkLen
		}
		pos += n
		if end := pos + int(size) + 2; end > len(b) {
			return nil, 0, end - len(b), "", nil
		}
		// The two bytes after the argument are skipped unread, as Redis
		// skips them: they are CRLF from any client that follows the
		// protocol.
		args = append(args, b[pos:pos+int(size):pos+int(size)])
		pos += int(size) + 2
	}
	return args, pos, 0, over, nil
}

// Lookahead calls fn with each complete command buffered after those Next
// has returned, in order, while fn returns true, and keeps what it parsed:
// Next returns those commands without parsing them again. It stops at the
// first command that is incomplete, inline or malformed (Next parses and
// reports it when it gets there). The arguments are valid only during the
// call. The event loop uses it to prefetch the keys of a pipelined batch.
func (r *Reader) Lookahead(fn func(args [][]byte) bool) {
	if r.aheadAt < len(r.ahead) {
		return // parsed ahead already
	}
	// The arguments Next returned last may be in pre: parse into the
	// other array, so that they stay intact until the next call of Next.
	r.pre, r.preSpare = r.preSpare[:0], r.pre
	r.ahead, r.aheadAt = r.ahead[:0], 0
	for pos := r.start; pos < r.end && r.buf[pos] == '*'; {
		at := len(r.pre)
		args, used, _, over, err := r.parseMultibulk(r.buf[pos:r.end], r.pre, true)
		if err != nil || used == 0 {
			return
		}
		pos += used
		if args == nil { // an empty command, consumed silently
			r.ahead = append(r.ahead, parsedCmd{at: at, used: used})
			continue
		}
		r.pre = args
		r.ahead = append(r.ahead, parsedCmd{at: at, n: len(args) - at, used: used, over: over})
		if !fn(args[at:]) {
			return
		}
	}
}

// parsedCmd is a command Lookahead parsed: its arguments r.pre[at:at+n],
// the bytes it takes in the buffer, and the error it gets if the
// connection must still log in when Next takes it ("" if none).
type parsedCmd struct {
	at, n, used int
	over        ProtocolError
}

// readLine finds "\r\n" in b at or after from. It returns the line without
// its type byte, the bytes consumed including CRLF, or n = -1 when the line
// is not complete yet.
func readLine(b []byte, from int, tooBig ProtocolError) ([]byte, int, error) {
	for i := from; i < len(b); i++ {
		if b[i] == '\n' {
			if i == 0 || b[i-1] != '\r' {
				return b[from : i+1], i + 1, nil // a bare LF: not a number, so the length check fails
			}
			return b[from : i-1], i + 1, nil
		}
		if i > maxHeaderLine {
			return nil, 0, tooBig
		}
	}
	if len(b) > maxHeaderLine {
		return nil, 0, tooBig
	}
	return nil, -1, nil
}

// shortBulkLen reads a header of one or two digits at the start of b
// ("$7\r\n", "$42\r\n", "*3\r\n"; the type byte is not looked at), the
// length of nearly every argument and command: the number and the
// header's bytes, or n = 0 for any other header, which readLine and atoi
// then read (they read these as it does).
func shortBulkLen(b []byte) (size int64, n int) {
	if len(b) < 5 {
		return 0, 0
	}
	d0, d1 := b[1]-'0', b[2]-'0'
	switch {
	case d0 <= 9 && b[2] == '\r' && b[3] == '\n':
		return int64(d0), 4
	case d0-1 <= 8 && d1 <= 9 && b[3] == '\r' && b[4] == '\n': // no leading 0
		return int64(d0)*10 + int64(d1), 5
	}
	return 0, 0
}

// atoi parses a RESP length as Redis's string2ll does (redisint.Parse):
// "+1", "01" and "-0" are not lengths, as in Redis.
func atoi(b []byte) (int64, bool) { return redisint.Parse(b) }

func printable(c byte) string {
	if c < ' ' || c > '~' {
		return "?"
	}
	return string(rune(c))
}

// parseInline takes one inline (telnet) command: a line split into
// arguments as Redis's sdssplitargs does, with "..." (escapes \n \r \t \b
// \a \\ \" \xHH) and '...' (only \' escaped) quoting.
func (r *Reader) parseInline(b []byte) ([][]byte, int, error) {
	nl := -1
	for i, c := range b {
		if c == '\n' {
			nl = i
			break
		}
		if i >= maxHeaderLine {
			return nil, 0, errBigInline
		}
	}
	if nl < 0 {
		if len(b) >= maxHeaderLine {
			return nil, 0, errBigInline
		}
		return nil, 1, nil
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	r.start += nl + 1
	args, err := r.splitArgs(line)
	if err != nil {
		return nil, 0, err
	}
	if len(args) == 0 {
		return nil, 0, nil
	}
	return args, 0, nil
}

// splitArgs splits an inline request (sdsargs.Split) into r's scratch,
// within the reader's limits.
func (r *Reader) splitArgs(line []byte) ([][]byte, error) {
	out, bounds, err := sdsargs.Split(r.inline[:0], r.bounds[:0], line, r.maxArgs, r.maxArgLen)
	switch err {
	case nil:
	case sdsargs.ErrTooMany:
		return nil, errMultibulkLen
	case sdsargs.ErrTooLong:
		return nil, errBulkLen
	default:
		return nil, errUnbalanced
	}
	r.inline, r.bounds = out, bounds
	args := r.args[:0]
	for j := 0; j < len(bounds); j += 2 {
		args = append(args, out[bounds[j]:bounds[j+1]:bounds[j+1]])
	}
	r.args = args
	return args, nil
}
