package rltest

import (
	"bytes"
	"strconv"
	"sync"
)

// Argv is a command's arguments as the dispatcher takes them.
func Argv(args ...string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}

// Discard is a reply writer (commands.Writer) that drops replies, so a
// benchmark measures the dispatcher, the handler and the engine only.
type Discard struct{}

func (Discard) Proto() int        { return 2 }
func (Discard) Simple(string)     {}
func (Discard) Error(string)      {}
func (Discard) Int(int64)         {}
func (Discard) Bulk([]byte)       {}
func (Discard) BulkString(string) {}
func (Discard) Null()             {}
func (Discard) NullArray()        {}
func (Discard) Array(int)         {}
func (Discard) Map(int)           {}
func (Discard) Set(int)           {}
func (Discard) Verbatim(string)   {}
func (Discard) Double(float64)    {}
func (Discard) Push(int)          {}

// Recorder is a reply writer (commands.Writer) that keeps the replies
// written since its last Reset, flattened into space-separated RESP-typed
// tokens ("*5 :0 :16 :15 :-1 :2", "+PONG"), and counts error replies.
// Once its buffer has grown, recording allocates nothing.
type Recorder struct {
	Buf    []byte
	Errors int
	proto  int
}

// NewRecorder returns a recorder for protocol version proto (2 or 3).
func NewRecorder(proto int) *Recorder { return &Recorder{Buf: make([]byte, 0, 256), proto: proto} }

// Reset forgets the recorded replies (not the error count).
func (r *Recorder) Reset() { r.Buf = r.Buf[:0] }

// String is the recorded replies.
func (r *Recorder) String() string { return string(r.Buf) }

func (r *Recorder) token(prefix byte, s string) {
	if len(r.Buf) > 0 {
		r.Buf = append(r.Buf, ' ')
	}
	r.Buf = append(append(r.Buf, prefix), s...)
}

func (r *Recorder) count(prefix byte, n int64) {
	r.token(prefix, "")
	r.Buf = strconv.AppendInt(r.Buf, n, 10)
}

func (r *Recorder) Proto() int {
	if r.proto == 0 {
		return 2
	}
	return r.proto
}
func (r *Recorder) Simple(s string)     { r.token('+', s) }
func (r *Recorder) Error(s string)      { r.Errors++; r.token('-', s) }
func (r *Recorder) Int(n int64)         { r.count(':', n) }
func (r *Recorder) Bulk(b []byte)       { r.token('$', string(b)) }
func (r *Recorder) BulkString(s string) { r.token('$', s) }
func (r *Recorder) Null()               { r.token('$', "-1") }
func (r *Recorder) NullArray()          { r.token('*', "-1") }
func (r *Recorder) Array(n int)         { r.count('*', int64(n)) }
func (r *Recorder) Map(n int)           { r.count('%', int64(n)) }
func (r *Recorder) Set(n int)           { r.count('~', int64(n)) }
func (r *Recorder) Verbatim(s string)   { r.token('=', s) }
func (r *Recorder) Double(f float64)    { r.token(',', strconv.FormatFloat(f, 'g', 17, 64)) }
func (r *Recorder) Push(n int)          { r.count('>', int64(n)) }

// SyncBuffer is a log destination safe for the goroutines that write it
// and the test that reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
