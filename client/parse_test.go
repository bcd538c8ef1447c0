package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseAllocatesNothing: reading a reply into a Result allocates
// nothing beyond what go-redis allocated for the reply.
func TestParseAllocatesNothing(t *testing.T) {
	v := []any{int64(1), int64(5), int64(0), int64(1500), int64(60000)}
	require.Zero(t, testing.AllocsPerRun(100, func() { parse(v, time.Millisecond) }))
	r, err := parse(v, time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, Result{Allowed: false, Limit: 5, Remaining: 0, RetryAfter: 1500 * time.Millisecond, ResetAfter: time.Minute}, r)
	_, err = parse([]any{int64(1), "x", int64(0), int64(0), int64(0)}, time.Second)
	require.ErrorIs(t, err, ErrReply)
	_, err = parse([]any{int64(1)}, time.Second)
	require.ErrorIs(t, err, ErrReply)
}
