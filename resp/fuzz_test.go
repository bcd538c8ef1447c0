package resp_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/resp"
)

type pipe struct {
	io.Reader
	io.Writer
}

// FuzzRequest feeds arbitrary bytes through the whole request path (parser,
// dispatcher, every command, the engine) and requires that nothing panics
// and that the output is a well-formed sequence of RESP replies.
func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		"*1\r\n$4\r\nPING\r\n",
		"*6\r\n$11\r\nCL.THROTTLE\r\n$1\r\nk\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n$1\r\n1\r\n",
		"CL.THROTTLE k 0 1 10\r\nCL.THROTTLE k 0 1 10 0\r\nGET k\r\nPTTL k\r\n",
		"MULTI\r\nCL.THROTTLE t 1 1 1\r\nSET t 5 PX 10\r\nEXEC\r\n",
		"HELLO 3\r\nCOMMAND INFO cl.throttle get\r\nCONFIG GET *\r\nCLIENT LIST\r\n",
		"SET a 18446744073709551615\r\nCL.THROTTLE a 9223372036854775807 -1 -9223372036854775808 9223372036854775807\r\n",
		"DEBUG CLOCK ADVANCE 1500ns\r\nSCAN 0 MATCH a* COUNT 5 TYPE string\r\nKEYS [a-\\\r\n",
		"*2\r\n$4\r\nECHO\r\n$-5\r\n",
		"SET \"a\\x\" 'b\r\n",
		"*3\r\n$3\r\nDEL\r\n$1\r\na\r\n",
	} {
		f.Add([]byte(seed))
	}
	cfg := node.Config{Shards: 4, ClockMode: "manual", MaxClients: 100, Limits: node.Limits{MaxArgs: 64, MaxArgLen: 4096, MaxKeyLen: 256, MaxOutput: 1 << 20}}
	srv := node.New(cfg, engine.New(4), clock.NewManual(rltest.StartNs), node.Options{})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := srv.NewClient("fuzz:1", "fuzz:2", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.RemoveClient(c)
		var out bytes.Buffer
		resp.Serve(srv, c, pipe{bytes.NewReader(in), &out}, nil)
		rd := bufio.NewReader(&out)
		for {
			if _, err := rltest.ReadReply(rd); err != nil {
				if errors.Is(err, io.EOF) && rd.Buffered() == 0 {
					return
				}
				t.Fatalf("malformed output after input %q: %v\noutput: %q", in, err, out.String())
			}
		}
	})
}
