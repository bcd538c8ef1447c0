package rltest

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// InfoText is the text of INFO section (a verbatim or bulk reply, which
// the renderers quote).
func InfoText(t testing.TB, c Doer, section string) string {
	t.Helper()
	r := c.Do("INFO", section)
	txt, err := strconv.Unquote(strings.TrimPrefix(r, "="))
	if err != nil {
		t.Fatalf("INFO %s reply %s: %v", section, r, err)
	}
	return txt
}

// InfoFields parses an INFO text into its fields.
func InfoFields(txt string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(txt, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			m[k] = v
		}
	}
	return m
}

// Info returns the fields of one INFO section.
func Info(t testing.TB, c Doer, section string) map[string]string {
	t.Helper()
	return InfoFields(InfoText(t, c, section))
}

// InfoValue is the integer field of an INFO text.
func InfoValue(t testing.TB, txt, field string) int64 {
	t.Helper()
	v, ok := InfoFields(txt)[field]
	if !ok {
		t.Fatalf("INFO has no %s:\n%s", field, txt)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s:%s: %v", field, v, err)
	}
	return n
}

// InfoInt reads an integer field of an INFO section.
func InfoInt(t testing.TB, c Doer, section, field string) int64 {
	t.Helper()
	return InfoValue(t, InfoText(t, c, section), field)
}

// WaitFor polls cond every 20 ms until it holds or d passes, then fails
// naming what was awaited and the state cond last described. Tests wait
// for state with it, never with a sleep.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", d, what, state)
		}
		<-tick.C // the polling interval, not a wait for state
	}
}

// Eventually is WaitFor for a condition with no state to report.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitFor(t, d, what, func() (bool, string) { return cond(), "" })
}

// WaitLinkUp waits until the replica c reports its link to its primary up
// (INFO replication master_link_status).
func WaitLinkUp(t testing.TB, c Doer) {
	t.Helper()
	WaitFor(t, 20*time.Second, "the replica's link up", func() (bool, string) {
		f := Info(t, c, "replication")
		return f["master_link_status"] == "up", fmt.Sprint(f)
	})
}

// Ask dials addr, sends one command, reads its reply and closes. A
// refused dial, a closed connection or a timeout is an error, not a test
// failure: a poll takes it as "not yet" (Sentinel ends every
// reconfiguration with CLIENT KILL TYPE normal, which may land between a
// poll's dial and its reply, as it does with Redis).
func Ask(addr string, args ...string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(Encode(args...)); err != nil {
		return "", err
	}
	return ReadReply(bufio.NewReader(nc))
}

// AskInfo is Ask for one INFO section, parsed into its fields.
func AskInfo(addr, section string) (map[string]string, error) {
	r, err := Ask(addr, "INFO", section)
	if err != nil {
		return nil, err
	}
	txt, err := strconv.Unquote(strings.TrimPrefix(r, "="))
	if err != nil {
		return nil, fmt.Errorf("INFO %s reply %s: %w", section, r, err)
	}
	return InfoFields(txt), nil
}

// StackCount counts the goroutines whose stacks have a frame of fn, a
// function's full name ending in "(" (so that its closures and "created
// by" lines do not count): how a test sees that a goroutine waits where
// it should.
func StackCount(fn string) int {
	buf := make([]byte, 4<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), fn)
}
