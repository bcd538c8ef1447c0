package rls

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/commands"
)

// recorder takes an RL.ALL reply from the node as values, not bytes: the
// integers in order, or the error. It implements commands.Writer; only
// the parts an RL.ALL reply uses record anything.
type recorder struct {
	ints []int64
	err  string
}

var _ commands.Writer = (*recorder)(nil)

func (r *recorder) reset() { r.ints, r.err = r.ints[:0], "" }

func (r *recorder) Proto() int        { return 2 }
func (r *recorder) Simple(string)     {}
func (r *recorder) Error(s string)    { r.err = s }
func (r *recorder) Int(n int64)       { r.ints = append(r.ints, n) }
func (r *recorder) Bulk([]byte)       {}
func (r *recorder) BulkString(string) {}
func (r *recorder) Null()             {}
func (r *recorder) NullArray()        {}
func (r *recorder) Array(int)         {}
func (r *recorder) Map(int)           {}
func (r *recorder) Set(int)           {}
func (r *recorder) Verbatim(string)   {}
func (r *recorder) Push(int)          {}

// errReply is a reply that is not RL.ALL's.
var errReply = errors.New("rls: unexpected reply from RL.ALL")

// parseResults reads RL.ALL's per-limit part: after the six summary integers,
// five per limit (limited, limit, remaining, retry_after_ms,
// reset_after_ms).
// parseResults appends them to out.
func parseResults(out []result, v []int64) ([]result, error) {
	if len(v) < 6 || (len(v)-6)%5 != 0 {
		return nil, fmt.Errorf("%w: %d integers", errReply, len(v))
	}
	for i := 6; i < len(v); i += 5 {
		out = append(out, result{limited: v[i] == 1, limit: v[i+1], remaining: v[i+2], retryMs: v[i+3], resetMs: v[i+4]})
	}
	return out, nil
}
