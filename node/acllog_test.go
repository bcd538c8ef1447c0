package node

import (
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/commands"
	"github.com/stretchr/testify/require"
)

// TestACLLogGroups: a refusal counts in an entry among the ten newest
// that has its reason, context, object and user and is at most a minute
// from it (either way), and moves that entry to the front; any other
// takes a new entry, and past the most kept the oldest go. Each step is
// a refusal (reason "key" unless said), then the log's objects newest
// first with their counts.
func TestACLLogGroups(t *testing.T) {
	key := func(object string, ms int64) commands.ACLLogEntry {
		return commands.ACLLogEntry{Reason: "key", Context: "toplevel", Object: object, Username: "u", Millis: ms}
	}
	type step struct {
		add  commands.ACLLogEntry
		want []string // object:count, newest first
	}
	for _, tc := range []struct {
		name   string
		maxLen int64
		steps  []step
	}{
		{"same within a minute", 10, []step{
			{key("a", 0), []string{"a:1"}},
			{key("a", 60_000), []string{"a:2"}},
			{key("a", 120_001), []string{"a:1", "a:2"}}, // a minute and 1 ms from the entry's last
			{key("a", 60_001), []string{"a:2", "a:2"}},  // earlier than the newest, within its minute
		}},
		{"another field differs", 10, []step{
			{key("a", 0), []string{"a:1"}},
			{commands.ACLLogEntry{Reason: "channel", Context: "toplevel", Object: "a", Username: "u"}, []string{"a:1", "a:1"}},
			{commands.ACLLogEntry{Reason: "key", Context: "multi", Object: "a", Username: "u"}, []string{"a:1", "a:1", "a:1"}},
			{commands.ACLLogEntry{Reason: "key", Context: "toplevel", Object: "a", Username: "v"}, []string{"a:1", "a:1", "a:1", "a:1"}},
			{key("a", 1), []string{"a:2", "a:1", "a:1", "a:1"}},
		}},
		{"moves to the front", 10, []step{
			{key("a", 0), []string{"a:1"}},
			{key("b", 0), []string{"b:1", "a:1"}},
			{key("a", 0), []string{"a:2", "b:1"}},
		}},
		{"only the ten newest", 20, []step{
			{key("old", 0), []string{"old:1"}},
			{key("1", 0), nil}, {key("2", 0), nil}, {key("3", 0), nil}, {key("4", 0), nil}, {key("5", 0), nil},
			{key("6", 0), nil}, {key("7", 0), nil}, {key("8", 0), nil}, {key("9", 0), nil},
			{key("old", 0), []string{"old:2", "9:1", "8:1", "7:1", "6:1", "5:1", "4:1", "3:1", "2:1", "1:1"}}, // tenth newest
			{key("10", 0), nil},
			{key("1", 0), []string{"1:1", "10:1", "old:2", "9:1", "8:1", "7:1", "6:1", "5:1", "4:1", "3:1", "2:1", "1:1"}}, // eleventh
		}},
		{"the oldest go", 2, []step{
			{key("a", 0), nil}, {key("b", 0), nil},
			{key("c", 0), []string{"c:1", "b:1"}},
			{key("b", 0), []string{"b:2", "c:1"}},
		}},
		{"none kept", 0, []step{{key("a", 0), []string{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &aclLog{maxLen: tc.maxLen}
			for i, s := range tc.steps {
				l.add(s.add)
				if s.want == nil {
					continue
				}
				got := []string{}
				for _, e := range l.entries {
					got = append(got, e.Object+":"+strconv.FormatInt(e.Count, 10))
				}
				require.Equal(t, s.want, got, "after step %d", i)
			}
		})
	}
}
