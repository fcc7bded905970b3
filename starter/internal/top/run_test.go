package top

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// counting answers a status whose events_read is 100·n² at the n-th reading;
// it fails the readings listed in fail (1-based).
type counting struct {
	mu   sync.Mutex
	n    int
	fail map[int]bool
}

func (c *counting) Status(context.Context) (api.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.fail[c.n] {
		return api.Status{}, errors.New("connection refused")
	}
	return api.Status{State: "running", Counters: &api.Counters{EventsRead: uint64(100 * c.n * c.n)}}, nil
}

func (c *counting) readings() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestPlainOnceWaitsOneIntervalForTheRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &counting{}
		var out bytes.Buffer
		start := time.Now()
		err := Plain(t.Context(), Options{Source: src, Interval: 2 * time.Second}, PlainOptions{Once: true}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("waited %s, want one interval", waited)
		}
		got := out.String()
		if src.readings() != 2 || strings.Count(got, "edge-agent ") != 1 || !strings.Contains(got, "input   in 150 ev/s") {
			t.Errorf("%d readings, output:\n%s", src.readings(), got)
		}
		if strings.Contains(got, "q quit") || strings.Contains(got, "\x1b") {
			t.Errorf("the plain frame has keys or escapes:\n%q", got)
		}
	})
}

func TestPlainPrintsAFrameEachInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &counting{fail: map[int]bool{3: true}}
		var mu sync.Mutex
		var out bytes.Buffer
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			done <- Plain(ctx, Options{Source: src, Interval: time.Second}, PlainOptions{Width: 80, Height: 24}, lockedWriter{&mu, &out})
		}()
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := out.String()
		mu.Unlock()
		frames := strings.Split(got, "\nedge-agent ")
		if len(frames) != 4 {
			t.Fatalf("%d frames in 3 intervals, want 4:\n%s", len(frames), got)
		}
		if !strings.Contains(frames[0], "in - ev/s") || !strings.Contains(frames[1], "in 300 ev/s") {
			t.Errorf("rates:\n%s", got)
		}
		if !strings.Contains(frames[2], "cannot read the agent (showing the last answer): connection refused") {
			t.Errorf("a failed reading is not shown:\n%s", frames[2])
		}
		if !strings.Contains(frames[3], "in 600 ev/s") {
			t.Errorf("after the failure (1200 events over 2 s):\n%s", frames[3])
		}
	})
}

func TestPlainFailsWhenTheFirstReadingFails(t *testing.T) {
	var out bytes.Buffer
	err := Plain(context.Background(), Options{Source: failing{}}, PlainOptions{Once: true}, &out)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || out.Len() != 0 {
		t.Errorf("err %v, output %q", err, out.String())
	}
	if err := Run(context.Background(), Options{Source: failing{}}, strings.NewReader(""), &out); err == nil || out.Len() != 0 {
		t.Errorf("Run: err %v, output %q", err, out.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
