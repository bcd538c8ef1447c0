package rls

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats are the service's counters, named as envoyproxy/ratelimit's
// (its stats keys under ratelimit.service, and the Prometheus names its
// default statsd mapper gives them).
type Stats struct {
	rules sync.Map // stats key -> *ruleStats
	// domains counts requests for domains no file configures.
	domains          sync.Map // domain -> *atomic.Uint64
	serviceError     atomic.Uint64
	backendError     atomic.Uint64
	globalShadowMode atomic.Uint64
	ConfigLoads      atomic.Uint64
	ConfigErrors     atomic.Uint64
	// LastConfigError is the last reload's error text ("" after a good
	// one).
	LastConfigError atomic.Pointer[string]
}

// ruleStats are one rule's counters, in hits (a request's hits_addend).
type ruleStats struct {
	domain                                                   string
	totalHits, overLimit, nearLimit, withinLimit, shadowMode atomic.Uint64
}

func (s *Stats) rule(domain, key string) *ruleStats {
	if r, ok := s.rules.Load(key); ok {
		return r.(*ruleStats)
	}
	r, _ := s.rules.LoadOrStore(key, &ruleStats{domain: domain})
	return r.(*ruleStats)
}

func (s *Stats) domainNotFound(d string) {
	c, ok := s.domains.Load(d)
	if !ok {
		c, _ = s.domains.LoadOrStore(d, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
}

// count adds a decided rule's hits: all of them to total_hits, and to
// over_limit when it refused (a refused request charges nothing, so every
// hit was over), else to within_limit and, for the hits past the ratio of
// the limit, to near_limit.
func (s *Stats) count(domain, key string, hits uint64, res result, r *Rule, ratio float64) {
	rs := s.rule(domain, key)
	rs.totalHits.Add(hits)
	if res.limited {
		rs.overLimit.Add(hits)
		return
	}
	rs.withinLimit.Add(hits)
	limit := int64(r.Limit.RequestsPerUnit)
	near := int64(math.Floor(float64(float32(limit) * float32(ratio))))
	after := limit - res.remaining
	before := after - int64(hits)
	if after > near {
		rs.nearLimit.Add(uint64(after - max(before, near)))
	}
}

var (
	ruleLabels     = []string{"domain", "key1", "key2"}
	descTotalHits  = prometheus.NewDesc("ratelimit_service_rate_limit_total_hits", "Hits (hits_addend) on a rule: every request its descriptor matched.", ruleLabels, nil)
	descOverLimit  = prometheus.NewDesc("ratelimit_service_rate_limit_over_limit", "Hits on a rule that it refused (or would have, in shadow mode).", ruleLabels, nil)
	descNearLimit  = prometheus.NewDesc("ratelimit_service_rate_limit_near_limit", "Admitted hits past the near-limit ratio of a rule's limit.", ruleLabels, nil)
	descWithin     = prometheus.NewDesc("ratelimit_service_rate_limit_within_limit", "Hits on a rule that it admitted.", ruleLabels, nil)
	descShadow     = prometheus.NewDesc("ratelimit_service_rate_limit_shadow_mode", "Hits a rule in shadow mode would have refused.", ruleLabels, nil)
	descNotFound   = prometheus.NewDesc("ratelimit_service_domain_not_found", "Requests for a domain no configuration file names.", []string{"domain"}, nil)
	descCallErrors = prometheus.NewDesc("ratelimit_service_should_rate_limit_error", "ShouldRateLimit calls answered with an error: a bad request (service_error) or a refusal of the node (redis_error: read-only, cluster redirection failed).", []string{"err_type"}, nil)
	descGlobal     = prometheus.NewDesc("ratelimit_service_global_shadow_mode", "Requests answered OK because of the global shadow mode that would have been refused.", nil, nil)
	descLoads      = prometheus.NewDesc("ratelimit_service_config_load_success", "Configurations loaded (at start and on reloads).", nil, nil)
	descLoadErrors = prometheus.NewDesc("ratelimit_service_config_load_error", "Reloads refused for a bad file (the running configuration stays).", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *Stats) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTotalHits, descOverLimit, descNearLimit, descWithin, descShadow, descNotFound, descCallErrors, descGlobal, descLoads, descLoadErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s *Stats) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	s.rules.Range(func(k, v any) bool {
		r := v.(*ruleStats)
		key1, key2 := ruleKeys(r.domain, k.(string))
		l := []string{r.domain, key1, key2}
		counter(descTotalHits, r.totalHits.Load(), l...)
		counter(descOverLimit, r.overLimit.Load(), l...)
		counter(descNearLimit, r.nearLimit.Load(), l...)
		counter(descWithin, r.withinLimit.Load(), l...)
		counter(descShadow, r.shadowMode.Load(), l...)
		return true
	})
	s.domains.Range(func(k, v any) bool {
		counter(descNotFound, v.(*atomic.Uint64).Load(), k.(string))
		return true
	})
	counter(descCallErrors, s.serviceError.Load(), "service_error")
	counter(descCallErrors, s.backendError.Load(), "redis_error")
	counter(descGlobal, s.globalShadowMode.Load())
	counter(descLoads, s.ConfigLoads.Load())
	counter(descLoadErrors, s.ConfigErrors.Load())
}

// ruleKeys splits a stats key after its domain into the first two
// descriptor levels, as upstream's statsd mapper labels them.
func ruleKeys(domain, key string) (key1, key2 string) {
	parts := strings.SplitN(strings.TrimPrefix(key, domain+"."), ".", 3)
	key1 = parts[0]
	if len(parts) > 1 {
		key2 = parts[1]
	}
	return key1, key2
}
