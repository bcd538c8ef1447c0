package rltest

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers for tests that compare two nodes' limits key by key (a primary
// and its replica, a node before and after a restart).

// Pipeline sends every command at once and returns the replies in order.
func Pipeline(t testing.TB, c *Conn, cmds [][]string) []string {
	t.Helper()
	var b []byte
	for _, cmd := range cmds {
		b = append(b, Encode(cmd...)...)
	}
	c.Send(b)
	out := make([]string, len(cmds))
	for i := range cmds {
		r, err := c.Read()
		require.NoError(t, err, "reply %d of %d", i, len(cmds))
		out[i] = r
	}
	return out
}

// Limiter is one of the five limiters as a test drives it: a key prefix,
// a request that spends one unit (of an allowance of two) and its peek.
type Limiter struct {
	Prefix     string
	Take, Peek func(key string) []string
}

// Limiters are the five, one Limiter each.
var Limiters = []Limiter{
	{"c", func(k string) []string { return []string{"CL.THROTTLE", k, "1", "2", "60", "1"} },
		func(k string) []string { return []string{"CL.THROTTLE", k, "1", "2", "60", "0"} }},
	{"f", func(k string) []string { return []string{"RL.FIXED", k, "2", "1m"} },
		func(k string) []string { return []string{"RL.FIXED", k, "2", "1m", "COST", "0"} }},
	{"l", func(k string) []string { return []string{"RL.LOG", k, "2", "1m"} },
		func(k string) []string { return []string{"RL.LOG", k, "2", "1m", "COST", "0"} }},
	{"s", func(k string) []string { return []string{"RL.SLIDE", k, "2", "1m"} },
		func(k string) []string { return []string{"RL.SLIDE", k, "2", "1m", "COST", "0"} }},
	{"b", func(k string) []string { return []string{"RL.BUCKET", k, "2", "1", "1m"} },
		func(k string) []string { return []string{"RL.BUCKET", k, "2", "1", "1m", "COST", "0"} }},
}

// Exhaust spends every key's allowance (three requests each, the third
// refused) on c, for keys i in [from, to) of every kind.
func Exhaust(t testing.TB, c *Conn, from, to int) {
	t.Helper()
	var cmds [][]string
	for _, k := range Limiters {
		for i := from; i < to; i++ {
			key := k.Prefix + ":" + strconv.Itoa(i)
			cmds = append(cmds, k.Take(key), k.Take(key), k.Take(key))
		}
	}
	for start := 0; start < len(cmds); start += 3000 {
		Pipeline(t, c, cmds[start:min(start+3000, len(cmds))])
	}
}

// View reads every key of [from, to) of every kind: its peek, GET (the
// CL.THROTTLE keys), PTTL and TYPE.
func View(t testing.TB, c *Conn, from, to int) []string {
	t.Helper()
	var cmds [][]string
	for _, k := range Limiters {
		for i := from; i < to; i++ {
			key := k.Prefix + ":" + strconv.Itoa(i)
			cmds = append(cmds, k.Peek(key), []string{"PTTL", key}, []string{"TYPE", key})
			if k.Prefix == "c" {
				cmds = append(cmds, []string{"GET", key})
			}
		}
	}
	cmds = append(cmds, []string{"DBSIZE"}, []string{"TIME"})
	var out []string
	for start := 0; start < len(cmds); start += 3000 {
		out = append(out, Pipeline(t, c, cmds[start:min(start+3000, len(cmds))])...)
	}
	return out
}

// RequireSame fails on the first entry where got differs from want.
func RequireSame(t testing.TB, want, got []string, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: entry %d: want %s, got %s", what, i, want[i], got[i])
		}
	}
}

// ErrEnded is what WriteFixed returns, wrapped with the cause, when its
// connection ends under it: a write or a read failed.
var ErrEnded = errors.New("the connection ended")

// admitted matches an admitted call of WriteFixed's.
var admitted = regexp.MustCompile(`^\[0 1000000 \d+ -1 \d+\]$`)

// WriteFixed pipelines batches of depth `RL.FIXED <prefix>:<k> 1000000 1h`
// calls, k cycling over 0..keys-1, as fast as the node answers, until a
// batch has a call refused as a replica's (-READONLY). It returns the
// admitted calls by key and how many batches were answered. Every answer
// must be an admission or READONLY, and once a call is refused so must
// every call after it: anything else is an error. If the connection ends
// first, it returns what it counted and an error wrapping ErrEnded. It
// sends on started once after batches are answered, or as it returns
// before: a failover test starts its switch once every writer is busy.
func WriteFixed(c *Conn, prefix string, keys, depth, after int, started chan<- struct{}) (map[string]int, int, error) {
	counts := map[string]int{}
	batches := 0
	defer func() {
		if batches < after {
			started <- struct{}{}
		}
	}()
	var batch []byte
	names := make([]string, depth)
	for ; ; batches++ {
		if batches == after {
			started <- struct{}{}
		}
		batch = batch[:0]
		for j := range depth {
			names[j] = prefix + ":" + strconv.Itoa((batches*depth+j)%keys)
			batch = append(batch, Encode("RL.FIXED", names[j], "1000000", "1h")...)
		}
		if err := c.Write(batch); err != nil {
			return counts, batches, fmt.Errorf("%w: %v", ErrEnded, err)
		}
		refused := 0
		for j := range depth {
			got, err := c.Read()
			switch {
			case err != nil:
				return counts, batches, fmt.Errorf("%w: %v", ErrEnded, err)
			case admitted.MatchString(got) && refused == 0:
				counts[names[j]]++
			case strings.HasPrefix(got, "-READONLY "):
				refused++
			default:
				return counts, batches, fmt.Errorf("call %d of a batch: %q after %d refused", j, got, refused)
			}
		}
		if refused > 0 {
			return counts, batches + 1, nil
		}
	}
}
