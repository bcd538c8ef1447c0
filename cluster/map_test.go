package cluster

import (
	"fmt"
	"strings"
	"testing"
)

const (
	idA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idC = "cccccccccccccccccccccccccccccccccccccccc"
	idD = "dddddddddddddddddddddddddddddddddddddddd"
)

// threeShards is a map as an operator writes it: three primaries, one
// replica.
var threeShards = fmt.Sprintf(`%s 127.0.0.1:7001@17001 master - 0 0 1 connected 0-5460
%s 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922
%s 127.0.0.1:7003@17003 myself,master - 0 0 3 connected 10923-16382 16383
%s 127.0.0.1:7004@17004 slave %s 0 0 1 connected
vars currentEpoch 3 lastVoteEpoch 0
`, idA, idB, idC, idD, idA)

func TestParse(t *testing.T) {
	m, err := Parse("nodes.conf", []byte(threeShards))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 4 || m.CurrentEpoch != 3 || m.Assigned() != Slots {
		t.Fatalf("nodes %d, epoch %d, assigned %d", len(m.Nodes), m.CurrentEpoch, m.Assigned())
	}
	for _, tc := range []struct{ slot, owner int }{{0, 0}, {5460, 0}, {5461, 1}, {10922, 1}, {10923, 2}, {16383, 2}} {
		if got := m.Owner(tc.slot); got != tc.owner {
			t.Errorf("Owner(%d) = %d, want %d", tc.slot, got, tc.owner)
		}
	}
	if got := m.Ranges(2); len(got) != 1 || got[0] != (Range{10923, 16383}) {
		t.Errorf("Ranges(2) = %v, want one range 10923-16383", got)
	}
	if got := m.Members(0); len(got) != 2 || got[1] != 3 || m.ShardOf(3) != 0 {
		t.Errorf("Members(0) = %v, ShardOf(3) = %d", got, m.ShardOf(3))
	}
	if d := m.Nodes[3]; d.Primary || d.PrimaryID != idA || d.Addr() != "127.0.0.1:7004" || d.CPort != 17004 {
		t.Errorf("replica parsed as %+v", d)
	}
}

// Each refusal names the file, the line and the reason.
func TestParseRefuses(t *testing.T) {
	line := func(id, addr, flags, primary, slots string) string {
		return strings.TrimSpace(fmt.Sprintf("%s %s %s %s 0 0 1 connected %s", id, addr, flags, primary, slots))
	}
	a := line(idA, "127.0.0.1:7001@17001", "master", "-", "0-100")
	for _, tc := range []struct {
		name, text, want string
	}{
		{"slot twice", a + "\n" + line(idB, "127.0.0.1:7002@17002", "master", "-", "100-200"), "m:2: slot 100 is given twice"},
		{"unknown primary", a + "\n" + line(idB, "127.0.0.1:7002@17002", "slave", idC, ""), "m:2: replica " + idB + " follows unknown node " + idC},
		{"replica of a replica", a + "\n" + line(idB, "127.0.0.1:7002@17002", "slave", idA, "") + "\n" + line(idC, "127.0.0.1:7003@17003", "slave", idB, ""), "m:3: replica " + idC + " follows " + idB + ", itself a replica"},
		{"short line", "# comment\n\n" + idA + " 127.0.0.1:7001@17001 master -", "m:3: a node line has at least 8 fields"},
		{"bad id", line("xyz", "127.0.0.1:7001@17001", "master", "-", "0"), "m:1: node id \"xyz\""},
		{"no bus port", line(idA, "127.0.0.1:7001", "master", "-", "0"), "m:1: address \"127.0.0.1:7001\""},
		{"empty ip", line(idA, ":7001@17001", "master", "-", "0"), "m:1: address"},
		{"bad port", line(idA, "127.0.0.1:0@17001", "master", "-", "0"), "m:1: invalid port"},
		{"slot out of range", line(idA, "127.0.0.1:7001@17001", "master", "-", "0-16384"), "m:1: invalid slot range \"0-16384\""},
		{"reversed range", line(idA, "127.0.0.1:7001@17001", "master", "-", "9-3"), "m:1: invalid slot range"},
		{"importing", line(idA, "127.0.0.1:7001@17001", "master", "-", "[5-<-"+idB+"]"), "m:1: invalid slot range"},
		{"two roles", line(idA, "127.0.0.1:7001@17001", "master,slave", "-", "0"), "m:1: flags \"master,slave\" must name one role"},
		{"no role", line(idA, "127.0.0.1:7001@17001", "myself", "-", "0"), "m:1: flags \"myself\" must name one role"},
		{"unknown flag", line(idA, "127.0.0.1:7001@17001", "master,fail", "-", "0"), "m:1: flag \"fail\""},
		{"replica with slots", a + "\n" + line(idB, "127.0.0.1:7002@17002", "slave", idA, "200"), "m:2: replica " + idB + " has slots"},
		{"id twice", a + "\n" + line(idA, "127.0.0.1:7002@17002", "master", "-", "200"), "m:2: node " + idA + " is given twice (line 1)"},
		{"address twice", a + "\n" + line(idB, "127.0.0.1:7001@17001", "master", "-", "200"), "m:2: address 127.0.0.1:7001 is given twice"},
		{"bad epoch", a + "\nvars currentEpoch x lastVoteEpoch 0", "m:2: invalid currentEpoch \"x\""},
		{"empty", "# nothing\n", "m: no nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m", []byte(tc.text))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
}
