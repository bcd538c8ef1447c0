package sdsargs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitAsSdssplitargs: lines as Redis 7.0's sdssplitargs splits them
// (redis-cli and redis.conf read the same), and the limits.
func TestSplitAsSdssplitargs(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  error
	}{
		{"", nil, nil},
		{"  \t ", nil, nil},
		{"set a b", []string{"set", "a", "b"}, nil},
		{" \v a\vb \f", []string{"a\vb"}, nil}, // \v and \f separate, but do not end an unquoted argument
		{`"a b" 'c d'`, []string{"a b", "c d"}, nil},
		{`"\x41\x4g\n\r\t\b\a\\\"\q"`, []string{"Ax4g\n\r\t\b\a\\\"q"}, nil}, // \x4g is no hex: x, then 4g
		{`'it\'s' '\n'`, []string{"it's", `\n`}, nil},
		{`a"b c"d`, nil, ErrUnbalanced},
		{`a"b c" d`, []string{"ab c", "d"}, nil},
		{`"open`, nil, ErrUnbalanced},
		{`'open`, nil, ErrUnbalanced},
		{`"a"b`, nil, ErrUnbalanced},
		{"\"a\"\v", []string{"a"}, nil},
		{`""`, []string{""}, nil},
	} {
		buf, bounds, err := Split(nil, nil, []byte(tc.line), 100, 100)
		require.ErrorIs(t, err, tc.err, "%q", tc.line)
		if err != nil {
			continue
		}
		var got []string
		for j := 0; j < len(bounds); j += 2 {
			got = append(got, string(buf[bounds[j]:bounds[j+1]]))
		}
		require.Equal(t, tc.want, got, "%q", tc.line)
	}
	// The limits: three arguments where two may be, five bytes where four.
	_, _, err := Split(nil, nil, []byte("a b c"), 2, 4)
	require.ErrorIs(t, err, ErrTooMany)
	_, _, err = Split(nil, nil, []byte("a abcde"), 2, 4)
	require.ErrorIs(t, err, ErrTooLong)
	_, _, err = Split(nil, nil, []byte("ab abcd"), 2, 4)
	require.NoError(t, err)
}
