package processing

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter is one named count.
type Counter struct {
	Name  string
	Value uint64
}

// ProcessorStats are one processor's counts since the chain was built.
// In = Out + Dropped + Folded + SampledOut + Held at every reading taken
// between two Process calls.
type ProcessorStats struct {
	// Step is the processor's index in the chain; Kind its key ("redact").
	Step int
	Kind string
	In   uint64
	Out  uint64
	// Dropped: filtered out, or a parse error under on-error: drop.
	Dropped uint64
	// Folded: repeats dedup folded into the first of their window.
	Folded uint64
	// SampledOut: events sample did not keep.
	SampledOut uint64
	// Held: events dedup holds now (their window is open).
	Held uint64
	// Errors: events it could not process (kept unless on-error: drop).
	Errors uint64
	// Extra are its own counters: redactions per detector
	// ("redacted_email"), dedup's keys over the cap ("keys_over_cap").
	Extra []Counter
}

// ChainStats are a chain's counts.
type ChainStats struct {
	// Undecodable counts events whose payload is not a JSON object; they
	// pass on unprocessed.
	Undecodable uint64
	Steps       []ProcessorStats
}

// counts are a processor's live counters.
type counts struct {
	step                                             int
	kind                                             string
	in, out, dropped, folded, sampledOut, held, errs atomic.Uint64
	mu                                               sync.Mutex
	extra                                            map[string]*atomic.Uint64
}

// add returns the extra counter name, creating it; the set of names is
// small and fixed by the config (detector names).
func (c *counts) counter(name string) *atomic.Uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.extra == nil {
		c.extra = make(map[string]*atomic.Uint64)
	}
	if v, ok := c.extra[name]; ok {
		return v
	}
	v := new(atomic.Uint64)
	c.extra[name] = v
	return v
}

func (c *counts) snapshot() ProcessorStats {
	s := ProcessorStats{
		Step: c.step, Kind: c.kind,
		In: c.in.Load(), Out: c.out.Load(), Dropped: c.dropped.Load(), Folded: c.folded.Load(),
		SampledOut: c.sampledOut.Load(), Held: c.held.Load(), Errors: c.errs.Load(),
	}
	c.mu.Lock()
	for name, v := range c.extra {
		s.Extra = append(s.Extra, Counter{Name: name, Value: v.Load()})
	}
	c.mu.Unlock()
	sort.Slice(s.Extra, func(i, j int) bool { return s.Extra[i].Name < s.Extra[j].Name })
	return s
}

// FormatCounts renders s's non-zero counters as "in=3 out=2 dropped=1",
// in and out always.
func FormatCounts(s ProcessorStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "in=%d out=%d", s.In, s.Out)
	for _, c := range []Counter{{"dropped", s.Dropped}, {"folded", s.Folded}, {"sampled_out", s.SampledOut}, {"held", s.Held}, {"errors", s.Errors}} {
		if c.Value > 0 {
			fmt.Fprintf(&b, " %s=%d", c.Name, c.Value)
		}
	}
	for _, c := range s.Extra {
		fmt.Fprintf(&b, " %s=%d", c.Name, c.Value)
	}
	return b.String()
}
