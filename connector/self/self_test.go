package self

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

// open returns a logger built around a hub (writing JSON to out as the
// agent's file would) and a self input opened on it.
func open(t *testing.T, mod func(*Config)) (*slog.Logger, *Input, *bytes.Buffer) {
	t.Helper()
	cfg := NewDefaultConfig()
	if mod != nil {
		mod(cfg)
	}
	hub := NewHub()
	var out bytes.Buffer
	log := slog.New(hub.Handler(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})))
	in, err := NewFactory(hub).Create(cfg, input.Settings{ID: "own"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(t.Context(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return log, in.(*Input), &out
}

func events(t *testing.T, in *Input) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range in.Drain(nil) {
		var m map[string]any
		if err := json.Unmarshal(ev.Payload, &m); err != nil {
			t.Fatalf("event %q: %v", ev.Payload, err)
		}
		out = append(out, m)
	}
	return out
}

// A record at or above the level is one event with time, level, msg,
// component and attrs; lower ones are not shipped; the file still gets
// what its own level lets through.
func TestRecordsBecomeEvents(t *testing.T) {
	log, in, out := open(t, nil)
	ilog := log.With(slog.String("input_id", "app"))
	ilog.WithGroup("file").Warn("cannot open", slog.String("path", "/x"), slog.Duration("retry_in", 1500*time.Millisecond), slog.Any("error", errors.New("denied")))
	log.Info("below warn")
	log.Error("engine gone", slog.Int("attempt", 3))
	got := events(t, in)
	if len(got) != 2 {
		t.Fatalf("got %d events, want 2: %v", len(got), got)
	}
	e := got[0]
	attrs, _ := e[KeyAttrs].(map[string]any)
	file, _ := attrs["file"].(map[string]any)
	if e[KeyLevel] != "WARN" || e[KeyMsg] != "cannot open" || e[KeyComponent] != "input:app" || attrs["input_id"] != "app" ||
		file["path"] != "/x" || file["retry_in"] != "1.5s" || file["error"] != "denied" {
		t.Errorf("event %v", e)
	}
	if _, err := time.Parse(time.RFC3339Nano, e[KeyTime].(string)); err != nil {
		t.Errorf("time %v: %v", e[KeyTime], err)
	}
	if got[1][KeyComponent] != "agent" || got[1][KeyLevel] != "ERROR" {
		t.Errorf("event %v", got[1])
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("the file handler got %d records, want 3: %s", n, out)
	}
}

// level: debug ships records the file's own level hides.
func TestLevelIndependentOfFile(t *testing.T) {
	log, in, out := open(t, func(c *Config) { c.Level = "debug" })
	log.Debug("detail")
	if got := events(t, in); len(got) != 1 || got[0][KeyMsg] != "detail" {
		t.Fatalf("events %v", got)
	}
	if out.Len() != 0 {
		t.Fatalf("the file got a debug record: %s", out)
	}
}

// An unshipped logger (and everything derived from it) writes the file
// but feeds no sink: the loop protection.
func TestUnshippedNeverFedBack(t *testing.T) {
	log, in, out := open(t, nil)
	u := Unshipped(log.With(slog.String("output_type", "edgesocket")))
	u.Warn("engine unavailable")
	u.WithGroup("g").With("k", 1).Error("send failed")
	log.Warn("shipped")
	got := events(t, in)
	if len(got) != 1 || got[0][KeyMsg] != "shipped" {
		t.Fatalf("events %v", got)
	}
	if !strings.Contains(out.String(), "engine unavailable") || !strings.Contains(out.String(), "send failed") {
		t.Fatalf("the file lost unshipped records: %s", out)
	}
	plain := slog.New(slog.DiscardHandler)
	if Unshipped(plain) != plain {
		t.Fatal("Unshipped changed a logger that is not the hub's")
	}
}

// A full queue drops and counts, and logging never waits for the input.
func TestFullQueueDropsAndCounts(t *testing.T) {
	log, in, _ := open(t, func(c *Config) { c.MaxPendingBytes = minPendingBytes })
	msg := strings.Repeat("x", 1000)
	const n = 200 // far more than 16 KiB
	for range n {
		log.Warn(msg)
	}
	s := in.Stats()
	if s.DroppedQueueFull == 0 || s.LinesRead+s.DroppedQueueFull != n {
		t.Fatalf("stats %+v, want drops and %d records in all", s, n)
	}
	if b := in.q.Bytes(); b > minPendingBytes {
		t.Fatalf("queue holds %d bytes, over its bound", b)
	}
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if v, _ := d.Value(input.KeyDroppedFull); v != s.DroppedQueueFull {
		t.Fatalf("described drops %d, counted %d", v, s.DroppedQueueFull)
	}
	if got := len(events(t, in)); int64(got) != s.LinesRead {
		t.Fatalf("%d events for %d records taken", got, s.LinesRead)
	}
}

// Close detaches: later records go nowhere, and a closed input's level
// no longer makes the logger build records.
func TestCloseDetaches(t *testing.T) {
	log, in, _ := open(t, func(c *Config) { c.Level = "debug" })
	_ = in.Close()
	_ = in.Close()
	log.Error("after close")
	if s := in.Stats(); s.LinesRead != 0 || s.DroppedQueueFull != 0 {
		t.Fatalf("stats %+v after Close", s)
	}
	if log.Enabled(t.Context(), slog.LevelDebug) {
		t.Fatal("debug still enabled with no sink")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want []string
	}{
		{"defaults", func(*Config) {}, nil},
		{"level", func(c *Config) { c.Level = "trace" }, []string{"level:"}},
		{"both", func(c *Config) { c.Level, c.MaxPendingBytes = "", 1 }, []string{"level:", "max-pending-bytes:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewDefaultConfig()
			tt.mod(c)
			err := c.Validate()
			if (err != nil) != (len(tt.want) > 0) {
				t.Fatalf("err %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
		})
	}
	if _, err := NewFactory(nil).Create(NewDefaultConfig(), input.Settings{}); !errors.Is(err, ErrNoHub) {
		t.Fatalf("create without a hub: %v", err)
	}
}

// Many goroutines log while inputs attach and detach: no race, no lost
// count (every record offered is taken or dropped).
func TestConcurrentLogging(t *testing.T) {
	log, in, _ := open(t, func(c *Config) { c.MaxPendingBytes = minPendingBytes })
	const workers, each = 8, 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			extra, err := New(NewDefaultConfig(), input.Settings{}, in.hub)
			if err != nil {
				t.Error(err)
				return
			}
			_ = extra.Open(t.Context(), input.OpenOptions{})
			_ = extra.Close()
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				log.Warn("busy", slog.Int("worker", w), slog.Int("i", i))
			}
		})
	}
	wg.Wait()
	<-done
	if s := in.Stats(); s.LinesRead+s.DroppedQueueFull != workers*each {
		t.Fatalf("stats %+v, want %d records in all", s, workers*each)
	}
}
