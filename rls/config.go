package rls

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"gopkg.in/yaml.v2"
)

// The configuration: envoyproxy/ratelimit's YAML dialect, read as that
// service reads it (docs/envoy.md), with rlserver's two additions,
// `algorithm` and `unit_multiplier`. A directory holds any number of
// files; each names a domain and a tree of descriptors. A file is checked
// twice, as upstream checks it: every map key against the known keys
// (so a misspelt key is an error, not a silently ignored line), then the
// typed structure.

// ConfigError is a configuration that cannot be loaded: the file and the
// cause, in upstream's words ("<file>: <cause>").
type ConfigError string

func (e ConfigError) Error() string { return string(e) }

func configError(file, format string, args ...any) ConfigError {
	return ConfigError(file + ": " + fmt.Sprintf(format, args...))
}

// upstreamKeys are the map keys envoyproxy/ratelimit accepts.
var upstreamKeys = []string{"domain", "key", "value", "descriptors", "rate_limit", "unit", "requests_per_unit",
	"unlimited", "shadow_mode", "quota_mode", "name", "replaces", "detailed_metric", "value_to_metric", "share_threshold"}

// ExtensionKeys are rlserver's additions to the dialect: a file using
// any of them does not load back into envoyproxy/ratelimit.
var ExtensionKeys = []string{"algorithm", "unit_multiplier"}

type yamlReplaces struct {
	Name string
}

type yamlRateLimit struct {
	RequestsPerUnit uint32 `yaml:"requests_per_unit"`
	Unit            string
	Unlimited       bool
	Name            string
	Replaces        []yamlReplaces
	Algorithm       string
	UnitMultiplier  *uint32 `yaml:"unit_multiplier"`
}

type yamlDescriptor struct {
	Key            string
	Value          string
	RateLimit      *yamlRateLimit `yaml:"rate_limit"`
	Descriptors    []yamlDescriptor
	ShadowMode     bool `yaml:"shadow_mode"`
	QuotaMode      bool `yaml:"quota_mode"`
	DetailedMetric bool `yaml:"detailed_metric"`
	ValueToMetric  bool `yaml:"value_to_metric"`
	ShareThreshold bool `yaml:"share_threshold"`
}

type yamlRoot struct {
	Domain      string
	Descriptors []yamlDescriptor
}

// Algorithm is how a rule counts: the RL.ALL group it becomes.
type Algorithm string

// The algorithms a rule may name (`algorithm:`); Fixed is the default,
// as envoyproxy/ratelimit counts.
const (
	Fixed  Algorithm = "fixed"
	Slide  Algorithm = "slide"
	Log    Algorithm = "log"
	Bucket Algorithm = "bucket"
	GCRA   Algorithm = "gcra"
	// Concurrency limits requests in flight: requests_per_unit is how
	// many, the unit (times unit_multiplier) a lease's term. A hit takes
	// a lease (RL.ACQUIRE); a descriptor with is_negative_hits gives as
	// many back (RL.RELEASE ANY), as Envoy's apply_on_stream_done sends
	// at a request's end; a lease never given back ends with its term.
	Concurrency Algorithm = "concurrency"
)

var algorithms = []Algorithm{Fixed, Slide, Log, Bucket, GCRA, Concurrency}

// Rule is one configured rate limit: where it sits in the tree and how
// it counts.
type Rule struct {
	// StatsKey is upstream's stats key: the domain and the path of
	// descriptor entries that leads to the rule ("domain.key_value.key").
	StatsKey string
	// Limit is what the response's current_limit carries.
	Limit     *pb.RateLimitResponse_RateLimit
	Algorithm Algorithm
	// PeriodSec is the unit in seconds times the multiplier.
	PeriodSec      int64
	Unlimited      bool
	ShadowMode     bool
	QuotaMode      bool
	Name           string
	Replaces       []string
	DetailedMetric bool
	// args are its RL.ALL group after the key: the algorithm and its
	// parameters.
	args [][]byte
}

// setArgs computes the rule's RL.ALL group arguments.
func (r *Rule) setArgs() {
	n := strconv.FormatUint(uint64(r.Limit.RequestsPerUnit), 10)
	p := strconv.FormatInt(r.PeriodSec, 10)
	var a []string
	switch r.Algorithm {
	case Bucket:
		a = []string{"BUCKET", n, n, p}
	case GCRA:
		a = []string{"GCRA", strconv.FormatUint(uint64(r.Limit.RequestsPerUnit)-1, 10), n, p}
	case Concurrency:
		a = []string{"LEASE", n, p}
	default:
		a = []string{strings.ToUpper(string(r.Algorithm)), n, p}
	}
	r.args = make([][]byte, len(a))
	for i, x := range a {
		r.args[i] = []byte(x)
	}
}

