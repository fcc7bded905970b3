//go:build linux

package journald

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/journald/journaltest"
)

// logBuf is a concurrency-safe log sink the tests read.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rig is one test journal directory and the input reading it.
type rig struct {
	t     *testing.T
	tools journaltest.Paths
	dir   string
	log   *logBuf
	in    *Input
	// pos is the last position the input returned (what the WAL keeps).
	pos []byte
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return &rig{t: t, tools: journaltest.Tools(t), dir: t.TempDir(), log: &logBuf{}}
}

// config returns a config reading the rig's directory from its beginning,
// with short timeouts.
func (r *rig) config() *Config {
	c := NewDefaultConfig()
	c.Directory = r.dir
	c.ReadFromBeginning = true
	c.RestartBackoff = 10 * time.Millisecond
	c.RestartBackoffMax = 100 * time.Millisecond
	return c
}

// write appends entries to the named journal file of the directory.
func (r *rig) write(file string, entries ...journaltest.Entry) {
	r.t.Helper()
	r.tools.Write(r.t, filepath.Join(r.dir, file), entries...)
}

func inputSettings(r *rig) input.Settings {
	return input.Settings{ID: "j", Logger: slog.New(slog.NewJSONHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

func openFirst() input.OpenOptions { return input.OpenOptions{FirstStart: true} }

// open starts an input with cfg, from the rig's saved position if any.
func (r *rig) open(cfg *Config) *Input {
	r.t.Helper()
	in, err := New(cfg, inputSettings(r))
	if err != nil {
		r.t.Fatal(err)
	}
	opts := input.OpenOptions{FirstStart: r.pos == nil}
	if r.pos != nil {
		opts.Saved = map[string][]byte{posKey: r.pos}
	}
	if err := in.Open(context.Background(), opts); err != nil {
		r.t.Fatal(err)
	}
	r.in = in
	r.t.Cleanup(func() { _ = in.Close() })
	return in
}

// collect polls until n data events came (or the deadline), keeping the
// positions, and returns the event objects (a group as several).
func (r *rig) collect(n int, within time.Duration) []map[string]any {
	r.t.Helper()
	var out []map[string]any
	deadline := time.After(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	events := 0
	for events < n {
		evs, err := r.in.Poll(context.Background(), nil, 100)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Pos.Key != "" {
				if ev.Pos.Key != posKey {
					r.t.Fatalf("position key %q", ev.Pos.Key)
				}
				r.pos = ev.Pos.State
			}
			if ev.Payload == nil {
				continue
			}
			events++
			out = append(out, decodeEvent(r.t, ev.Payload)...)
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-deadline:
			r.t.Fatalf("%d of %d events after %v; log:\n%s", events, n, within, r.log.String())
		case <-r.in.Wakeup():
		case <-tick.C:
		}
	}
	return out
}

// quiet polls for a while and fails on any data event.
func (r *rig) quiet(d time.Duration) {
	r.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		evs, _ := r.in.Poll(context.Background(), nil, 100)
		for _, ev := range evs {
			if ev.Payload != nil {
				r.t.Fatalf("unexpected event %s", ev.Payload)
			}
			if ev.Pos.Key != "" {
				r.pos = ev.Pos.State
			}
		}
		select {
		case <-r.in.Wakeup():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func decodeEvent(t *testing.T, p []byte) []map[string]any {
	t.Helper()
	if !json.Valid(p) || bytes.IndexByte(p, '\n') >= 0 {
		t.Fatalf("event is not one line of valid JSON: %q", p)
	}
	if p[0] == '[' {
		var g []map[string]any
		if err := json.Unmarshal(p, &g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	var o map[string]any
	if err := json.Unmarshal(p, &o); err != nil {
		t.Fatal(err)
	}
	return []map[string]any{o}
}

func payloads(objs []map[string]any) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i], _ = o["payload"].(string)
	}
	return out
}

// msgs returns "<prefix> <i>" for i in [from, to).
func msgs(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s %d", prefix, i))
	}
	return out
}

// entries builds journal entries n = from..to-1 with msgs(prefix) and unit.
func entries(prefix string, from, to int, unit string) []journaltest.Entry {
	var out []journaltest.Entry
	for i := from; i < to; i++ {
		out = append(out, journaltest.NewEntry(i, unit, fmt.Sprintf("%s %d", prefix, i)))
	}
	return out
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}
