package rls

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/node"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// How a request is decided (docs/envoy.md):
//
//	1  every descriptor resolves to a rule (the configuration, or the
//	   descriptor's own limit override), or to none; `replaces` drops
//	   the rules named; unlimited rules answer OK
//	2  the enforced rules become one RL.ALL call: one clock reading,
//	   every limit charged only if every limit admits
//	3  rules in shadow or quota mode are decided after it, one by one,
//	   charged only if the request was admitted: they never refuse a
//	   request, so they never keep another rule from being charged
//	4  the statuses, the overall code, the headers and the metrics
//
// With ChargeEach (upstream's behaviour), step 2 decides every rule on
// its own instead: a rule that admits is charged even when another one
// refuses the request.

// Options configure the service.
type Options struct {
	// ShadowMode answers OK to every request, counting what would have
	// been refused (upstream's SHADOW_MODE).
	ShadowMode bool
	// QuotaMode puts every rule in quota mode: over its limit, reported
	// (dynamic metadata, metrics) but never refused (GLOBAL_QUOTA_MODE).
	QuotaMode bool
	// DynamicMetadata adds the request's summary and quota mode's
	// violations to the response's dynamic metadata
	// (RESPONSE_DYNAMIC_METADATA).
	DynamicMetadata bool
	// ChargeEach charges every admitting rule even when another refuses
	// the request, as envoyproxy/ratelimit does, instead of deciding the
	// request's rules as one.
	ChargeEach bool
	// ResponseHeaders adds the deciding rule's limit, remaining and reset
	// to the response (upstream's LIMIT_RESPONSE_HEADERS_ENABLED), under
	// the names below (upstream's defaults when empty).
	ResponseHeaders                           bool
	LimitHeader, RemainingHeader, ResetHeader string
	// Password authenticates to the other nodes of a cluster, where a
	// request for keys this node does not own is forwarded (masterauth).
	Password string
	// NearLimitRatio is the share of a limit past which admitted hits
	// count as near_limit (upstream's NEAR_LIMIT_RATIO; 0.8 when 0).
	NearLimitRatio float64
}

// Service answers envoy.service.ratelimit.v3.RateLimitService on a node.
type Service struct {
	pb.UnimplementedRateLimitServiceServer

	n       *node.Node
	o       Options
	cfg     atomic.Pointer[Config]
	stats   *Stats
	workers chan *worker
	forward *forwarder
}

// NewService returns the service for n with configuration c (an empty
// one if nil).
func NewService(n *node.Node, c *Config, o Options) *Service {
	if c == nil {
		c = &Config{domains: map[string]*level{}}
	}
	if o.LimitHeader == "" {
		o.LimitHeader = "RateLimit-Limit"
	}
	if o.RemainingHeader == "" {
		o.RemainingHeader = "RateLimit-Remaining"
	}
	if o.ResetHeader == "" {
		o.ResetHeader = "RateLimit-Reset"
	}
	if o.NearLimitRatio <= 0 {
		o.NearLimitRatio = 0.8
	}
	s := &Service{n: n, o: o, stats: &Stats{}, workers: make(chan *worker, 64), forward: newForwarder(o.Password)}
	s.cfg.Store(c)
	return s
}

// SetConfig replaces the configuration; requests in flight finish with
// the one they started with.
func (s *Service) SetConfig(c *Config) { s.cfg.Store(c) }

// Config returns the configuration in use.
func (s *Service) Config() *Config { return s.cfg.Load() }

// Stats returns the service's counters.
func (s *Service) Stats() *Stats { return s.stats }

// Close releases the service's internal clients and forwarding
// connections.
func (s *Service) Close() {
	for {
		select {
		case w := <-s.workers:
			s.n.RemoveClient(w.c)
		default:
			s.forward.close()
			return
		}
	}
}

// Errors with upstream's texts (its serviceError, returned as a plain
// error: gRPC's Unknown code).
var (
	errEmptyDomain      = errors.New("rate limit domain must not be empty")
	errEmptyDescriptors = errors.New("rate limit descriptor list must not be empty")
)