// level is one level of the descriptor tree.
type level struct {
	children       map[string]*level // by "key_value" or "key"
	rule           *Rule
	wildcards      []string // children keys ending in '*', in file order
	valueToMetric  bool
	shareThreshold bool
}

// Config is a loaded configuration: the domains' descriptor trees. It is
// never changed once loaded; a reload builds a new one.
type Config struct {
	domains map[string]*level
	// Files are the files it was loaded from, in load order.
	Files []string
}

// Domains returns the configured domains, sorted.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// LoadDir loads every *.yaml and *.yml file under dir (subdirectories
// included, in lexical order). An error names the first bad file and its
// cause; a domain in two files is an error (upstream's default, without
// MERGE_DOMAIN_CONFIG).
func LoadDir(dir string) (*Config, error) {
	files, err := configFiles(dir)
	if err != nil {
		return nil, err
	}
	c := &Config{domains: map[string]*level{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := c.add(f, b); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// configFiles lists the *.yaml and *.yml files under dir, subdirectories
// included, in lexical order.
func configFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return nil
	})
	return files, err
}

// Parse loads a configuration from files given as name -> content, in
// the order of names (tests, and callers that keep files elsewhere).
func Parse(names []string, contents map[string]string) (*Config, error) {
	c := &Config{domains: map[string]*level{}}
	for _, n := range names {
		if err := c.add(n, []byte(contents[n])); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// add loads one file into c.
func (c *Config) add(file string, content []byte) (err error) {
	var raw map[any]any
	if err := yaml.Unmarshal(content, &raw); err != nil {
		return configError(file, "error loading config file: %s", err)
	}
	if err := checkKeys(file, raw); err != nil {
		return err
	}
	var root yamlRoot
	if err := yaml.Unmarshal(content, &root); err != nil {
		return configError(file, "error loading config file: %s", err)
	}
	if root.Domain == "" {
		return configError(file, "config file cannot have empty domain")
	}
	if _, dup := c.domains[root.Domain]; dup {
		return configError(file, "duplicate domain '%s' in config file", root.Domain)
	}
	d := &level{children: map[string]*level{}}
	if err := d.load(file, root.Domain+".", root.Descriptors); err != nil {
		return err
	}
	c.domains[root.Domain] = d
	c.Files = append(c.Files, file)
	return nil
}

// checkKeys walks a file's maps: every key a known string, every list a
// list of maps, every leaf a string, an integer, a boolean or empty.
func checkKeys(file string, m map[any]any) error {
	for k, v := range m {
		ks, ok := k.(string)
		if !ok {
			return configError(file, "config error, key is not of type string: %v", k)
		}
		if !slices.Contains(upstreamKeys, ks) && !slices.Contains(ExtensionKeys, ks) {
			return configError(file, "config error, unknown key '%s'", ks)
		}
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				em, ok := e.(map[any]any)
				if !ok {
					return configError(file, "config error, yaml file contains list of type other than map: %v", e)
				}
				if err := checkKeys(file, em); err != nil {
					return err
				}
			}
		case map[any]any:
			if err := checkKeys(file, v); err != nil {
				return err
			}
		case string, int, bool, nil:
		default:
			return configError(file, "error checking config")
		}
	}
	return nil
}

// unitSeconds are the units a rate limit may name, in seconds (upstream's
// divider: a month is 30 days, a year 365).
var unitSeconds = map[pb.RateLimitResponse_RateLimit_Unit]int64{
	pb.RateLimitResponse_RateLimit_SECOND: 1,
	pb.RateLimitResponse_RateLimit_MINUTE: 60,
	pb.RateLimitResponse_RateLimit_HOUR:   3600,
	pb.RateLimitResponse_RateLimit_DAY:    86400,
	pb.RateLimitResponse_RateLimit_WEEK:   7 * 86400,
	pb.RateLimitResponse_RateLimit_MONTH:  30 * 86400,
	pb.RateLimitResponse_RateLimit_YEAR:   365 * 86400,
}

