package console

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/edge-agent/edge-agent/transport"
)

// Message is the log message of every record, as the Java agent logs it.
const Message = "EDGE_CONSOLE_OUTPUT"

// Sender logs payloads. It is safe for concurrent use.
type Sender struct {
	log    *slog.Logger
	closed atomic.Bool
}

var _ transport.Sender = (*Sender)(nil)

// New returns a Sender logging at Info to log (nil discards).
func New(log *slog.Logger) *Sender {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sender{log: log}
}

// Send logs one record per batch (message EDGE_CONSOLE_OUTPUT, attributes
// batch_id and payload) and reports each Received. After Close, or once
// ctx is done, the remaining batches are NotSent.
func (s *Sender) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	results := make([]transport.Result, len(batches))
	for i, b := range batches {
		results[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent}
	}
	for i, b := range batches {
		if s.closed.Load() {
			return results, transport.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return results, err
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, Message,
			slog.Int64("batch_id", b.ID), slog.String("payload", string(b.Payload)))
		results[i].Outcome = transport.Received
	}
	return results, nil
}

// Close makes later Sends fail with transport.ErrClosed. Idempotent.
func (s *Sender) Close() error {
	s.closed.Store(true)
	return nil
}