// item is one descriptor's rule as the request resolved it.
type item struct {
	m       Match
	hits    uint64
	key     []byte // the counter's key (in the worker's arena); nil: nothing to decide
	group   int    // its RL.ALL group in the call that decides it
	passive bool   // shadow or quota mode: decided after the enforced rules
	release uint64 // a concurrency rule's negative hits: leases to give back first
	res     result
}

// result is one limit's part of an RL.ALL reply (times in ms).
type result struct {
	limited          bool
	limit, remaining int64
	retryMs, resetMs int64
}

// ShouldRateLimit decides a request (see above).
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if req.Domain == "" {
		s.stats.serviceError.Add(1)
		return nil, errEmptyDomain
	}
	if len(req.Descriptors) == 0 {
		s.stats.serviceError.Add(1)
		return nil, errEmptyDescriptors
	}
	cfg := s.cfg.Load()
	w := s.worker()
	defer s.release(w)
	w.items = slices.Grow(w.items[:0], len(req.Descriptors))[:len(req.Descriptors)]
	w.arena = w.arena[:0]
	items := w.items
	var replaced []string // the rule names some rule of the request replaces
	for i, d := range req.Descriptors {
		it := &items[i]
		*it = item{}
		w.entries = w.entries[:0]
		for _, e := range d.Entries {
			w.entries = append(w.entries, Entry{e.Key, e.Value})
		}
		if d.Limit != nil {
			m, err := overrideRule(cfg, req.Domain, w.entries, d)
			if err != nil {
				s.stats.serviceError.Add(1)
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			it.m = m
		} else if m, ok := cfg.Lookup(req.Domain, w.entries); ok {
			it.m = m
		} else {
			if cfg.domains[req.Domain] == nil {
				s.stats.domainNotFound(req.Domain)
			}
			continue
		}
		replaced = append(replaced, it.m.Rule.Replaces...)
		switch {
		case d.HitsAddend != nil:
			it.hits = d.HitsAddend.Value
		default:
			it.hits = max(1, uint64(req.HitsAddend))
		}
		if d.IsNegativeHits {
			// A refund: a concurrency rule gives back as many leases;
			// no other algorithm takes hits back, so it charges nothing.
			if it.m.Rule.Algorithm == Concurrency {
				it.release = it.hits
			}
			it.hits = 0
		}
		if r := it.m.Rule; !r.Unlimited {
			start := len(w.arena)
			w.arena = append(w.arena, "rls:{"...)
			w.arena = append(w.arena, req.Domain...)
			w.arena = append(w.arena, "}:"...)
			w.arena = it.m.AppendCounter(w.arena, w.entries)
			w.arena = append(w.arena, ':')
			w.arena = append(w.arena, r.Algorithm...)
			it.key = w.arena[start:len(w.arena):len(w.arena)]
			it.passive = r.ShadowMode || r.QuotaMode || s.o.QuotaMode
		}
	}
	for i := range items {
		if it := &items[i]; it.m.Rule != nil && it.m.Rule.Name != "" && slices.Contains(replaced, it.m.Rule.Name) {
			it.m.Rule, it.key = nil, nil
		}
	}

	for i := range items {
		if it := &items[i]; it.key != nil && it.release > 0 {
			if err := s.releaseLeases(ctx, w, it.key, it.release); err != nil {
				return nil, err
			}
		}
	}

	// With ChargeEach every rule is charged on its own, as upstream does,
	// and admitted stays true: the passive rules are charged too.
	admitted := true
	w.idx = w.idx[:0]
	for i := range items {
		if it := &items[i]; it.key != nil && !it.passive {
			if s.o.ChargeEach {
				if err := s.decide(ctx, w, []int{i}, true); err != nil {
					return nil, err
				}
			} else {
				w.idx = append(w.idx, i)
			}
		}
	}
	if len(w.idx) > 0 {
		if err := s.decide(ctx, w, w.idx, true); err != nil {
			return nil, err
		}
		for _, i := range w.idx {
			admitted = admitted && !items[i].res.limited
		}
	}
	for i := range items {
		if it := &items[i]; it.key != nil && it.passive {
			if err := s.decide(ctx, w, []int{i}, admitted); err != nil {
				return nil, err
			}
		}
	}
	return s.respond(req, items), nil
}

