package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireToolsEnv is rltest.RequireToolsEnv: CI sets it so that a missing
// external tool fails the test instead of skipping it. It is repeated
// here, not imported: internal/rltest brings in the server, the commands
// and Pebble, which the engine's tests must not depend on.
const requireToolsEnv = "RLSERVER_REQUIRE_TOOLS"

// python3 returns the path of python3, as rltest.Tool does for redis-cli:
// when it is missing the test is skipped with a message, or fails if
// RLSERVER_REQUIRE_TOOLS=1.
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err == nil {
		return p
	}
	msg := "python3 not found: install Python 3 (apt-get install python3) to run this test"
	if os.Getenv(requireToolsEnv) == "1" {
		t.Fatalf("%s (%s=1 makes this a failure)", msg, requireToolsEnv)
	}
	t.Skip(msg)
	return ""
}

// TestGenMatchesTranscripts runs the transcripts' generator,
// testdata/rl/gen.py (an independent oracle; its random scenarios are
// seeded, so it is deterministic), into a temporary directory and fails if
// any file it writes differs from the committed one: the transcripts the
// engine and the server replay are the generator's, not hand edits. gen.py
// also replays what it wrote through check.py, its independent checker.
func TestGenMatchesTranscripts(t *testing.T) {
	py := python3(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "rl", "gen.py"), "--out", out)
	// A fixed string hash seed, and no __pycache__ left in testdata.
	cmd.Env = append(os.Environ(), "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1")
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 testdata/rl/gen.py --out %s: %v\n%s", out, err, output)
	}
	generated, err := filepath.Glob(filepath.Join(out, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) == 0 {
		t.Fatalf("gen.py wrote no transcripts\n%s", output)
	}
	for _, g := range generated {
		name := filepath.Base(g)
		got, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", "rl", name))
		if err != nil {
			t.Errorf("%s: generated but not committed: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/rl/%s differs from what gen.py generates (rerun python3 engine/testdata/rl/gen.py): %s",
				name, firstDifference(string(want), string(got)))
		}
	}
}

// firstDifference describes the first line where committed and generated
// differ.
func firstDifference(committed, generated string) string {
	c, g := strings.Split(committed, "\n"), strings.Split(generated, "\n")
	line := func(ls []string, i int) string {
		if i < len(ls) {
			return strconv.Quote(ls[i])
		}
		return "(end of file)"
	}
	for i := 0; i < len(c) || i < len(g); i++ {
		if i >= len(c) || i >= len(g) || c[i] != g[i] {
			return fmt.Sprintf("line %d\n  committed: %s\n  generated: %s", i+1, line(c, i), line(g, i))
		}
	}
	return "same lines" // not reached when the bytes differ
}
