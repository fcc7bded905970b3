package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/edge-agent/edge-agent/transport"
)

// TestGracefulStopChargesNoAttempt: batches on the wire when the caller
// stops (Close, or ctx cancelled by the agent's shutdown) come back
// NotSent. The engine did nothing wrong, so no attempt may be charged.
func TestGracefulStopChargesNoAttempt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stop    func(*Client, context.CancelFunc)
		wantErr error
	}{
		{"Close", func(c *Client, _ context.CancelFunc) { _ = c.Close() }, transport.ErrClosed},
		{"ctx cancelled", func(_ *Client, cancel context.CancelFunc) { cancel() }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				read := make(chan string, 8)
				e := &pipeEngine{read: read, respond: func(_ int, line string) string {
					if strings.HasPrefix(line, "__AUTH__:") {
						return "ACK"
					}
					return silent // the engine is busy; the agent stops meanwhile
				}}
				defer e.stop()
				c := pipeClient(t, e)
				defer c.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				type sent struct {
					res []transport.Result
					err error
				}
				done := make(chan sent, 1)
				go func() {
					res, err := c.Send(ctx, batches(1))
					done <- sent{res, err}
				}()
				<-read // batch 1 is on the wire, unanswered
				tc.stop(c, cancel)
				got := <-done
				if !errors.Is(got.err, tc.wantErr) {
					t.Fatalf("Send error = %v, want %v", got.err, tc.wantErr)
				}
				if r := got.res[0]; r.Outcome != transport.NotSent {
					t.Fatalf("result %+v, want NotSent: a graceful stop must not charge an attempt", r)
				}
			})
		})
	}
}
