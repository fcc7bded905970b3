package console

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/edge-agent/edge-agent/transport"
)

func batches(payloads ...string) []transport.Batch {
	out := make([]transport.Batch, len(payloads))
	for i, p := range payloads {
		out[i] = transport.Batch{ID: int64(i + 1), Payload: []byte(p)}
	}
	return out
}

func outcomes(res []transport.Result) []transport.Outcome {
	out := make([]transport.Outcome, len(res))
	for i, r := range res {
		out[i] = r.Outcome
	}
	return out
}

func sameOutcomes(got []transport.Result, want ...transport.Outcome) bool {
	o := outcomes(got)
	if len(o) != len(want) {
		return false
	}
	for i := range o {
		if o[i] != want[i] {
			return false
		}
	}
	return true
}

// countingWriter records every Write call, so a test can tell one write per
// Send from one per line.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestSendWritesEachPayloadAsOneLine(t *testing.T) {
	var out countingWriter
	s := New(&out)
	event := `{"_index":0,"_file":"/var/log/app.log","_line":1,"_offset":6,"_ts":1700000000000,"payload":"hello"}`
	group := `[{"_index":0,"payload":"a"},{"_index":1,"payload":"b"}]`
	res, err := s.Send(context.Background(), batches(event, group))
	if err != nil {
		t.Fatal(err)
	}
	if !sameOutcomes(res, transport.Received, transport.Received) || res[0].ID != 1 || res[1].ID != 2 {
		t.Fatalf("results %+v", res)
	}
	if want := event + "\n" + group + "\n"; out.String() != want {
		t.Fatalf("stdout %q, want %q", out.String(), want)
	}
	if out.writes != 1 {
		t.Errorf("%d writes for one Send, want 1 (buffered, flushed per Send)", out.writes)
	}

	// The buffer is reused: a second Send writes only its own lines.
	out.Reset()
	if _, err := s.Send(context.Background(), batches(`{"n":3}`)); err != nil {
		t.Fatal(err)
	}
	if out.String() != "{\"n\":3}\n" || out.writes != 2 {
		t.Errorf("second Send wrote %q in %d writes in all", out.String(), out.writes)
	}
}

// A payload spread over lines would break every line-based reader; valid
// JSON is compacted onto one line, anything else becomes a JSON string.
func TestSendKeepsOneLinePerEvent(t *testing.T) {
	var out bytes.Buffer
	s := New(&out)
	res, err := s.Send(context.Background(), batches("{\n  \"a\": [1,\n 2]\n}", "not\njson", `{"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if !sameOutcomes(res, transport.Received, transport.Received, transport.Received) {
		t.Fatalf("results %+v", res)
	}
	if want := "{\"a\":[1,2]}\n\"not\\njson\"\n{\"b\":2}\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
}

// failingWriter accepts limit bytes in all, then fails every write with err
// (as a pipe whose reader went away fails with EPIPE).
type failingWriter struct {
	bytes.Buffer
	limit int
	err   error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	room := w.limit - w.Len()
	if room >= len(p) {
		return w.Buffer.Write(p)
	}
	if room > 0 {
		w.Buffer.Write(p[:room])
	} else {
		room = 0
	}
	return room, w.err
}

func TestSendWriteErrorIsUnavailable(t *testing.T) {
	w := &failingWriter{err: syscall.EPIPE}
	s := New(w)
	res, err := s.Send(context.Background(), batches(`{"a":1}`, `{"b":2}`))
	if !errors.Is(err, transport.ErrUnavailable) || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Send error %v, want ErrUnavailable wrapping EPIPE", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "console output unavailable: write: ") || strings.Contains(msg, "engine") {
		t.Errorf("error text %q", msg)
	}
	if transport.IsFatal(err) {
		t.Errorf("a write error must not stop the agent: %v", err)
	}
	if !sameOutcomes(res, transport.NotSent, transport.NotSent) {
		t.Fatalf("results %+v: nothing reached the writer, so nothing is Received", res)
	}
}

// Lines the writer took before it failed are Received; the rest stay
// NotSent, so the scheduler keeps them in the WAL and sends them again.
func TestSendPartialWrite(t *testing.T) {
	w := &failingWriter{limit: len("{\"a\":1}\n{\"b\""), err: syscall.EPIPE}
	s := New(w)
	res, err := s.Send(context.Background(), batches(`{"a":1}`, `{"b":2}`, `{"c":3}`))
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Send error %v", err)
	}
	if !sameOutcomes(res, transport.Received, transport.NotSent, transport.NotSent) {
		t.Fatalf("results %v", outcomes(res))
	}

	// Once the writer works again, the cut line is finished first so the
	// stream stays one JSON value per line; the batch is then sent whole
	// again (at least once).
	w.limit = 1 << 20
	res, err = s.Send(context.Background(), []transport.Batch{{ID: 2, Payload: []byte(`{"b":2}`)}, {ID: 3, Payload: []byte(`{"c":3}`)}})
	if err != nil || !sameOutcomes(res, transport.Received, transport.Received) {
		t.Fatalf("after recovery: %v %v", outcomes(res), err)
	}
	if want := "{\"a\":1}\n{\"b\":2}\n{\"b\":2}\n{\"c\":3}\n"; w.String() != want {
		t.Errorf("stream %q, want %q", w.String(), want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n") {
		if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") {
			t.Errorf("torn line %q", line)
		}
	}
}

func TestConsoleClosedAndCancelled(t *testing.T) {
	var out bytes.Buffer
	s := New(&out)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := s.Send(ctx, []transport.Batch{{ID: 1, Payload: []byte("{}")}})
	if !errors.Is(err, context.Canceled) || res[0].Outcome != transport.NotSent {
		t.Fatalf("%+v %v", res, err)
	}
	_ = s.Close()
	_ = s.Close()
	if _, err := s.Send(context.Background(), []transport.Batch{{ID: 1, Payload: []byte("{}")}}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q after cancel or Close", out.String())
	}
}

// A Send that fails before finishing the line an earlier Send cut must
// keep what is left of it, or the stream would carry a torn line.
func TestSendFailsAgainInsideCutLine(t *testing.T) {
	w := &failingWriter{limit: len(`{"a"`), err: syscall.EPIPE}
	s := New(w)
	if _, err := s.Send(context.Background(), batches(`{"a":1}`)); err == nil {
		t.Fatal("first Send: no error")
	}
	w.limit = len(`{"a":`)
	if _, err := s.Send(context.Background(), batches(`{"a":1}`)); err == nil {
		t.Fatal("second Send: no error")
	}
	if _, err := s.Send(context.Background(), batches(`{"a":1}`)); err == nil {
		t.Fatal("third Send (no room at all): no error")
	}
	w.limit = 1 << 20
	if _, err := s.Send(context.Background(), batches(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":1}\n{\"a\":1}\n"; w.String() != want {
		t.Errorf("stream %q, want %q", w.String(), want)
	}
}
