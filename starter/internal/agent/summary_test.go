package agent

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// lockedBuffer is a log sink the agent's goroutines write while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// lines returns the logged lines containing s.
func (w *lockedBuffer) lines(s string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range strings.Split(w.b.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// statsInput is the fake input describing its counters, as every input does.
type statsInput struct {
	*fakeInput
	lines atomic.Int64
}

func (s *statsInput) Describe() component.Description {
	return component.Description{Values: input.Counts{LinesRead: s.lines.Load()}.Values()}
}

// hasField reports whether a text-handler line has the field key=value.
func hasField(line, field string) bool {
	for _, f := range strings.Fields(line) {
		if f == field {
			return true
		}
	}
	return false
}

const summaryMsg = "non-zero metrics since the last summary"

// One line per 30 s with the deltas that are not zero, and no line while
// nothing moves: the clock is the bubble's, so "30 s" is exact.
func TestSummaryLogsNonZeroDeltasEvery30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		in := &statsInput{fakeInput: &fakeInput{}}
		opts := newOptions(t, cfg, home, in, newFakeSender(nil))
		opts.Inputs = input.NewRegistry(fakeFactory{in: in})
		var logs lockedBuffer
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		start := time.Now()
		h := startRuntime(t, opts)
		stopped := false
		defer func() {
			if !stopped { // a failed check must not leave the bubble's goroutines behind
				h.cancel()
				<-h.done
			}
		}()

		in.push(lineEvents("a.log", 0, 10)...)
		in.lines.Add(10)
		transporttest.Eventually(t, 5*time.Second, "10 acks", func() bool { return h.rt.Snapshot().Acked == 10 })
		time.Sleep(time.Until(start.Add(summaryEvery + time.Millisecond)))
		synctest.Wait()
		got := logs.lines(summaryMsg)
		if len(got) != 1 {
			t.Fatalf("after 30s: %d summary lines, want 1:\n%s", len(got), strings.Join(got, "\n"))
		}
		for _, want := range []string{"interval=30s", "events_read=10", "rows_appended=10", "acked=10", "input_lines=10"} {
			if !hasField(got[0], want) {
				t.Fatalf("summary %q lacks %q", got[0], want)
			}
		}
		for _, zero := range []string{"failed=", "dead=", "retries=", "send_errors=", "wal_pending=", "backpressure="} {
			if strings.Contains(got[0], zero) {
				t.Fatalf("summary %q logs %q though it did not change", got[0], zero)
			}
		}

		// Idle for two more periods: nothing to say.
		time.Sleep(2 * summaryEvery)
		synctest.Wait()
		if got := logs.lines(summaryMsg); len(got) != 1 {
			t.Fatalf("idle: %d summary lines, want still 1:\n%s", len(got), strings.Join(got, "\n"))
		}

		in.push(lineEvents("a.log", 10, 15)...)
		transporttest.Eventually(t, 5*time.Second, "15 acks", func() bool { return h.rt.Snapshot().Acked == 15 })
		time.Sleep(summaryEvery)
		synctest.Wait()
		got = logs.lines(summaryMsg)
		if len(got) != 2 || !hasField(got[1], "events_read=5") || strings.Contains(got[1], "input_lines=") {
			t.Fatalf("after new events: want a second line with only their deltas:\n%s", strings.Join(got, "\n"))
		}
		stopped = true
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// The WAL counts and backpressure are gauges: logged with their value
// while non-zero or when they changed, so a backlog draining is seen.
func TestSummaryAttrsGauges(t *testing.T) {
	var idle summarySample
	if a := summaryAttrs(idle, idle); a != nil {
		t.Fatalf("nothing changed: %v, want no line", a)
	}
	backlog := summarySample{pending: 7, backpressure: true}
	if a := summaryAttrs(backlog, backlog); a != nil {
		t.Fatalf("unchanged backlog: %v, want no line", a)
	}
	text := func(attrs []any) string {
		var b bytes.Buffer
		slog.New(slog.NewTextHandler(&b, nil)).Info("x", attrs...)
		return b.String()
	}
	if got := text(summaryAttrs(idle, backlog)); !strings.Contains(got, "wal_pending=7") || !strings.Contains(got, "backpressure=true") {
		t.Fatalf("backlog building: %s", got)
	}
	if got := text(summaryAttrs(backlog, idle)); !strings.Contains(got, "wal_pending=0") || !strings.Contains(got, "backpressure=false") || strings.Contains(got, "wal_sending") {
		t.Fatalf("backlog drained: %s", got)
	}
}