// decide runs one RL.ALL call over the worker's items at idx; with charge
// unset, every group costs 0 (checked, charged nothing). Items naming the
// same counter share one group, their hits added.
func (s *Service) decide(ctx context.Context, w *worker, idx []int, charge bool) error {
	items := w.items
	w.groups = w.groups[:0]
	for _, i := range idx {
		it := &items[i]
		cost := it.hits
		if !charge {
			cost = 0
		}
		it.group = -1
		for g := range w.groups {
			if bytes.Equal(items[w.groups[g].item].key, it.key) {
				it.group = g
				w.groups[g].cost = min(w.groups[g].cost+cost, math.MaxInt64)
				break
			}
		}
		if it.group < 0 {
			it.group = len(w.groups)
			w.groups = append(w.groups, group{item: i, cost: min(cost, math.MaxInt64)})
		}
	}
	w.argv = append(w.argv[:0], argAll)
	for g, gr := range w.groups {
		it := &items[gr.item]
		if g > 0 {
			w.argv = append(w.argv, argAnd)
		}
		w.argv = append(w.argv, it.key)
		w.argv = append(w.argv, it.m.Rule.args...)
		start := len(w.arena)
		w.arena = strconv.AppendUint(w.arena, gr.cost, 10)
		w.argv = append(w.argv, argCost, w.arena[start:len(w.arena):len(w.arena)])
	}
	res, err := s.exec(ctx, w)
	if err != nil {
		return err
	}
	if len(res) != len(w.groups) {
		return status.Error(codes.Internal, errReply.Error())
	}
	for _, i := range idx {
		items[i].res = res[items[i].group]
	}
	return nil
}

// releaseLeases gives back up to n of key's leases, those closest to
// their end first (RL.RELEASE key ANY), on the node or the one that owns
// the key; it stops when none is left.
func (s *Service) releaseLeases(ctx context.Context, w *worker, key []byte, n uint64) error {
	argv := [][]byte{argRelease, key, argAny}
	for range min(n, maxRelease) {
		w.c.Mark()
		w.rec.reset()
		if err := s.n.ExecContext(ctx, w.c, argv, &w.rec); err != nil {
			return status.FromContextError(err).Err() // held by a FAILOVER past the caller's deadline
		}
		msg := w.rec.err
		if addr, ok := movedTo(msg); ok {
			v, err := s.forward.client(addr).Do(ctx, "RL.RELEASE", string(key), "ANY").Int64()
			if err == nil {
				if v == 0 {
					return nil
				}
				continue
			}
			msg = err.Error()
		}
		if msg != "" {
			return s.backendError(msg)
		}
		if len(w.rec.ints) != 1 || w.rec.ints[0] == 0 {
			return nil
		}
	}
	return nil
}

// maxRelease bounds the leases one descriptor gives back (its
// hits_addend): a limit in flight is not in the millions.
const maxRelease = 1 << 16

// exec runs the worker's call on the node, or on the node that owns its
// keys when a cluster says MOVED.
func (s *Service) exec(ctx context.Context, w *worker) ([]result, error) {
	w.c.Mark()
	w.rec.reset()
	if err := s.n.ExecContext(ctx, w.c, w.argv, &w.rec); err != nil {
		return nil, status.FromContextError(err).Err() // held by a FAILOVER past the caller's deadline
	}
	msg := w.rec.err
	if msg == "" {
		var err error
		w.results, err = parseResults(w.results[:0], w.rec.ints, w.rec.sizes)
		return w.results, err
	}
	if addr, ok := movedTo(msg); ok {
		res, err := s.forward.do(ctx, addr, w.argv)
		if err == nil {
			return res, nil
		}
		msg = err.Error()
	}
	return nil, s.backendError(msg)
}

