package server_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestConfigSetIsDocumented: docs/protocol.md names exactly the
// settings CONFIG SET can change, so the list cannot fall behind the
// code.
func TestConfigSetIsDocumented(t *testing.T) {
	s := testserver.Start(t)
	var settable []string
	for _, p := range s.Node.ConfigParams() {
		if p.Set != nil {
			settable = append(settable, p.Name)
		}
	}
	b, err := os.ReadFile("../docs/protocol.md")
	require.NoError(t, err)
	doc := strings.Join(strings.Fields(string(b)), " ") // lines wrap anywhere
	_, rest, ok := strings.Cut(doc, "`CONFIG SET` can change")
	require.True(t, ok, "docs/protocol.md lists what CONFIG SET can change")
	list, _, ok := strings.Cut(rest, "every other setting")
	require.True(t, ok)
	var named []string
	for _, m := range regexp.MustCompile("`([a-z][a-z-]*)`").FindAllStringSubmatch(list, -1) {
		named = append(named, m[1]) // "refused with `--aclfile`" starts with dashes: not a name
	}
	slices.Sort(settable)
	slices.Sort(named)
	require.Equal(t, settable, named)
}
