package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/transport"
)

func TestConsoleLogsEachPayload(t *testing.T) {
	var buf bytes.Buffer
	s := New(slog.New(slog.NewJSONHandler(&buf, nil)))
	res, err := s.Send(context.Background(), []transport.Batch{{ID: 1, Payload: []byte(`{"a":1}`)}, {ID: 2, Payload: []byte("two")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("%+v", r)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %q", lines)
	}
	var rec struct {
		Msg     string `json:"msg"`
		Payload string `json:"payload"`
		BatchID int64  `json:"batch_id"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec.Msg != "EDGE_CONSOLE_OUTPUT" || rec.Payload != `{"a":1}` || rec.BatchID != 1 {
		t.Fatalf("record %+v, %v", rec, err)
	}
}

func TestConsoleClosedAndCancelled(t *testing.T) {
	s := New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := s.Send(ctx, []transport.Batch{{ID: 1}})
	if !errors.Is(err, context.Canceled) || res[0].Outcome != transport.NotSent {
		t.Fatalf("%+v %v", res, err)
	}
	_ = s.Close()
	_ = s.Close()
	if _, err := s.Send(context.Background(), []transport.Batch{{ID: 1}}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