// load adds descriptors under n; parent is the stats key so far.
func (n *level) load(file, parent string, ds []yamlDescriptor) error {
	for _, d := range ds {
		if d.Key == "" {
			return configError(file, "descriptor has empty key")
		}
		key := d.Key
		if d.Value != "" {
			key += "_" + d.Value
		}
		full := parent + key
		if _, dup := n.children[key]; dup {
			return configError(file, "duplicate descriptor composite key '%s'", full)
		}
		child := &level{children: map[string]*level{}, valueToMetric: d.ValueToMetric, shareThreshold: d.ShareThreshold}
		if d.RateLimit != nil {
			r, err := newRule(file, full, d)
			if err != nil {
				return err
			}
			child.rule = r
		}
		if d.ShareThreshold && !strings.HasSuffix(key, "*") {
			return configError(file, "share_threshold can only be used with wildcard values (ending with '*'), but found key '%s'", key)
		}
		if strings.HasSuffix(key, "*") {
			n.wildcards = append(n.wildcards, key)
		}
		if err := child.load(file, full+".", d.Descriptors); err != nil {
			return err
		}
		n.children[key] = child
	}
	return nil
}

// newRule checks and builds a descriptor's rate limit.
func newRule(file, full string, d yamlDescriptor) (*Rule, error) {
	y := d.RateLimit
	v, ok := pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(y.Unit)]
	unit := pb.RateLimitResponse_RateLimit_Unit(v)
	valid := ok && unit != pb.RateLimitResponse_RateLimit_UNKNOWN
	if y.Unlimited && valid {
		return nil, configError(file, "should not specify rate limit unit when unlimited")
	}
	if !y.Unlimited && !valid {
		return nil, configError(file, "invalid rate limit unit '%s'", y.Unit)
	}
	r := &Rule{StatsKey: full, Unlimited: y.Unlimited, ShadowMode: d.ShadowMode, QuotaMode: d.QuotaMode,
		Name: y.Name, DetailedMetric: d.DetailedMetric, Algorithm: Fixed,
		Limit: &pb.RateLimitResponse_RateLimit{RequestsPerUnit: y.RequestsPerUnit, Unit: unit, Name: y.Name}}
	for _, rp := range y.Replaces {
		r.Replaces = append(r.Replaces, rp.Name)
	}
	for _, rp := range y.Replaces {
		if rp.Name == "" {
			return nil, configError(file, "should not have an empty replaces entry")
		}
		if rp.Name == y.Name {
			return nil, configError(file, "replaces should not contain name of same descriptor")
		}
	}
	if y.Algorithm != "" {
		a := Algorithm(strings.ToLower(y.Algorithm))
		if !slices.Contains(algorithms, a) {
			return nil, configError(file, "invalid algorithm '%s' for '%s' (fixed, slide, log, bucket, gcra or concurrency)", y.Algorithm, full)
		}
		r.Algorithm = a
	}
	mult := uint32(1)
	if y.UnitMultiplier != nil {
		if *y.UnitMultiplier == 0 {
			return nil, configError(file, "unit_multiplier must be at least 1 for '%s'", full)
		}
		mult = *y.UnitMultiplier
		r.Limit.UnitMultiplier = wrapperspb.UInt32(mult)
	}
	if !r.Unlimited {
		r.PeriodSec = unitSeconds[unit] * int64(mult)
		if (r.Algorithm == Bucket || r.Algorithm == GCRA) && y.RequestsPerUnit == 0 {
			return nil, configError(file, "requests_per_unit must be at least 1 with algorithm %s for '%s'", r.Algorithm, full)
		}
		r.setArgs()
	}
	return r, nil
}

// Match is a descriptor's rule as the request resolved it.
type Match struct {
	Rule *Rule
	// Shared, when share_threshold applies, holds per entry the wildcard
	// pattern that replaces the request's value in the counter's name
	// (the matching values share one counter), "" for the others; nil
	// when no entry shares.
	Shared []string
	// StatsKey is the metric key (detailed_metric and value_to_metric
	// applied).
	StatsKey string
}

// Entry is one descriptor entry of a request.
type Entry struct{ Key, Value string }

