package resp

import (
	"strconv"

	"github.com/rlserver/rlserver/commands"
	"github.com/tidwall/redcon"
)

// Writer encodes replies into a buffer in the client's protocol version
// (read from the client on every call, so HELLO's own reply is already in
// the new version). It implements commands.Writer.
type Writer struct {
	buf   []byte
	proto func() int
}

var _ commands.Writer = (*Writer)(nil)

// NewWriter returns a writer whose protocol version is given by proto.
func NewWriter(proto func() int) *Writer { return &Writer{proto: proto} }

// Bytes returns the pending output; Reset discards it.
func (w *Writer) Bytes() []byte { return w.buf }

// Reset empties the buffer, keeping its memory unless it grew large.
func (w *Writer) Reset() {
	if cap(w.buf) > 1<<20 {
		w.buf = nil
		return
	}
	w.buf = w.buf[:0]
}

func (w *Writer) Proto() int      { return w.proto() }
func (w *Writer) Simple(s string) { w.buf = redcon.AppendString(w.buf, s) }
func (w *Writer) Error(s string)  { w.buf = redcon.AppendError(w.buf, s) }

// Int writes an integer reply. Limiter replies are mostly small
// non-negative integers (a flag, a limit, a count, seconds) or -1 (no
// wait), written here at once; others by appendInt.
func (w *Writer) Int(n int64) {
	switch {
	case n >= 0 && n < 10:
		w.buf = append(w.buf, ':', byte('0'+n), '\r', '\n')
	case n >= 10 && n < 100:
		w.buf = append(w.buf, ':', byte('0'+n/10), byte('0'+n%10), '\r', '\n')
	case n == -1: // no wait
		w.buf = append(w.buf, ":-1\r\n"...)
	case n >= 100 && n < 1000:
		w.buf = append(w.buf, ':', byte('0'+n/100), byte('0'+n/10%10), byte('0'+n%10), '\r', '\n')
	default:
		w.buf = appendInt(w.buf, n)
	}
}

// digitPairs is "00" to "99": appendInt writes two digits a division.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendInt appends n as an integer reply, ":n\r\n": the digits are made
// right to left in a buffer on the stack, two a division, and the reply
// is appended at once.
func appendInt(b []byte, n int64) []byte {
	var a [24]byte // ':', a sign, 19 digits, CRLF
	i := len(a) - 2
	a[i], a[i+1] = '\r', '\n'
	u := uint64(n)
	if n < 0 {
		u = -u // MinInt64's magnitude too, as a uint64
	}
	for u >= 100 {
		q := u / 100
		r := (u - q*100) * 2
		i -= 2
		a[i], a[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		i -= 2
		a[i], a[i+1] = digitPairs[u*2], digitPairs[u*2+1]
	} else {
		i--
		a[i] = byte('0' + u)
	}
	if n < 0 {
		i--
		a[i] = '-'
	}
	i--
	a[i] = ':'
	return append(b, a[i:]...)
}

func (w *Writer) Bulk(b []byte)       { w.buf = redcon.AppendBulk(w.buf, b) }
func (w *Writer) BulkString(s string) { w.buf = redcon.AppendBulkString(w.buf, s) }
func (w *Writer) Array(n int)         { w.buf = redcon.AppendArray(w.buf, n) }

func (w *Writer) Null() {
	if w.proto() == 3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = redcon.AppendNull(w.buf)
}

func (w *Writer) NullArray() {
	if w.proto() == 3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = append(w.buf, "*-1\r\n"...)
}

func (w *Writer) header(t byte, n int) {
	w.buf = append(w.buf, t)
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
}

func (w *Writer) Map(n int) {
	if w.proto() == 3 {
		w.header('%', n)
		return
	}
	w.Array(2 * n)
}

func (w *Writer) Set(n int) {
	if w.proto() == 3 {
		w.header('~', n)
		return
	}
	w.Array(n)
}

func (w *Writer) Push(n int) {
	if w.proto() == 3 {
		w.header('>', n)
		return
	}
	w.Array(n)
}

func (w *Writer) Double(f float64) {
	if w.proto() == 3 {
		w.buf = append(strconv.AppendFloat(append(w.buf, ','), f, 'g', 17, 64), '\r', '\n')
		return
	}
	w.buf = redcon.AppendBulkString(w.buf, strconv.FormatFloat(f, 'g', 17, 64))
}

func (w *Writer) Verbatim(s string) {
	if w.proto() == 3 {
		w.header('=', len(s)+4)
		w.buf = append(w.buf, "txt:"...)
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '\r', '\n')
		return
	}
	w.BulkString(s)
}
