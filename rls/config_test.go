package rls_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/rls"
	"github.com/stretchr/testify/require"
)

// TestBadFiles: every file of testdata/bad is refused with upstream's
// text for its fault, after the file's name (the "# error:" lines at its
// top, joined by newlines).
func TestBadFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			var want []string
			for _, l := range strings.Split(string(b), "\n") {
				if w, ok := strings.CutPrefix(l, "# error: "); ok {
					want = append(want, w)
				}
			}
			require.NotEmpty(t, want, "the file says which error it wants")
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), b, 0o644))
			_, err = rls.LoadDir(dir)
			require.EqualError(t, err, filepath.Join(dir, "config.yaml")+": "+strings.Join(want, "\n"))
		})
	}
}

// TestDuplicateDomain: two files naming one domain are refused (upstream
// without MERGE_DOMAIN_CONFIG), naming the second.
func TestDuplicateDomain(t *testing.T) {
	_, err := rls.Parse([]string{"a", "b"}, map[string]string{"a": "domain: d\n", "b": "domain: d\n"})
	require.EqualError(t, err, "b: duplicate domain 'd' in config file")
}

// TestLookup: which rule a descriptor lands on, and the counter and stats
// keys it gets, over testdata/basic.
func TestLookup(t *testing.T) {
	c, err := rls.LoadDir("testdata/basic")
	require.NoError(t, err)
	e := func(kv ...string) []rls.Entry {
		var out []rls.Entry
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, rls.Entry{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		entries []rls.Entry
		rule    string // the rule's stats key; "" for none
		stats   string
		counter string
	}{
		{"exact value wins over the key", e("key1", "value1"), "basic.key1_value1", "basic.key1_value1", "key1_value1"},
		{"the key alone is the default", e("key1", "other"), "basic.key1", "basic.key1", "key1_other"},
		{"deeper: a rule on the last entry only", e("key2", "x"), "", "", ""},
		{"nested default", e("key2", "x", "subkey2", "y"), "basic.key2.subkey2", "basic.key2.subkey2", "key2_x.subkey2_y"},
		{"nested exact", e("key2", "x", "subkey2", "fast"), "basic.key2.subkey2_fast", "basic.key2.subkey2_fast", "key2_x.subkey2_fast"},
		{"more entries than the tree", e("key1", "value1", "extra", "z"), "", "", ""},
		{"wildcard: each value its own counter", e("path", "/files/a"), "basic.path_/files/*", "basic.path_/files/*", "path_/files/a"},
		{"share_threshold: one counter for all", e("shared", "/img/a"), "basic.shared_/img/*", "basic.shared_/img/*", "shared_/img/*"},
		{"value_to_metric", e("client", "acme"), "basic.client", "basic.client_acme", "client_acme"},
		{"detailed_metric", e("detailed", "v1"), "basic.detailed", "basic.detailed_v1", "detailed_v1"},
		{"unknown key", e("nope", "x"), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := c.Lookup("basic", tc.entries)
			if tc.rule == "" {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.rule, m.Rule.StatsKey)
			require.Equal(t, tc.stats, m.StatsKey)
			require.Equal(t, tc.counter, string(m.AppendCounter(nil, tc.entries)))
		})
	}
	_, ok := c.Lookup("other", e("key1", "value1"))
	require.False(t, ok, "unknown domain")

	// Upstream's value_to_metric cases.
	for _, tc := range []struct {
		entries []rls.Entry
		stats   string
	}{
		{e("k1", "X", "k2", "Y", "k3", "Z"), "metrics.k1.k2_Y.k3"},
		{e("route", "", "http_method", "GET", "subject_id", "123"), "metrics.route.http_method_GET.subject_id"},
		{e("wild", "foo1"), "metrics.wild_foo1"},
	} {
		m, ok := c.Lookup("metrics", tc.entries)
		require.True(t, ok, tc.stats)
		require.Equal(t, tc.stats, m.StatsKey)
	}
}

// FuzzConfig: any file is loaded or refused with a ConfigError, never a
// panic; a loaded one answers lookups.
func FuzzConfig(f *testing.F) {
	for _, g := range []string{"testdata/basic/*.yaml", "testdata/bad/*.yaml", "testdata/e2e/*.yaml"} {
		files, _ := filepath.Glob(g)
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(b), "key1", "value1")
		}
	}
	f.Fuzz(func(t *testing.T, content, k, v string) {
		c, err := rls.Parse([]string{"f.yaml"}, map[string]string{"f.yaml": content})
		if err != nil {
			var ce rls.ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "f.yaml: ") {
				t.Fatalf("not a ConfigError naming the file: %v", err)
			}
			return
		}
		for _, d := range c.Domains() {
			m, ok := c.Lookup(d, []rls.Entry{{Key: k, Value: v}, {Key: v, Value: k}})
			if ok && m.Rule == nil {
				t.Fatal("a match without a rule")
			}
		}
	})
}
