package processing

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// t0 is the tests' clock origin.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// line is a file input's event for text, at position key:off.
func line(text string, off int) input.Event {
	b, _ := json.Marshal(map[string]any{"_file": "/var/log/app.log", "_line": off, "_ts": int64(1700000000000), "payload": text})
	st, _ := json.Marshal(off)
	return input.Event{Payload: b, Pos: input.Position{Key: "f1", State: st}}
}

func mustChain(t testing.TB, steps ...Step) *Chain {
	t.Helper()
	c, err := New(steps, Settings{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// runOne processes one event and returns its fields, or nil when the
// event left no payload.
func runOne(t testing.TB, c *Chain, ev input.Event) map[string]any {
	t.Helper()
	out := c.Process([]input.Event{ev}, 0, t0)
	if len(out) == 0 || out[0].Payload == nil {
		return nil
	}
	m, err := decodeEvent(out[0].Payload)
	if err != nil {
		t.Fatalf("output is not a JSON object: %v: %s", err, out[0].Payload)
	}
	return m
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
