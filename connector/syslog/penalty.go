package syslog

import (
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/transport/backoff"
)

// Reasons a client certificate was refused (mutual TLS). Metrics label
// values and log keys: bounded, and naming nothing the client presented.
const (
	authNoCert  = "no_certificate"
	authBadCert = "bad_certificate"
)

// maxPenalised bounds the sources a penalty remembers; past it, sources
// whose wait is over are forgotten first, then new ones are not kept
// (they are still counted and logged).
const maxPenalised = 4096

// penalty slows down sources whose client certificates were refused: a
// new connection from such a source waits before its handshake, the
// wait doubling with each refusal up to a bound (backoff.Policy). A
// source that completes a handshake is forgiven. It also gathers the
// refusals since the last report, for one log line per interval. Safe
// for concurrent use.
type penalty struct {
	policy backoff.Policy

	mu      sync.Mutex
	sources map[netip.Prefix]*penalised
	// Since the last report: refusals by reason, and by source.
	byReason map[string]int64
	bySource map[netip.Prefix]int64
}

type penalised struct {
	failures int
	until    time.Time
}

func newPenalty(maxWait time.Duration) *penalty {
	return &penalty{policy: backoff.Policy{Initial: min(authFailureFirstWait, maxWait), Max: maxWait},
		sources: map[netip.Prefix]*penalised{}, byReason: map[string]int64{}, bySource: map[netip.Prefix]int64{}}
}

// wait is how long a new connection from src must wait now.
func (p *penalty) wait(src netip.Prefix, now time.Time) time.Duration {
	if p.policy.Max <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.sources[src]; e != nil && now.Before(e.until) {
		return e.until.Sub(now)
	}
	return 0
}

// failed records a refusal from src for reason.
func (p *penalty) failed(src netip.Prefix, reason string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byReason[reason]++
	if _, ok := p.bySource[src]; ok || len(p.bySource) < maxPenalised {
		p.bySource[src]++
	}
	if p.policy.Max <= 0 {
		return
	}
	e := p.sources[src]
	if e == nil {
		if len(p.sources) >= maxPenalised {
			for k, v := range p.sources {
				if !now.Before(v.until) {
					delete(p.sources, k)
				}
			}
		}
		if len(p.sources) >= maxPenalised {
			return
		}
		e = &penalised{}
		p.sources[src] = e
	}
	e.until = now.Add(p.policy.Delay(e.failures))
	e.failures++
}

// succeeded forgives src.
func (p *penalty) succeeded(src netip.Prefix) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sources, src)
}

// authReport is what was refused since the previous report.
type authReport struct {
	byReason map[string]int64
	sources  int
	// top is the source with the most refusals, and its count.
	top      netip.Prefix
	topCount int64
}

// report returns and resets the refusals gathered; ok is false when
// there were none.
func (p *penalty) report() (r authReport, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.byReason) == 0 {
		return r, false
	}
	r.byReason, r.sources = p.byReason, len(p.bySource)
	srcs := make([]netip.Prefix, 0, len(p.bySource))
	for s := range p.bySource {
		srcs = append(srcs, s)
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].Addr().Less(srcs[j].Addr()) })
	for _, s := range srcs {
		if n := p.bySource[s]; n > r.topCount {
			r.top, r.topCount = s, n
		}
	}
	p.byReason, p.bySource = map[string]int64{}, map[netip.Prefix]int64{}
	return r, true
}
