package rls

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/commands"
)

// recorder takes an RL.ALL reply from the node as values, not bytes: the
// integers in order (a nil as 0: a LEASE group's missing token), the
// arrays' sizes in order, or the error. It implements commands.Writer;
// only the parts an RL.ALL reply uses record anything.
type recorder struct {
	ints  []int64
	sizes []int
	err   string
}

var _ commands.Writer = (*recorder)(nil)

func (r *recorder) reset() { r.ints, r.sizes, r.err = r.ints[:0], r.sizes[:0], "" }

func (r *recorder) Proto() int        { return 2 }
func (r *recorder) Simple(string)     {}
func (r *recorder) Error(s string)    { r.err = s }
func (r *recorder) Int(n int64)       { r.ints = append(r.ints, n) }
func (r *recorder) Bulk([]byte)       {}
func (r *recorder) BulkString(string) {}
func (r *recorder) Null()             { r.ints = append(r.ints, 0) }
func (r *recorder) NullArray()        {}
func (r *recorder) Array(n int)       { r.sizes = append(r.sizes, n) }
func (r *recorder) Map(int)           {}
func (r *recorder) Set(int)           {}
func (r *recorder) Verbatim(string)   {}
func (r *recorder) Double(float64)    {}
func (r *recorder) Push(int)          {}

// errReply is a reply that is not RL.ALL's.
var errReply = errors.New("rls: unexpected reply from RL.ALL")

// parseResults reads RL.ALL's per-limit part, given the reply's integers
// v and its arrays' sizes (the whole reply's, the per-limit list's, then
// each limit's): after the six summary integers, five per limit
// (limited, limit, remaining, retry_after_ms, reset_after_ms), and a
// LEASE group's token, which Envoy has no use for. It appends them to
// out.
func parseResults(out []result, v []int64, sizes []int) ([]result, error) {
	if len(v) < 6 || len(sizes) < 2 || sizes[0] != 7 || len(sizes) != 2+sizes[1] {
		return nil, fmt.Errorf("%w: %d integers, arrays %v", errReply, len(v), sizes)
	}
	i := 6
	for _, n := range sizes[2:] {
		if (n != 5 && n != 6) || i+n > len(v) {
			return nil, fmt.Errorf("%w: a limit of %d elements", errReply, n)
		}
		out = append(out, result{limited: v[i] == 1, limit: v[i+1], remaining: v[i+2], retryMs: v[i+3], resetMs: v[i+4]})
		i += n
	}
	if i != len(v) {
		return nil, fmt.Errorf("%w: %d integers", errReply, len(v))
	}
	return out, nil
}
