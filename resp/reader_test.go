package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/rlserver/rlserver/configfile"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

func readAll(t *testing.T, in string, oneByte bool) ([]string, error) {
	t.Helper()
	var r io.Reader = strings.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	rd := NewReader(r, 8, 16)
	var out []string
	for {
		args, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		var parts []string
		for _, a := range args {
			parts = append(parts, string(a))
		}
		out = append(out, strings.Join(parts, "|"))
	}
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"multibulk", "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n", []string{"PING|hi"}, ""},
		{"pipeline", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", []string{"PING", "PING"}, ""},
		{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", []string{"ECHO|"}, ""},
		{"zero and negative counts are skipped", "*0\r\n*-1\r\n*1\r\n$1\r\nx\r\n", []string{"x"}, ""},
		{"inline", "PING\r\nset a  b\n", []string{"PING", "set|a|b"}, ""},
		{"inline quotes", "SET \"a b\" 'c d' \"\\x41\\n\"\r\n", []string{"SET|a b|c d|A\n"}, ""},
		{"inline blank line", "\r\n\r\nPING\r\n", []string{"PING"}, ""},
		{"binary bulk", "*1\r\n$3\r\n\x00\r\n\r\n", []string{"\x00\r\n"}, ""},
		{"too many args", "*9\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"bad count", "*x\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"bare LF count", "*1\n$4\r\nPING\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"arg too long", "*1\r\n$17\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"negative bulk", "*1\r\n$-1\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"not a bulk", "*1\r\n:5\r\n", nil, "ERR Protocol error: expected '$', got ':'"},
		{"the terminator is skipped unread, as in Redis", "*1\r\n$1\r\nxyz*1\r\n$1\r\nw\r\n", []string{"x", "w"}, ""},
		{"unbalanced", "SET \"a\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"quote then text", "SET \"a\"b\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"inline too many", "a b c d e f g h i\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"inline arg too long", "aaaaaaaaaaaaaaaaaaaaaaaaa\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"truncated", "*2\r\n$4\r\nPING\r\n", nil, "unexpected EOF"},
		// Lengths as Redis 7.0's string2ll reads them (each answer below
		// is redis-server's; TestProtocolErrorsAsRedis in server asks it).
		{"count with a leading zero", "*01\r\n$4\r\nPING\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count 00", "*00\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count -0", "*-0\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count with a plus", "*+1\r\n$4\r\nPING\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"bulk with a leading zero", "*1\r\n$04\r\nPING\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk 00", "*1\r\n$00\r\n\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk -0", "*1\r\n$-0\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk with a plus", "*1\r\n$+4\r\nPING\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk with a bare CR", "*1\r\n$4\rPING\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk with a bare LF", "*1\r\n$4\nPING\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"two-digit bulk", "*1\r\n$10\r\n0123456789\r\n", []string{"0123456789"}, ""},
		{"bulk over the limit in two digits", "*1\r\n$17\r\n01234567890123456\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"the most negative count is empty", "*-9223372036854775808\r\n*1\r\n$1\r\nx\r\n", []string{"x"}, ""},
		{"a count past int64", "*-9223372036854775809\r\n", nil, "ERR Protocol error: invalid multibulk length"},
	} {
		for _, oneByte := range []bool{false, true} {
			got, err := readAll(t, tc.in, oneByte)
			if tc.err != "" {
				require.Error(t, err, tc.name)
				require.Equal(t, tc.err, err.Error(), tc.name)
				continue
			}
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, got, tc.name)
		}
	}
}

func TestReaderHugeInlineAndHeaders(t *testing.T) {
	_, err := readAll(t, strings.Repeat("a", maxHeaderLine+10), false)
	require.EqualError(t, err, string(errBigInline))
	_, err = readAll(t, "*"+strings.Repeat("1", maxHeaderLine+10), false)
	require.EqualError(t, err, string(errBigMbulkCount))
	_, err = readAll(t, "*1\r\n$"+strings.Repeat("1", maxHeaderLine+10), false)
	require.EqualError(t, err, string(errBigBulkCount))
}

// TestReaderBigArgsReuseBuffer: a large command grows the buffer, which is
// given back once consumed.
func TestReaderBigArgsReuseBuffer(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	var in bytes.Buffer
	in.WriteString("*2\r\n$4\r\nECHO\r\n$102400\r\n" + big + "\r\n")
	in.WriteString("*1\r\n$4\r\nPING\r\n")
	rd := NewReader(&in, 1024, 128<<10)
	args, err := rd.Next()
	require.NoError(t, err)
	require.Equal(t, big, string(args[1]))
	args, err = rd.Next()
	require.NoError(t, err)
	require.Equal(t, "PING", string(args[0]))
	_, err = rd.Next()
	require.ErrorIs(t, err, io.EOF)
	require.LessOrEqual(t, len(rd.buf), initialBuf)
}

// TestShortBulkLenAsAtoi: wherever shortBulkLen reads a header, it reads
// what readLine and atoi read, for every header of one or two bytes
// (followed by anything).
func TestShortBulkLenAsAtoi(t *testing.T) {
	tails := []string{"", "\r", "\r\n", "\r\nabc\r\n", "\n", "0\r\n", "x\r\n"}
	check := func(head string) {
		for _, tail := range tails {
			b := []byte("$" + head + tail)
			size, n := shortBulkLen(b)
			if n == 0 {
				continue
			}
			line, m, err := readLine(b, 1, errBigBulkCount)
			want, ok := atoi(line)
			if err != nil || m != n || !ok || want != size {
				t.Fatalf("%q: shortBulkLen %d, %d; readLine and atoi %d, %d, %v, %v", b, size, n, want, m, ok, err)
			}
		}
	}
	for x := range 1 << 16 {
		check(string([]byte{byte(x)}))
		check(string([]byte{byte(x >> 8), byte(x)}))
	}
	// And it does read the usual headers.
	for _, h := range []string{"$0\r\n\r\n", "$7\r\nabcdefg", "$42\r\n"} {
		if _, n := shortBulkLen([]byte(h + "\r\n")); n == 0 {
			t.Errorf("%q: not read", h)
		}
	}
}

// BenchmarkReader parses pipelined requests: a CL.THROTTLE of six
// arguments and RL.ALL's three limits in sixteen.
func BenchmarkReader(b *testing.B) {
	for _, tc := range []struct{ name, cmd string }{
		{"CL.THROTTLE", "*6\r\n$11\r\nCL.THROTTLE\r\n$8\r\nuser:123\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n$1\r\n1\r\n"},
		{"RL.ALL3", "*16\r\n$6\r\nRL.ALL\r\n$14\r\n{t42}:u:4711:s\r\n$6\r\nBUCKET\r\n$3\r\n100\r\n$3\r\n100\r\n$2\r\n1s\r\n" +
			"$3\r\nAND\r\n$14\r\n{t42}:u:4711:d\r\n$5\r\nFIXED\r\n$7\r\n1000000\r\n$2\r\n1d\r\n" +
			"$3\r\nAND\r\n$5\r\n{t42}\r\n$5\r\nSLIDE\r\n$10\r\n1000000000\r\n$3\r\n60s\r\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			in := bytes.Repeat([]byte(tc.cmd), 64)
			r := bytes.NewReader(in)
			rd := NewReader(r, 1024, 64<<10)
			loggedIn := true
			rd.Unauthenticated = func() bool { return !loggedIn } // asked of RL.ALL's sixteen
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.cmd)))
			for i := 0; i < b.N; i++ {
				if _, err := rd.Next(); err != nil {
					r.Reset(in)
					if _, err := rd.Next(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// chunkReader returns at most n bytes per Read, as a socket might.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(b []byte) (int, error) { return c.r.Read(b[:min(len(b), c.n)]) }

// commandsOf reads every command from in in chunks of chunk bytes; with
// ahead > 0 it calls Lookahead after each Next, stopping it after ahead
// commands, and checks that Lookahead shows exactly what Next returns next.
// The connection must log in until Next has returned login commands.
func commandsOf(t *testing.T, in []byte, chunk, ahead, login int) ([]string, string) {
	rd := NewReader(chunkReader{bytes.NewReader(in), chunk}, 16, 64)
	var out, seen []string
	join := func(args [][]byte) string {
		var b strings.Builder
		for _, a := range args {
			b.WriteString(strconv.Quote(string(a)))
		}
		return b.String()
	}
	rd.Unauthenticated = func() bool { return len(out) < login }
	for len(out) < 10000 {
		args, err := rd.Next()
		if err != nil {
			return out, err.Error()
		}
		cmd := join(args)
		out = append(out, cmd)
		if len(seen) > 0 {
			require.Equal(t, seen[0], cmd, "Next returned another command than Lookahead showed")
			seen = seen[1:]
		}
		if ahead > 0 {
			n := 0
			rd.Lookahead(func(a [][]byte) bool {
				seen = append(seen, join(a))
				n++
				return n < ahead
			})
			require.Equal(t, cmd, join(args), "Lookahead changed the arguments Next returned")
		}
	}
	return out, "too many commands"
}

// FuzzLookahead: a reader that parses ahead returns the same commands and
// the same error as one that does not, however the input is split (reads
// of 1 to 256 bytes) and whenever the connection logs in.
func FuzzLookahead(f *testing.F) {
	f.Add([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\nPING\r\n"), uint8(3), uint8(2), uint8(0))
	// Several complete commands after one that Next returned from the
	// queue: Lookahead must parse them without touching its arguments.
	f.Add([]byte("*1\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\n*1\r\n$1\r\nc\r\n*1\r\n$1\r\nd\r\n*1\r\n$1\r\ne\r\n*1\r\n$1\r\nf\r\n"), uint8(63), uint8(1), uint8(0))
	// Eleven arguments, past the limit of a connection that must log in,
	// after a login (the second command) and before it.
	eleven := "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11)
	f.Add([]byte("*1\r\n$4\r\nAUTH\r\n"+eleven+eleven), uint8(255), uint8(3), uint8(1))
	f.Add([]byte("*1\r\n$4\r\nAUTH\r\n"+eleven+eleven), uint8(255), uint8(3), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, chunk, ahead, login uint8) {
		want, wantErr := commandsOf(t, in, int(chunk)+1, 0, int(login%4))
		got, gotErr := commandsOf(t, in, int(chunk)+1, int(ahead%8)+1, int(login%4))
		require.Equal(t, want, got)
		require.Equal(t, wantErr, gotErr)
	})
}

// TestLookaheadAsksAtNext: a command parsed ahead that is past the limits
// of a connection that must log in is refused or returned by what the
// connection is when Next takes it, not when it was parsed: an AUTH
// before it in the same read lifts the limits, a RESET sets them again.
func TestLookaheadAsksAtNext(t *testing.T) {
	eleven := "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11)
	big := "*1\r\n$16385\r\n" + strings.Repeat("y", 16385) + "\r\n"
	for _, tc := range []struct {
		name, second string
		loggedIn     []bool // after the first command, after the second
		err          ProtocolError
	}{
		{"eleven after a login", eleven, []bool{true}, ""},
		{"eleven after a logout", eleven, []bool{false}, errUnauthMbulk},
		{"a big argument after a login", big, []bool{true}, ""},
		{"a big argument after a logout", big, []bool{false}, errUnauthBulk},
	} {
		for _, ahead := range []bool{false, true} {
			rd := NewReader(strings.NewReader("*1\r\n$4\r\nAUTH\r\n"+tc.second), 16, 64<<10)
			rd.buf = make([]byte, 64<<10) // as an earlier big command grows it: both commands in one read
			in := !tc.loggedIn[0]         // logged in before the first command if it is a logout
			rd.Unauthenticated = func() bool { return !in }
			args, err := rd.Next()
			require.NoError(t, err)
			require.Equal(t, "AUTH", string(args[0]))
			if ahead {
				n := 0
				rd.Lookahead(func([][]byte) bool { n++; return true })
				require.Equal(t, 1, n, "%s: the second command is parsed ahead", tc.name)
			}
			in = tc.loggedIn[0]
			args, err = rd.Next()
			if tc.err != "" {
				require.Equal(t, tc.err, err, "%s, ahead %v", tc.name, ahead)
				continue
			}
			require.NoError(t, err, "%s, ahead %v", tc.name, ahead)
			require.NotEmpty(t, args)
		}
	}
}

// TestWriterInt: Int writes what redcon writes,
// around its edges and for any value.
func TestWriterInt(t *testing.T) {
	vals := []int64{math.MinInt64, math.MinInt64 + 1, -1000, -10, -9, -2, -1, 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, math.MaxInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		vals = append(vals, r.Int64N(2000)-500, int64(r.Uint64()))
	}
	for _, v := range vals {
		w := NewWriter(nil)
		w.Int(v)
		require.Equal(t, string(redcon.AppendInt(nil, v)), string(w.Bytes()), "%d", v)
	}
}

// TestLookaheadKeepsNextsArguments: the arguments Next returned, even the
// last of the commands Lookahead had parsed, stay intact when Lookahead
// then parses the commands after them (the event loop does exactly this
// when a connection resumes after its replies backed up).
func TestLookaheadKeepsNextsArguments(t *testing.T) {
	var in []byte
	for i := 0; i < 6; i++ {
		in = append(in, fmt.Sprintf("*2\r\n$3\r\nGET\r\n$2\r\nk%d\r\n", i)...)
	}
	rd := NewReader(bytes.NewReader(in), 8, 64)
	args, err := rd.Next() // k0, and the read of everything
	require.NoError(t, err)
	require.Equal(t, "k0", string(args[1]))
	n := 0
	rd.Lookahead(func([][]byte) bool { n++; return n < 2 }) // parses k1, k2
	for _, want := range []string{"k1", "k2"} {
		args, err = rd.Next()
		require.NoError(t, err)
		require.Equal(t, want, string(args[1]))
	}
	// args (k2) came from Lookahead's queue, now empty: parse ahead again.
	rd.Lookahead(func([][]byte) bool { return true })
	require.Equal(t, "GET", string(args[0]))
	require.Equal(t, "k2", string(args[1]), "Lookahead overwrote the arguments Next returned")
	for _, want := range []string{"k3", "k4", "k5"} {
		args, err = rd.Next()
		require.NoError(t, err)
		require.Equal(t, want, string(args[1]))
	}
}

// BenchmarkWriterInt writes an RL.ALL reply's 22 integers (three limits,
// one of a day's window in ms).
func BenchmarkWriterInt(b *testing.B) {
	vals := []int64{1, 100, 0, 10, 65492392, 1, 1, 100, 0, 10, 10, 0, 1000000, 999999, -1, 65492392, 0, 1000000, 999999, -1, 92392}
	w := NewWriter(nil)
	b.ReportAllocs()
	for range b.N {
		w.Reset()
		for _, v := range vals {
			w.Int(v)
		}
	}
}

// FuzzInlineAsConfig: an inline request and a configuration file line are
// both split as Redis's sdssplitargs splits them, by one splitter
// (sdsargs.Split) under two readers: this one, with its limits and reused
// buffers, and configfile.SplitArgs, with its comments. Any line splits
// the same way in both, or fails on its quotes in both.
func FuzzInlineAsConfig(f *testing.F) {
	for _, s := range []string{"port 7001", `dir "a b"`, `x "\x41\n\x4"`, `y 'it\'s'`, `"open`, "a\tb  c",
		`"a"b`, `a"b c"`, "a\vb\f", "\v\"a\"\v", `'a\'`, `"a\`} {
		f.Add(s)
	}
	rd := NewReader(nil, 1<<20, 1<<20)
	f.Fuzz(func(t *testing.T, line string) {
		want, wantErr := configfile.SplitArgs(line)
		if wantErr == nil && want == nil && strings.HasPrefix(strings.TrimLeft(line, " \t\r\n\v\f"), "#") {
			return // a comment line, in a file
		}
		args, err := rd.splitArgs([]byte(line))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: inline %v, configuration file %v", line, err, wantErr)
		}
		if err != nil {
			require.Equal(t, errUnbalanced, err, "%q", line)
			return
		}
		got := make([]string, 0, len(args))
		for _, a := range args {
			got = append(got, string(a))
		}
		require.Equal(t, len(want), len(got), "%q: %q against %q", line, got, want)
		for i := range want {
			require.Equal(t, want[i], got[i], "%q", line)
		}
	})
}
