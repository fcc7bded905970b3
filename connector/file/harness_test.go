package file

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// rec is one decoded line object of an event.
type rec struct {
	Index   int             `json:"_index"`
	File    string          `json:"_file"`
	Line    int64           `json:"_line"`
	Offset  int64           `json:"_offset"`
	TS      int64           `json:"_ts"`
	Payload json.RawMessage `json:"payload"`
}

func (r rec) text() string {
	var s string
	if err := json.Unmarshal(r.Payload, &s); err != nil {
		return string(r.Payload)
	}
	return s
}

// harness plays the scheduler: it polls, keeps the last position per key
// (nil = delete) as the WAL would, and restarts the input from them.
type harness struct {
	t     testing.TB
	dir   string
	cfg   *Config
	in    *Input
	clock time.Time
	saved map[string][]byte
	first bool
	step  time.Duration
	log   *slog.Logger // the input's logger; nil discards
	// settings are handed to New; the zero value means ID "test".
	settings input.Settings
	// losses are the input's loss reports (input.Event.Loss) applied.
	losses []input.Loss
}

func newHarness(t testing.TB, mutate func(c *Config)) *harness {
	t.Helper()
	dir := t.TempDir()
	cfg := NewDefaultConfig()
	cfg.Paths = []string{filepath.Join(dir, "*.log")}
	cfg.ReadFromBeginning = true
	cfg.UseFsnotify = false
	cfg.GlobScanInterval = 1 * time.Millisecond
	if mutate != nil {
		mutate(cfg)
	}
	h := &harness{t: t, dir: dir, cfg: cfg, clock: time.Unix(1_700_000_000, 0), saved: map[string][]byte{}, first: true, step: 10 * time.Millisecond}
	t.Cleanup(func() {
		if h.in != nil {
			_ = h.in.Close()
		}
	})
	return h
}

func (h *harness) path(name string) string { return filepath.Join(h.dir, name) }

func (h *harness) open() {
	h.t.Helper()
	set := h.settings
	if set.ID == "" {
		set.ID = "test"
	}
	set.Logger = h.log
	in, err := New(h.cfg, set)
	if err != nil {
		h.t.Fatal(err)
	}
	in.now = func() time.Time { return h.clock }
	saved := make(map[string][]byte, len(h.saved))
	for k, v := range h.saved {
		saved[k] = v
	}
	if err := in.Open(context.Background(), input.OpenOptions{Saved: saved, FirstStart: h.first}); err != nil {
		h.t.Fatal(err)
	}
	h.first = false
	h.in = in
}

func (h *harness) apply(evs []input.Event) []rec {
	h.t.Helper()
	var out []rec
	for i, ev := range evs {
		if ev.Loss != nil {
			if ev.Payload != nil {
				h.t.Fatalf("loss report with a payload: %s", ev.Payload)
			}
			h.losses = append(h.losses, *ev.Loss)
		}
		if ev.Pos.Key == "" {
			// Only a line event may leave its position to the next
			// event, and only to one of the same file in the same Poll
			// (input.Event: the last of a run from one file carries it).
			if ev.Payload == nil || i+1 == len(evs) || evs[i+1].Payload == nil ||
				decodeEvent(h.t, ev.Payload)[0].File != decodeEvent(h.t, evs[i+1].Payload)[0].File {
				h.t.Fatalf("event without position key, not followed in its Poll by one of the same file: %s", ev.Payload)
			}
			out = append(out, decodeEvent(h.t, ev.Payload)...)
			continue
		}
		if os.Getenv("MODEL_LIVE") != "" {
			println("POS", ev.Pos.Key, string(ev.Pos.State))
		}
		if ev.Pos.State == nil {
			delete(h.saved, ev.Pos.Key)
		} else {
			h.saved[ev.Pos.Key] = ev.Pos.State
		}
		if ev.Payload == nil {
			continue
		}
		if bytes.ContainsAny(ev.Payload, "\n\r") {
			h.t.Fatalf("payload with raw newline: %q", ev.Payload)
		}
		out = append(out, decodeEvent(h.t, ev.Payload)...)
	}
	return out
}

func decodeEvent(t testing.TB, p []byte) []rec {
	t.Helper()
	if len(p) > 0 && p[0] == '[' {
		var rs []rec
		if err := json.Unmarshal(p, &rs); err != nil {
			t.Fatalf("bad event %s: %v", p, err)
		}
		return rs
	}
	var r rec
	if err := json.Unmarshal(p, &r); err != nil {
		t.Fatalf("bad event %s: %v", p, err)
	}
	return []rec{r}
}

// poll runs one Poll and advances the clock.
func (h *harness) poll(max int) []rec {
	h.t.Helper()
	evs, err := h.in.Poll(context.Background(), nil, max)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(evs) > max {
		h.t.Fatalf("poll returned %d events, max %d", len(evs), max)
	}
	h.clock = h.clock.Add(h.step)
	return h.apply(evs)
}

// pollAll polls until several consecutive polls return nothing.
func (h *harness) pollAll() []rec {
	h.t.Helper()
	var out []rec
	for idle, i := 0, 0; idle < 4; i++ {
		if i > 100000 {
			h.t.Fatal("input never went idle")
		}
		evs, err := h.in.Poll(context.Background(), nil, 64)
		if err != nil {
			h.t.Fatal(err)
		}
		h.clock = h.clock.Add(h.step)
		if len(evs) == 0 {
			idle++
			continue
		}
		idle = 0
		out = append(out, h.apply(evs)...)
	}
	return out
}

// restart drains, closes and reopens from the saved positions.
func (h *harness) restart() []rec {
	h.t.Helper()
	out := h.apply(h.in.Drain(nil))
	if err := h.in.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
	return out
}

func (h *harness) write(name, s string) {
	h.t.Helper()
	f, err := os.OpenFile(h.path(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		h.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		h.t.Fatal(err)
	}
}

func texts(rs []rec) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.text())
	}
	return out
}

func inputSettings() input.Settings { return input.Settings{ID: "test"} }

func openOpts(first bool) input.OpenOptions { return input.OpenOptions{FirstStart: first} }