// AppendCounter appends the counter's name for the request's entries:
// "key_value" joined by '.', a shared value replaced by its pattern.
func (m Match) AppendCounter(dst []byte, entries []Entry) []byte {
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = append(dst, e.Key...)
		dst = append(dst, '_')
		if i < len(m.Shared) && m.Shared[i] != "" {
			dst = append(dst, m.Shared[i]...)
		} else {
			dst = append(dst, e.Value...)
		}
	}
	return dst
}

// step is how one entry of a request matched a level of the tree.
type step struct {
	next     *level
	wildcard string // the wildcard key it matched by, if any
	byValue  bool   // matched as key_value (or by a wildcard)
}

// Lookup finds the rule for a request's descriptor, as upstream does:
// level by level, "key_value" first, then the level's wildcards in file
// order ("key_prefix*"), then "key" alone; a rule applies only when the
// request's last entry lands on it. It returns false when no rule does.
// It allocates only for the keys of detailed_metric, value_to_metric and
// share_threshold.
func (c *Config) Lookup(domain string, entries []Entry) (Match, bool) {
	at := c.domains[domain]
	if at == nil || len(entries) == 0 {
		return Match{}, false
	}
	var (
		found    *Rule
		stack    [8]step
		steps    = stack[:0]
		kb       [128]byte
		special  bool // a level with value_to_metric or share_threshold was matched
		sharedAt bool
	)
	for i, e := range entries {
		key := append(append(append(kb[:0], e.Key...), '_'), e.Value...)
		st := step{next: at.children[string(key)]}
		if st.next == nil {
			for _, w := range at.wildcards {
				p := w[:len(w)-1]
				if len(key) >= len(p) && string(key[:len(p)]) == p {
					st.next, st.wildcard = at.children[w], w
					break
				}
			}
		}
		st.byValue = st.next != nil
		if st.next == nil {
			st.next = at.children[e.Key]
		}
		steps = append(steps, st)
		if n := st.next; n != nil {
			special = special || n.valueToMetric || n.shareThreshold
			sharedAt = sharedAt || st.wildcard != "" && n.shareThreshold
			if n.rule != nil && i == len(entries)-1 {
				found = n.rule
			}
		}
		if st.next == nil || len(st.next.children) == 0 {
			break
		}
		at = st.next
	}
	if found == nil {
		return Match{}, false
	}
	m := Match{Rule: found, StatsKey: found.StatsKey}
	if sharedAt {
		m.Shared = make([]string, len(entries))
		for i, st := range steps {
			if st.wildcard != "" && st.next.shareThreshold {
				m.Shared[i] = strings.TrimPrefix(st.wildcard, entries[i].Key+"_")
			}
		}
	}
	if !found.DetailedMetric && !special {
		return m, true // the stats key is the rule's own
	}
	var b strings.Builder
	b.WriteString(domain)
	switch {
	case found.DetailedMetric && m.Shared != nil:
		return Match{Rule: found, Shared: m.Shared, StatsKey: descriptorKey(domain, entries, m.Shared)}, true
	case found.DetailedMetric:
		for _, e := range entries {
			b.WriteString("." + e.Key + "_" + e.Value)
		}
	default: // value_to_metric and share_threshold: upstream's value_to_metric key
		for i, st := range steps {
			e := entries[i]
			b.WriteString("." + e.Key)
			if st.next == nil {
				continue
			}
			v := ""
			switch {
			case st.wildcard != "" && i < len(m.Shared) && m.Shared[i] != "":
				v = m.Shared[i]
			case st.wildcard != "" && st.next.valueToMetric:
				v = e.Value
			case st.wildcard != "":
				v = strings.TrimPrefix(st.wildcard, e.Key+"_")
			case st.byValue, st.next.valueToMetric:
				v = e.Value
			}
			if v != "" {
				b.WriteString("_" + v)
			}
		}
	}
	m.StatsKey = b.String()
	return m, true
}

// descriptorKey is upstream's key of a request's descriptor: the domain,
// then ".key_value" per entry ("key" alone for an empty value), a shared
// entry's pattern (shared[i], if any) in place of its value.
func descriptorKey(domain string, entries []Entry, shared []string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i, e := range entries {
		v := e.Value
		if i < len(shared) && shared[i] != "" {
			v = shared[i]
		}
		b.WriteString("." + e.Key)
		if v != "" {
			b.WriteString("_" + v)
		}
	}
	return b.String()
}

// clampU32 is a count as the wire's uint32 carries it.
func clampU32(v int64) uint32 {
	switch {
	case v <= 0:
		return 0
	case v >= math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(v)
}
