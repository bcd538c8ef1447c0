package commands_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testnode"
	"github.com/rlserver/rlserver/internal/testserver"
)

var rewrite = flag.Bool("rewrite", false, "rewrite transcripts in testdata with the replies received (review the diff)")

// TestTranscripts runs every testdata/*.txt transcript against a fresh real
// server (manual clock), over RESP and in process through the dispatcher
// (the same replies either way).
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	// The RL.* algorithm transcripts live with the engine, which replays
	// them directly; here they run over RESP against the real server.
	rl, _ := filepath.Glob("../engine/testdata/rl/*.txt")
	files = append(files, rl...)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := testserver.Start(t)
			rltest.RunTranscript(t, s.Addr.String(), f, *rewrite)
		})
		if *rewrite {
			continue
		}
		t.Run("local/"+filepath.Base(f), func(t *testing.T) {
			s := testserver.Start(t)
			rltest.RunTranscriptOn(t, func() rltest.Doer { return testnode.NewLocal(t, s.Node) }, f, false)
		})
	}
}
