package stdin

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

func openPipe(t *testing.T, mod func(*Config)) (*Input, *io.PipeWriter) {
	t.Helper()
	cfg := NewDefaultConfig()
	if mod != nil {
		mod(cfg)
	}
	pr, pw := io.Pipe()
	in, err := New(cfg, input.Settings{ID: "in"}, pr)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(t.Context(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); pw.Close() })
	return in, pw
}

func pollN(t *testing.T, in *Input, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		evs, _ := in.Poll(t.Context(), nil, 100)
		for _, e := range evs {
			out = append(out, string(e.Payload))
		}
		if len(evs) == 0 {
			select {
			case <-in.Wakeup():
			case <-deadline:
				t.Fatalf("got %d of %d: %q", len(out), n, out)
			}
		}
	}
	return out
}

// Lines become events in order; json format keeps objects; EOF is seen.
func TestLines(t *testing.T) {
	in, pw := openPipe(t, func(c *Config) { c.Format = "json" })
	go func() {
		_, _ = io.WriteString(pw, "{\"a\": 1}\nplain\n")
		pw.Close()
	}()
	got := pollN(t, in, 2)
	if got[0] != `{"a":1}` || !strings.Contains(got[1], `"parse_error":"not a JSON object","message":"plain"`) {
		t.Fatalf("events %q", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !in.EOF() {
		if time.Now().After(deadline) {
			t.Fatal("EOF not seen")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := in.Stats(); s.LinesRead != 2 || s.ParseErrors != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// With nothing polled the reader stops at max-pending-bytes and the
// writer blocks; once polled every line comes, once, in order.
func TestBackpressure(t *testing.T) {
	in, pw := openPipe(t, func(c *Config) { c.MaxPendingBytes, c.MaxLineBytes = 64<<10, 1024 })
	const n = 2000
	line := strings.Repeat("y", 200)
	wrote := make(chan int, 1)
	go func() {
		i := 0
		for ; i < n; i++ {
			if _, err := fmt.Fprintf(pw, "%05d%s\n", i, line); err != nil {
				break
			}
		}
		wrote <- i
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !in.q.Full(300) {
		if time.Now().After(deadline) {
			t.Fatal("the queue never filled")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b := in.q.Bytes(); b > 64<<10 {
		t.Fatalf("queue holds %d bytes over its bound", b)
	}
	select {
	case i := <-wrote:
		t.Fatalf("the writer wrote all %d lines with nothing polled", i)
	default:
	}
	got := pollN(t, in, n)
	var want, seen []string
	for i := range n {
		want = append(want, fmt.Sprintf("%05d", i))
		seen = append(seen, got[i][strings.Index(got[i], `"message":"`)+11:][:5])
	}
	if !slices.Equal(seen, want) {
		t.Fatal("lines out of order or missing")
	}
}

func TestValidate(t *testing.T) {
	c := NewDefaultConfig()
	c.Format, c.MaxLineBytes = "xml", 1
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "format:") || !strings.Contains(err.Error(), "max-line-bytes:") {
		t.Fatalf("%v", err)
	}
}
