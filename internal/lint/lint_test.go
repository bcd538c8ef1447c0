// Package lint holds tests that keep the project's conventions.
package lint

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesPointOneWay: engine and clock import only the standard
// library (and engine the clock); persist never reaches the wire; nothing
// imports cmd/.
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
		mod + "clock":  {mod + "clock"},
		mod + "engine": {mod + "engine", mod + "clock"},
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
