// Package lint holds tests that keep the project's conventions.
package lint

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDependenciesPointOneWay: engine and clock import only the standard
// library and internal/sat (and engine the clock and internal/zigzag),
// internal/zigzag and internal/ascii nothing, cluster only the clock, glob
// only the standard library, acl only glob and internal/ascii; persist
// never reaches the wire; nothing imports cmd/.
func TestDependenciesPointOneWay(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	const mod = "github.com/rlserver/rlserver/"
	for pkg, allowed := range map[string][]string{
		mod + "clock":           {mod + "clock", mod + "internal/sat"},
		mod + "engine":          {mod + "engine", mod + "clock", mod + "internal/sat", mod + "internal/zigzag"},
		mod + "internal/zigzag": {mod + "internal/zigzag"},
		mod + "internal/ascii":  {mod + "internal/ascii"},
		// cluster holds the map and the routing view; the node installs
		// what it carries (Options.Import).
		mod + "cluster": {mod + "cluster", mod + "clock", mod + "internal/sat"},
		// The users' rules are pure: the commands package describes the
		// table to them, the node applies them.
		mod + "acl":  {mod + "acl", mod + "glob", mod + "internal/ascii"},
		mod + "glob": {mod + "glob"},
	} {
		for _, d := range deps(pkg) {
			ok := false
			for _, a := range allowed {
				ok = ok || d == a
			}
			if !ok {
				t.Errorf("%s must import only the standard library and %v, but depends on %s", pkg, allowed, d)
			}
		}
	}
	for _, pkg := range []string{"persist", "engine", "clock", "commands"} {
		for _, d := range deps(mod + pkg) {
			if strings.Contains(d, "redcon") || d == mod+"resp" || d == mod+"server" || strings.HasPrefix(d, mod+"cmd/") {
				t.Errorf("%s must not depend on %s", pkg, d)
			}
		}
	}
	for _, pkg := range []string{"resp", "commands", "engine", "persist", "server", "bench/worstcase"} {
		for _, d := range deps(mod + pkg) {
			if strings.HasPrefix(d, mod+"cmd/") {
				t.Errorf("%s imports %s: nothing imports cmd/", pkg, d)
			}
		}
	}
}

// TestImportRules: the layering the packages' doc.go files state. resp
// reaches the keyspace only through node; only node, replication (for the
// record codec) and the wiring (server, cmd/rlserver) import persist;
// commands never imports node (the node implements commands.Node); node
// never imports the wire or the wiring; replication knows neither the
// commands nor the node; the Envoy front (rls) reaches the keyspace only
// through the node's dispatcher, as a connection does.
func TestImportRules(t *testing.T) {
	const mod = "github.com/rlserver/rlserver/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[strings.TrimPrefix(f[0], mod)] = f[1:]
	}
	forbidden := map[string][]string{
		"resp":        {"engine", "persist"},
		"commands":    {"node", "persist", "resp", "server"},
		"node":        {"resp", "server", "rls"},
		"rls":         {"engine", "persist", "resp", "server", "replication"},
		"engine":      {"persist", "node", "commands"},
		"replication": {"node", "commands", "resp", "server"},
	}
	persistOK := map[string]bool{"node": true, "server": true, "cmd/rlserver": true, "persist": true, "replication": true}
	for pkg, imps := range imports {
		for _, imp := range imps {
			rel, ours := strings.CutPrefix(imp, mod)
			if !ours {
				continue
			}
			for _, f := range forbidden[pkg] {
				if rel == f {
					t.Errorf("%s imports %s", pkg, rel)
				}
			}
			if rel == "persist" && !persistOK[pkg] {
				t.Errorf("%s imports persist: only node and the wiring may", pkg)
			}
		}
	}
	// The test helpers sit on the floors they test: rltest (the wire,
	// rendering, polling, tools) under everything imports no package of
	// ours; testnode sits on node and resp; testserver on server.
	for pkg, allowed := range map[string][]string{
		"internal/rltest":     {},
		"internal/testnode":   {"internal/rltest", "node", "resp", "commands"},
		"internal/testserver": {"internal/rltest", "node", "server"},
	} {
		for _, imp := range imports[pkg] {
			if rel, ours := strings.CutPrefix(imp, mod); ours && !slices.Contains(allowed, rel) {
				t.Errorf("%s imports %s (allowed: %v)", pkg, rel, allowed)
			}
		}
	}
	if len(imports["resp"]) == 0 || len(imports["node"]) == 0 || len(imports["internal/testserver"]) == 0 {
		t.Fatalf("go list found no imports for resp or node: %v", imports)
	}
}

// TestNoPathsOutsideRepository: no source, script or document refers to a
// path outside the repository (a clone has nothing beside it), and every
// docs/*.md a file cites exists.
func TestNoPathsOutsideRepository(t *testing.T) {
	outside := regexp.MustCompile(`\.\./shared|shared/(spec|bench)|/work/`)
	cited := regexp.MustCompile(`docs/[a-z0-9-]+\.md`)
	files := eachLine(t, func(string) bool { return true }, func(f string, i int, line string) {
		if m := outside.FindString(line); m != "" && f != "internal/lint/lint_test.go" {
			t.Errorf("%s:%d refers to %q, outside the repository", f, i, m)
		}
		for _, doc := range cited.FindAllString(line, -1) {
			if _, err := os.Stat(filepath.Join("../..", doc)); err != nil {
				t.Errorf("%s:%d cites %s, which does not exist", f, i, doc)
			}
		}
	}, "*.go", "*.sh", "*.py", "*.md", ".ci/*")
	if files < 20 {
		t.Fatalf("git ls-files found only %d files", files)
	}
}

// TestWordsFoldASCII: words read from the wire, a rule or a config file
// match in ASCII case only, as Redis's strcasecmp, through internal/ascii.
// Unicode's folds and case maps take ſ (U+017F) for s and the Kelvin sign
// (U+212A) for k. rls/config.go is exempt: it reads Envoy's YAML units as
// envoyproxy/ratelimit does (strings.ToUpper).
func TestWordsFoldASCII(t *testing.T) {
	unicode := regexp.MustCompile(`\b(strings|bytes)\.(EqualFold|ToLower|ToUpper|Title)\(`)
	source := func(f string) bool {
		return !strings.HasSuffix(f, "_test.go") && !strings.HasPrefix(f, "internal/ascii/") && f != "rls/config.go"
	}
	files := eachLine(t, source, func(f string, i int, line string) {
		if m := unicode.FindString(line); m != "" {
			t.Errorf("%s:%d uses %s: use internal/ascii (EqualFold, Lower, Upper)", f, i, strings.TrimSuffix(m, "("))
		}
	}, "*.go")
	if files < 20 {
		t.Fatalf("git ls-files found only %d sources", files)
	}
}

// eachLine calls fn with each line (numbered from 1) of the files git
// tracks that match patterns and that take, and returns how many files
// it read. Outside a git checkout it skips the test.
func eachLine(t *testing.T, take func(file string) bool, fn func(file string, n int, line string), patterns ...string) int {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", "../..", "ls-files"}, patterns...)...).Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	files := 0
	for _, f := range strings.Fields(string(out)) {
		if !take(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		files++
		for i, line := range strings.Split(string(b), "\n") {
			fn(f, i+1, line)
		}
	}
	return files
}
