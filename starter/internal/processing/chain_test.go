package processing

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

func TestNilChainPassesEverything(t *testing.T) {
	var c *Chain
	in := []input.Event{line("a", 1), line("b", 2)}
	out := c.Process(in, 0, t0)
	if len(out) != 2 || string(out[0].Payload) != string(in[0].Payload) {
		t.Fatalf("nil chain changed the events: %v", out)
	}
	if c.Holding() || c.Holds() || len(c.Stats().Steps) != 0 {
		t.Fatal("nil chain reports state")
	}
	if c, err := New(nil, Settings{}); c != nil || err != nil {
		t.Fatalf("New(nil) = %v, %v; want a nil chain", c, err)
	}
}

func TestUnchangedEventKeepsItsBytes(t *testing.T) {
	c := mustChain(t, Step{Drop: `payload == "x"`})
	ev := line("y", 1)
	ev.Payload = []byte(`{"payload":"y","_z":1.50}`)
	out := c.Process([]input.Event{ev}, 0, t0)
	if string(out[0].Payload) != `{"payload":"y","_z":1.50}` {
		t.Fatalf("a filter re-encoded the event: %s", out[0].Payload)
	}
}

func TestDroppedEventKeepsItsPosition(t *testing.T) {
	c := mustChain(t, Step{Drop: `payload == "debug"`})
	out := c.Process([]input.Event{line("debug", 7)}, 0, t0)
	if len(out) != 1 || out[0].Payload != nil || out[0].Pos.Key != "f1" || string(out[0].Pos.State) != "7" {
		t.Fatalf("dropped event = %+v; want a position-only event at f1:7", out)
	}
}

func TestDedupFoldsAWindowAndHoldsPositions(t *testing.T) {
	c := mustChain(t, Step{Dedup: &DedupConfig{Window: 10 * time.Second}})
	out := c.Process([]input.Event{line("storm", 1), line("storm", 2), line("other", 3), line("storm", 4)}, 0, t0)
	for _, ev := range out {
		if ev.Payload != nil || ev.Pos.Key != "" {
			t.Fatalf("inside the window: %+v; want no payload and no position", out)
		}
	}
	if !c.Holding() {
		t.Fatal("Holding() = false with held events")
	}
	out = c.Process(nil, 0, t0.Add(5*time.Second))
	if len(out) != 0 {
		t.Fatalf("window not closed yet, got %d events", len(out))
	}
	out = c.Process(nil, 0, t0.Add(10*time.Second))
	if len(out) != 3 {
		t.Fatalf("at the window's end: %d events, want storm, other and the last position", len(out))
	}
	storm, _ := decodeEvent(out[0].Payload)
	if jsonOf(storm["_repeats"]) != "3" || jsonOf(storm["payload"]) != `"storm"` || jsonOf(storm["_line"]) != "1" {
		t.Errorf("storm = %v; want the first event with _repeats 3", storm)
	}
	other, _ := decodeEvent(out[1].Payload)
	if jsonOf(other["_repeats"]) != "1" {
		t.Errorf("other = %v; want _repeats 1", other)
	}
	if out[2].Payload != nil || string(out[2].Pos.State) != "4" {
		t.Errorf("last = %+v; want the position after line 4", out[2])
	}
	if c.Holding() {
		t.Error("still holding after every window closed")
	}
}

func TestFlushEmitsEverythingHeld(t *testing.T) {
	c := mustChain(t, Step{Dedup: &DedupConfig{Window: time.Hour}}, Step{Set: map[string]string{"after": "yes"}})
	c.Process([]input.Event{line("a", 1), line("a", 2)}, 0, t0)
	out := c.Flush(nil, t0.Add(time.Second))
	if len(out) != 2 || out[0].Payload == nil || string(out[1].Pos.State) != "2" {
		t.Fatalf("flush = %+v; want the held event then the last position", out)
	}
	m, _ := decodeEvent(out[0].Payload)
	if m["after"] != "yes" || jsonOf(m["_first_ts"]) != fmt.Sprint(t0.UnixMilli()) {
		t.Errorf("flushed event %v: the steps after dedup must run on it", m)
	}
}