// backendError counts an error the node answered and gives it a gRPC
// code: Unavailable for the ones a retry elsewhere or later may pass (a
// replica, a node loading, a cluster moving), Unknown for the others.
func (s *Service) backendError(msg string) error {
	s.stats.backendError.Add(1)
	code := codes.Unknown
	for _, p := range []string{"READONLY", "NOREPLICAS", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK", "MASTERDOWN"} {
		if strings.HasPrefix(msg, p+" ") {
			code = codes.Unavailable
		}
	}
	return status.Error(code, msg)
}

// movedTo reads a MOVED or ASK redirection's address.
func movedTo(msg string) (string, bool) {
	f := strings.Fields(msg)
	if len(f) == 3 && (f[0] == "MOVED" || f[0] == "ASK") {
		return f[2], true
	}
	return "", false
}

// respond builds the response from the decided items. The statuses and
// their durations are allocated together, one slice each.
func (s *Service) respond(req *pb.RateLimitRequest, items []item) *pb.RateLimitResponse {
	n := len(items)
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, n)}
	sts := make([]pb.RateLimitResponse_DescriptorStatus, n)
	durs := make([]durationpb.Duration, n)
	var headerFrom *pb.RateLimitResponse_DescriptorStatus
	minLeft := uint32(math.MaxUint32)
	var violations []int // descriptors over a limit in quota mode
	quota := s.o.QuotaMode
	for i := range items {
		it, st := &items[i], &sts[i]
		st.Code = pb.RateLimitResponse_OK
		resp.Statuses[i] = st
		r := it.m.Rule
		switch {
		case r == nil:
			continue
		case r.Unlimited:
			st.LimitRemaining = math.MaxUint32
			continue
		}
		st.CurrentLimit = r.Limit
		over := it.res.limited
		wait := it.res.resetMs
		if over {
			if it.res.retryMs >= 0 {
				wait = it.res.retryMs
			}
		} else {
			st.LimitRemaining = clampU32(it.res.remaining)
		}
		wait = max(wait, 0)
		durs[i].Seconds, durs[i].Nanos = wait/1000, int32(wait%1000)*1e6
		st.DurationUntilReset = &durs[i]
		s.stats.count(req.Domain, it.m.StatsKey, it.hits, it.res, r, s.o.NearLimitRatio)
		quota = quota || r.QuotaMode
		switch {
		case over && (r.QuotaMode || s.o.QuotaMode):
			violations = append(violations, i) // reported, never refused
		case over && r.ShadowMode:
			s.stats.rule(req.Domain, it.m.StatsKey).shadowMode.Add(it.hits)
		case over:
			st.Code = pb.RateLimitResponse_OVER_LIMIT
			resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
		}
		if st.Code == pb.RateLimitResponse_OVER_LIMIT {
			headerFrom, minLeft = st, 0
		} else if st.LimitRemaining < minLeft {
			headerFrom, minLeft = st, st.LimitRemaining
		}
	}
	if s.o.ResponseHeaders && headerFrom != nil {
		reset := headerFrom.DurationUntilReset.AsDuration()
		resp.ResponseHeadersToAdd = []*core.HeaderValue{
			{Key: s.o.LimitHeader, Value: strconv.FormatUint(uint64(headerFrom.CurrentLimit.RequestsPerUnit), 10)},
			{Key: s.o.RemainingHeader, Value: strconv.FormatUint(uint64(headerFrom.LimitRemaining), 10)},
			{Key: s.o.ResetHeader, Value: strconv.FormatInt(int64((reset+time.Second-1)/time.Second), 10)},
		}
	}
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT && s.o.ShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
		s.stats.globalShadowMode.Add(1)
	}
	if s.o.DynamicMetadata {
		resp.DynamicMetadata = metadata(req, violations, quota)
	}
	return resp
}

