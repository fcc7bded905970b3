package agent

import (
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// summaryEvery is how often the agent logs what moved, like Filebeat's
// "Non-zero metrics in the last 30s": often enough to see a host is
// shipping, rare enough to stay a few lines an hour per quiet agent.
const summaryEvery = 30 * time.Second

// summaryCounters names the monotonic counters of a summary, in the
// order they are logged.
var summaryCounters = [...]string{
	"events_read", "rows_appended", "acked", "failed", "dead", "dropped",
	"retries", "send_errors", "reconnects", "commits",
	"input_lines", "input_bytes", "truncated_lines", "file_rotations", "file_truncations", "input_errors",
}

// inputCounters is where the input's counters start in summaryCounters.
const inputCounters = 10

// summaryInputKeys are the status keys (component.Value.Key) of the
// inputs' summed figures logged from inputCounters on; a figure no input
// reports stays 0 and is not logged.
var summaryInputKeys = [len(summaryCounters) - inputCounters]string{
	input.KeyLinesRead, input.KeyBytesRead, input.KeyTruncatedLines, "rotations", "truncations", input.KeyErrors,
}

// summarySample is what one summary compares with the previous one:
// counters (logged as deltas) and gauges (logged as values).
type summarySample struct {
	counters         [len(summaryCounters)]uint64
	pending, sending int64
	backpressure     bool
}

func sampleOf(st Status) summarySample {
	s := summarySample{
		counters: [len(summaryCounters)]uint64{
			st.EventsRead, st.RowsAppended, st.Acked, st.Failed, st.Dead, st.Dropped,
			st.Retries, st.SendErrors, st.Reconnects, st.Commits,
		},
		pending:      st.Queue.Pending,
		sending:      st.Queue.Sending,
		backpressure: st.Backpressure,
	}
	if in := st.Input; in != nil {
		for i, key := range summaryInputKeys {
			v, _ := in.Value(key)
			s.counters[inputCounters+i] = uint64(max(0, v))
		}
	}
	return s
}

// summaryAttrs returns the attributes of the line summarising what
// changed from prev to cur, or nil when nothing did. Counters appear as
// non-zero deltas; the WAL counts and backpressure appear with their
// current value when they are non-zero or changed, so a backlog draining
// to 0 or backpressure ending is seen too.
func summaryAttrs(prev, cur summarySample) []any {
	var attrs []any
	for i, name := range summaryCounters {
		if d := cur.counters[i] - prev.counters[i]; d != 0 {
			attrs = append(attrs, slog.Uint64(name, d))
		}
	}
	changed := len(attrs) > 0 || cur.pending != prev.pending || cur.sending != prev.sending ||
		cur.backpressure != prev.backpressure
	if !changed {
		return nil
	}
	if cur.pending != 0 || cur.pending != prev.pending {
		attrs = append(attrs, slog.Int64("wal_pending", cur.pending))
	}
	if cur.sending != 0 || cur.sending != prev.sending {
		attrs = append(attrs, slog.Int64("wal_sending", cur.sending))
	}
	if cur.backpressure || cur.backpressure != prev.backpressure {
		attrs = append(attrs, slog.Bool("backpressure", cur.backpressure))
	}
	return attrs
}

// startSummary starts the goroutine logging, every summaryEvery until
// the returned stop is called, one INFO line with what moved since the
// previous line; nothing when nothing did. It reads only Snapshot, so it
// never takes the loop's time. The baseline is taken here, before the
// loop turns, so the first line counts everything read after start-up.
func (r *Agent) startSummary() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	prev, since := sampleOf(r.Snapshot()), r.now()
	tick := time.NewTicker(summaryEvery)
	go func() {
		defer close(done)
		defer tick.Stop()
		r.summarize(quit, tick.C, prev, since)
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (r *Agent) summarize(stop <-chan struct{}, tick <-chan time.Time, prev summarySample, since time.Time) {
	for {
		select {
		case <-stop:
			return
		case <-tick:
		}
		cur, now := sampleOf(r.Snapshot()), r.now()
		if attrs := summaryAttrs(prev, cur); attrs != nil {
			// The interval is measured, not assumed: a suspended host or a
			// slow tick shows as a longer one.
			head := []any{slog.Duration("interval", now.Sub(since).Round(time.Second))}
			r.log.Info("non-zero metrics since the last summary", append(head, attrs...)...)
		}
		prev, since = cur, now
	}
}