func TestDedupKeyCap(t *testing.T) {
	c := mustChain(t, Step{Dedup: &DedupConfig{Window: time.Hour, MaxKeys: 2}})
	out := c.Process([]input.Event{line("a", 1), line("b", 2), line("c", 3)}, 0, t0)
	if out[2].Payload == nil {
		t.Fatal("an event over the key cap was held; want it passed on")
	}
	if st := c.Stats().Steps[0]; st.Extra[0].Name != "keys_over_cap" || st.Extra[0].Value != 1 {
		t.Errorf("extra = %v; want keys_over_cap 1", st.Extra)
	}
}

// TestPositionsNeverPassAHeldEvent is a model test: random events of two
// sources, some repeated, go through dedup → filter → sample in random
// batches at a random clock. The model stores, as the scheduler would,
// the last position handed on per source; an event emitted after its
// source's stored position passed it would be lost by a crash in between
// (a restart reads on from the position). At the end (Flush) every source's
// last position is stored, nothing is held, and the counts add up.
func TestPositionsNeverPassAHeldEvent(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		c := mustChain(t,
			Step{Dedup: &DedupConfig{Window: time.Duration(1+r.IntN(5)) * time.Second, MaxKeys: 1 + r.IntN(4)}},
			Step{Drop: `payload == "p0"`},
			Step{Sample: &SampleConfig{OneIn: 2, Unless: `payload == "p1"`}},
		)
		m := &posModel{t: t, seed: seed, keyOf: map[int]string{}, stored: map[string]int{}, last: map[string]int{}}
		now, seq := t0, 0
		for range 60 {
			batch := make([]input.Event, 1+r.IntN(5))
			for i := range batch {
				seq++
				key := []string{"f1", "f2"}[r.IntN(2)]
				batch[i] = line(fmt.Sprintf("p%d", r.IntN(4)), seq)
				batch[i].Pos.Key = key
				m.keyOf[seq], m.last[key] = key, seq
			}
			// An event may leave its position to a later one of its
			// source in the same batch; the last one of each carries it.
			for i := range batch {
				later := false
				for _, ev := range batch[i+1:] {
					later = later || ev.Pos.Key == batch[i].Pos.Key
				}
				if later && r.IntN(2) == 0 {
					batch[i].Pos = input.Position{}
				}
			}
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
			m.observe(c.Process(batch, 0, now))
		}
		m.observe(c.Flush(nil, now))
		for key, at := range m.last {
			if m.stored[key] != at {
				t.Fatalf("seed %d: after Flush %s is stored at %d, want its last event %d", seed, key, m.stored[key], at)
			}
		}
		if c.Holding() || c.Stats().Steps[0].In != uint64(seq) {
			t.Fatalf("seed %d: after Flush holding=%v, in=%d of %d", seed, c.Holding(), c.Stats().Steps[0].In, seq)
		}
		checkIdentity(t, c)
	}
}

type posModel struct {
	t      *testing.T
	seed   uint64
	keyOf  map[int]string // line → its source
	stored map[string]int // source → last line stored
	last   map[string]int // source → last line read
}

// observe takes one Process result as one transaction: its events and its
// positions are stored together, so an event is checked against the
// positions stored before it.
func (m *posModel) observe(out []input.Event) {
	m.t.Helper()
	for _, ev := range out {
		if ev.Payload == nil {
			continue
		}
		var e struct {
			Line int `json:"_line"`
		}
		if err := json.Unmarshal(ev.Payload, &e); err != nil {
			m.t.Fatal(err)
		}
		if key := m.keyOf[e.Line]; m.stored[key] >= e.Line {
			m.t.Fatalf("seed %d: line %d of %s emitted after its position %d was stored: a crash would have lost it", m.seed, e.Line, key, m.stored[key])
		}
	}
	for _, ev := range out {
		if ev.Pos.Key != "" {
			var n int
			if err := json.Unmarshal(ev.Pos.State, &n); err != nil {
				m.t.Fatal(err)
			}
			m.stored[ev.Pos.Key] = max(m.stored[ev.Pos.Key], n)
		}
	}
}