// metadata is the response's dynamic metadata, as upstream writes it:
// the domain, each descriptor (its entries as "key=value", its limit
// override and hits_addend when set), the request's hits_addend when not
// 0, the indexes of the descriptors over a limit in quota mode, and
// whether any rule of the request was in quota mode.
func metadata(req *pb.RateLimitRequest, violations []int, quota bool) *structpb.Struct {
	f := map[string]*structpb.Value{"domain": structpb.NewStringValue(req.Domain)}
	ds := make([]*structpb.Value, 0, len(req.Descriptors))
	for _, d := range req.Descriptors {
		df := map[string]*structpb.Value{}
		es := make([]*structpb.Value, 0, len(d.Entries))
		for _, e := range d.Entries {
			es = append(es, structpb.NewStringValue(e.GetKey()+"="+e.GetValue()))
		}
		df["entries"] = structpb.NewListValue(&structpb.ListValue{Values: es})
		if d.Limit != nil {
			df["limit"] = structpb.NewStringValue(d.Limit.String())
		}
		if d.HitsAddend != nil {
			df["hitsAddend"] = structpb.NewNumberValue(float64(d.HitsAddend.GetValue()))
		}
		ds = append(ds, structpb.NewStructValue(&structpb.Struct{Fields: df}))
	}
	f["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: ds})
	if req.HitsAddend != 0 {
		f["hitsAddend"] = structpb.NewNumberValue(float64(req.HitsAddend))
	}
	if len(violations) > 0 {
		vs := make([]*structpb.Value, len(violations))
		for i, v := range violations {
			vs[i] = structpb.NewNumberValue(float64(v))
		}
		f["quotaModeViolations"] = structpb.NewListValue(&structpb.ListValue{Values: vs})
	}
	f["quotaModeEnabled"] = structpb.NewBoolValue(quota)
	return &structpb.Struct{Fields: f}
}

// overrideRule is the rule of a descriptor that carries its own limit
// (Envoy's limit override): its requests per unit, unit and multiplier,
// counted with the algorithm the configuration gives the descriptor
// (fixed if none).
func overrideRule(cfg *Config, domain string, entries []Entry, d *rlv3.RateLimitDescriptor) (Match, error) {
	o := d.Limit
	unit := pb.RateLimitResponse_RateLimit_Unit(o.Unit)
	sec, ok := unitSeconds[unit]
	if !ok {
		return Match{}, fmt.Errorf("invalid rate limit unit '%s' in the descriptor's limit override", unit)
	}
	r := &Rule{Algorithm: Fixed, Limit: &pb.RateLimitResponse_RateLimit{RequestsPerUnit: o.RequestsPerUnit, Unit: unit}, PeriodSec: sec}
	if o.UnitMultiplier != nil {
		if o.UnitMultiplier.Value == 0 {
			return Match{}, errors.New("unit_multiplier must be at least 1 in the descriptor's limit override")
		}
		r.PeriodSec *= int64(o.UnitMultiplier.Value)
		r.Limit.UnitMultiplier = wrapperspb.UInt32(o.UnitMultiplier.Value)
	}
	if m, ok := cfg.Lookup(domain, entries); ok && !m.Rule.Unlimited && (o.RequestsPerUnit > 0 || m.Rule.Algorithm != Bucket && m.Rule.Algorithm != GCRA) {
		r.Algorithm = m.Rule.Algorithm
	}
	r.setArgs()
	r.StatsKey = descriptorKey(domain, entries, nil)
	return Match{Rule: r, StatsKey: r.StatsKey}, nil
}

// worker is one internal client of the node with the buffers a request
// reuses: a request allocates little beyond its response.
type worker struct {
	c       *node.Client
	items   []item
	entries []Entry
	arena   []byte // the keys and costs of the current request
	idx     []int
	groups  []group
	argv    [][]byte
	results []result
	rec     recorder
}

// group is one RL.ALL group: the first item naming its counter, and the
// hits of every item that does.
type group struct {
	item int
	cost uint64
}

func (s *Service) worker() *worker {
	select {
	case w := <-s.workers:
		return w
	default:
		return &worker{c: s.n.NewInternalClient("rls", "rls:0")}
	}
}

func (s *Service) release(w *worker) {
	select {
	case s.workers <- w:
	default:
		s.n.RemoveClient(w.c)
	}
}

var (
	argAll     = []byte("RL.ALL")
	argAnd     = []byte("AND")
	argCost    = []byte("COST")
	argRelease = []byte("RL.RELEASE")
	argAny     = []byte("ANY")
)
