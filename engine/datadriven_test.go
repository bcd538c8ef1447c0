package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/clock"
)

// TestDataDriven replays the RL.* transcripts in testdata/rl directly on
// the engine (the same files run over RESP against the real server in the
// commands package). It understands the subset of commands they use.
func TestDataDriven(t *testing.T) {
	files, _ := filepath.Glob("testdata/rl/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata/rl")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(data), "\n")
			e := New(4)
			now := int64(1_700_000_000_000_000_000)
			for i := 0; i < len(lines); i++ {
				if !strings.HasPrefix(lines[i], "> ") {
					continue
				}
				if i+1 >= len(lines) {
					t.Fatalf("%s:%d: command without reply", f, i+1)
				}
				got, err := engineDo(e.Store(), &now, strings.Fields(lines[i][2:]))
				if err != nil {
					t.Fatalf("%s:%d: %v", f, i+1, err)
				}
				if want := lines[i+1]; got != want {
					t.Errorf("%s:%d: %s\n  got:  %s\n  want: %s", f, i+1, lines[i][2:], got, want)
				}
				i++
			}
		})
	}
}

var kinds = map[string]Kind{"RL.FIXED": KindFixed, "RL.LOG": KindLog, "RL.SLIDE": KindSlide, "RL.BUCKET": KindBucket}

func engineDo(st Store, now *int64, args []string) (string, error) {
	name := strings.ToUpper(args[0])
	atoi := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("bad integer %q", s))
		}
		return n
	}
	wrong := "-WRONGTYPE Operation against a key holding the wrong kind of value"
	switch {
	case name == "DEBUG" && len(args) == 4:
		d, err := clock.ParseDuration(args[3])
		if err != nil {
			return "", err
		}
		switch strings.ToUpper(args[2]) {
		case "SET":
			if d < *now {
				return "", fmt.Errorf("clock set backwards")
			}
			*now = d
		case "ADVANCE":
			*now += d
		}
		return "+OK", nil
	case name == "PTTL":
		return strconv.FormatInt(redisPTTL(st.Life([]byte(args[1]), *now)), 10), nil
	case name == "TYPE":
		return "+" + redisType(st.Type([]byte(args[1]), *now)), nil
	case name == "EXISTS":
		if st.Type([]byte(args[1]), *now) == KindNone {
			return "0", nil
		}
		return "1", nil
	case name == "CL.THROTTLE":
		g, err := NewGCRA(atoi(args[2]), atoi(args[3]), atoi(args[4]))
		if err != nil {
			return "", err
		}
		q := int64(1)
		if len(args) > 5 {
			q = atoi(args[5])
		}
		r, err := st.Throttle([]byte(args[1]), g, q, *now)
		if err == ErrWrongType {
			return wrong, nil
		} else if err != nil {
			return "", err
		}
		return fmt.Sprintf("[%d %d %d %d %d]", b2i(r.Limited), r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter), nil
	case kinds[name] != KindNone:
		kind := kinds[name]
		p := Params{Cost: 1, Limit: atoi(args[2])}
		rest := args[3:]
		if kind == KindBucket {
			p.Rate = atoi(args[3])
			rest = args[4:]
		}
		w, err := clock.ParsePeriod([]byte(rest[0]))
		if err != nil {
			return "", err
		}
		p.Window = w
		if len(rest) == 3 && strings.EqualFold(rest[1], "COST") {
			p.Cost = atoi(rest[2])
		} else if len(rest) != 1 {
			return "", fmt.Errorf("bad arguments %q", args)
		}
		r, err := st.Limit(kind, []byte(args[1]), p, *now)
		if err == ErrWrongType {
			return wrong, nil
		} else if err != nil {
			return "", err
		}
		retry, reset := r.Millis()
		return fmt.Sprintf("[%d %d %d %d %d]", b2i(r.Limited), r.Limit, r.Remaining, retry, reset), nil
	}
	return "", fmt.Errorf("engine runner does not know %q", args)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// redisPTTL and redisType answer as the commands layer does (Redis's
// conventions: -2 missing, -1 no expiry; CL.THROTTLE keys are strings).
func redisPTTL(l Life) int64 {
	switch {
	case !l.Found:
		return -2
	case l.Forever:
		return -1
	}
	return l.Ms
}

func redisType(k Kind) string {
	if k == KindThrottle {
		return "string"
	}
	return k.Name()
}