// checkIdentity: in = out + dropped + folded + sampled out + held, for
// every processor.
func checkIdentity(t *testing.T, c *Chain) {
	t.Helper()
	for _, s := range c.Stats().Steps {
		if s.In != s.Out+s.Dropped+s.Folded+s.SampledOut+s.Held {
			t.Fatalf("processors[%d] %s: in %d != out %d + dropped %d + folded %d + sampled out %d + held %d",
				s.Step, s.Kind, s.In, s.Out, s.Dropped, s.Folded, s.SampledOut, s.Held)
		}
	}
}

// The chain reuses an event's storage for the next one: nothing of one
// event, whatever became of it, may show in a later one.
func TestNoFieldCarriesOverToTheNextEvent(t *testing.T) {
	raw := func(s string) input.Event { return input.Event{Payload: []byte(s)} }
	c := mustChain(t,
		Step{Parse: &ParseConfig{Format: "json"}},
		Step{Drop: `payload.level == "debug"`},
	)
	in := []input.Event{
		raw(`{"a":1,"payload":"{\"level\":\"info\"}"}`),
		raw(`{"b":2,"payload":"{\"level\":\"debug\"}"}`),
		raw(`{"c":3,"payload":"not json"}`),
		raw(`{"d":4,"payload":`), // undecodable after d
		raw(`{"payload":"{}"}`),
	}
	out := c.Process(in, 0, t0)
	want := []string{
		`{"a":1,"payload":{"level":"info"}}`,
		``,
		`{"_parse_error":"json: invalid JSON at byte 0","c":3,"payload":"not json"}`,
		`{"d":4,"payload":`,
		`{"payload":{}}`,
	}
	for i, w := range want {
		if got := string(out[i].Payload); got != w {
			t.Errorf("event %d = %s; want %s", i, got, w)
		}
	}

	// A held event keeps its fields while later events pass the chain.
	c = mustChain(t,
		Step{Parse: &ParseConfig{Format: "json"}},
		Step{Dedup: &DedupConfig{Key: "payload.k", Window: time.Hour}},
	)
	out = c.Process([]input.Event{
		raw(`{"x":1,"payload":"{\"k\":\"a\"}"}`),
		raw(`{"y":2,"payload":"{\"k\":\"a\"}"}`),
		raw(`{"z":3,"payload":"{\"k\":\"b\"}"}`),
	}, 0, t0)
	out = c.Flush(out[:0], t0)
	held := []string{
		`{"_first_ts":1767323045000,"_last_ts":1767323045000,"_repeats":2,"payload":{"k":"a"},"x":1}`,
		`{"_first_ts":1767323045000,"_last_ts":1767323045000,"_repeats":1,"payload":{"k":"b"},"z":3}`,
	}
	if len(out) != len(held) {
		t.Fatalf("flushed %d events; want %d", len(out), len(held))
	}
	for i, w := range held {
		if got := string(out[i].Payload); got != w {
			t.Errorf("held event %d = %s; want %s", i, got, w)
		}
	}
}

// An expression can store the event in itself; the next event must still
// be read into a map of its own.
func TestAnEventStoredInItselfLeavesTheNextOneWhole(t *testing.T) {
	c := mustChain(t,
		Step{Parse: &ParseConfig{Format: "json"}},
		Step{SetExpr: map[string]string{"payload": `payload.self ? $env : payload`}},
	)
	raw := func(s string) input.Event { return input.Event{Payload: []byte(s)} }
	in := []input.Event{
		raw(`{"a":1,"payload":"{\"self\":true}"}`),
		raw(`{"b":2,"payload":"{\"self\":false,\"k\":\"v\"}"}`),
		raw(`{"c":3,"payload":"{\"self\":false}"}`),
	}
	out := c.Process(in, 0, t0)
	want := []string{
		`{"a":1,"payload":"{\"self\":true}"}`, // no encoding: the input's bytes
		`{"b":2,"payload":{"k":"v","self":false}}`,
		`{"c":3,"payload":{"self":false}}`,
	}
	for i, w := range want {
		if got := string(out[i].Payload); got != w {
			t.Errorf("event %d = %s; want %s", i, got, w)
		}
	}
}
