package relay

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// CollectorStatus is one connected collector.
type CollectorStatus struct {
	Name   string // the name of its token
	Remote string
	Since  time.Time
	// Batches and Bytes are the __BATCH__ requests read and their
	// payload bytes (as sent, before decoding).
	Batches, Bytes uint64
	// Received are the RECEIVED replies written; Refused the other batch
	// replies (QUEUE_FULL, RETRY, DECODE_FAILED...).
	Received, Refused uint64
	// Rate is batches per second over the last few seconds.
	Rate float64
	// Owed are the requests read and not answered yet.
	Owed int
	// LastError describes the latest refusal (which request of the
	// session, the reply, what was wrong) and never holds a byte the
	// collector sent: status and diagnostics show it.
	LastError string
}

// NameTotals are the counters of every session of one token name since
// New, the live ones included.
type NameTotals struct {
	Name                      string
	Sessions                  uint64
	Connected                 int
	Batches, Bytes            uint64
	Received, Refused         uint64
	LastError                 string
	LastErrorAt, LastActivity time.Time
}

// collectorStats are one session's counters. The counters are atomics
// (the reader and writer goroutines bump them); the rate mark and the
// last error are under mu.
type collectorStats struct {
	name, remote       string
	since              time.Time
	batches, bytes     atomic.Uint64
	received, refusedN atomic.Uint64
	totals             *nameTotals

	mu        sync.Mutex
	markAt    time.Time
	markN     uint64
	rate      float64
	lastError string
}

// nameTotals accumulate per token name.
type nameTotals struct {
	sessions, batches, bytes, received, refused atomic.Uint64
	connected                                   atomic.Int64
	mu                                          sync.Mutex
	lastError                                   string
	lastErrorAt, lastActivity                   time.Time
}

func (c *collectorStats) batch(n int) {
	c.batches.Add(1)
	c.bytes.Add(uint64(n))
	c.totals.batches.Add(1)
	c.totals.bytes.Add(uint64(n))
}

func (c *collectorStats) received1() {
	c.received.Add(1)
	c.totals.received.Add(1)
}

func (c *collectorStats) refused(reply string) {
	c.countRefused()
	c.setError("replied " + reply)
}

// countRefused counts a batch answered otherwise than RECEIVED.
func (c *collectorStats) countRefused() {
	c.refusedN.Add(1)
	c.totals.refused.Add(1)
}

func (c *collectorStats) setError(msg string) {
	now := time.Now()
	c.mu.Lock()
	c.lastError = msg
	c.mu.Unlock()
	c.totals.mu.Lock()
	c.totals.lastError, c.totals.lastErrorAt = c.name+" "+c.remote+": "+msg, now
	c.totals.mu.Unlock()
}

// rateWindow is how often a collector's rate is re-measured.
const rateWindow = 5 * time.Second

func (c *collectorStats) snapshot(now time.Time, owed int) CollectorStatus {
	n := c.batches.Load()
	c.mu.Lock()
	if el := now.Sub(c.markAt); el >= rateWindow || c.rate == 0 && el > 0 {
		c.rate = float64(n-c.markN) / el.Seconds()
		if el >= rateWindow {
			c.markAt, c.markN = now, n
		}
	}
	st := CollectorStatus{
		Name: c.name, Remote: c.remote, Since: c.since,
		Batches: n, Bytes: c.bytes.Load(), Received: c.received.Load(), Refused: c.refusedN.Load(),
		Rate: c.rate, Owed: owed, LastError: c.lastError,
	}
	c.mu.Unlock()
	return st
}

// collectors is the registry of live sessions and per-name totals.
type collectors struct {
	mu    sync.Mutex
	live  map[*pipe]*collectorStats
	names map[string]*nameTotals
}

func newCollectors() *collectors {
	return &collectors{live: make(map[*pipe]*collectorStats), names: make(map[string]*nameTotals)}
}

func (cs *collectors) open(p *pipe) *collectorStats {
	now := time.Now()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	t := cs.names[p.peer.Name]
	if t == nil {
		t = &nameTotals{}
		cs.names[p.peer.Name] = t
	}
	t.sessions.Add(1)
	t.connected.Add(1)
	st := &collectorStats{name: p.peer.Name, remote: p.peer.Remote, since: now, markAt: now, totals: t}
	cs.live[p] = st
	return st
}

func (cs *collectors) close(p *pipe, reason string) {
	cs.mu.Lock()
	st := cs.live[p]
	delete(cs.live, p)
	cs.mu.Unlock()
	if st == nil {
		return
	}
	st.totals.connected.Add(-1)
	st.totals.mu.Lock()
	st.totals.lastActivity = time.Now()
	st.totals.mu.Unlock()
	_ = reason
}

// Collectors lists the connected collectors, by
// name then address. Safe for concurrent use.
func (s *Server) Collectors() []CollectorStatus {
	now := time.Now()
	s.collectors.mu.Lock()
	pipes := make(map[*pipe]*collectorStats, len(s.collectors.live))
	for p, st := range s.collectors.live {
		pipes[p] = st
	}
	s.collectors.mu.Unlock()
	out := make([]CollectorStatus, 0, len(pipes))
	for p, st := range pipes {
		out = append(out, st.snapshot(now, p.owed()))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Remote < out[j].Remote
	})
	return out
}

// Totals lists the counters per token name that has connected since New,
// sorted by name. Safe for concurrent use.
func (s *Server) Totals() []NameTotals {
	s.collectors.mu.Lock()
	out := make([]NameTotals, 0, len(s.collectors.names))
	for name, t := range s.collectors.names {
		t.mu.Lock()
		out = append(out, NameTotals{
			Name: name, Sessions: t.sessions.Load(), Connected: int(t.connected.Load()),
			Batches: t.batches.Load(), Bytes: t.bytes.Load(), Received: t.received.Load(), Refused: t.refused.Load(),
			LastError: t.lastError, LastErrorAt: t.lastErrorAt, LastActivity: t.lastActivity,
		})
		t.mu.Unlock()
	}
	s.collectors.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
