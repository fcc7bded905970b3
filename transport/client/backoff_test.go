package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

// Reconnect attempts are spaced by the client's backoff Policy, jitter
// included: with the random source pinned to the largest shortening, each
// pause is exactly half of min(MaxBackoff, InitialBackoff·2^n).
func TestReconnectPausesFollowTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("engine.invalid:9999")
		cfg.InitialBackoff, cfg.MaxBackoff, cfg.MaxReconnectCycles = time.Second, 3*time.Second, 5
		var dials []time.Time
		cfg.Dial = func(context.Context, string, string) (net.Conn, error) {
			dials = append(dials, time.Now())
			return nil, errors.New("connection refused")
		}
		c := newClient(t, cfg)
		c.backoff.Rand = func(n int64) int64 { return n - 1 }
		if _, err := c.Send(t.Context(), batches(1)); !errors.Is(err, transport.ErrUnavailable) {
			t.Fatalf("Send = %v, want ErrUnavailable", err)
		}
		var gaps []time.Duration
		for i := 1; i < len(dials); i++ {
			gaps = append(gaps, dials[i].Sub(dials[i-1]))
		}
		want := []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 1500 * time.Millisecond}
		if !slices.Equal(gaps, want) {
			t.Fatalf("pauses between connect attempts = %v, want %v", gaps, want)
		}
	})
}

// A RETRY reply holds the batch back for the client's backoff before it is
// sent again: attempt n of one batch waits the jittered
// min(MaxBackoff, InitialBackoff·2^(n-1)).
func TestRetryPausesFollowTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("engine.invalid:9999")
		cfg.InitialBackoff, cfg.MaxBackoff = 2*time.Second, 5*time.Second
		engine, agent := net.Pipe()
		cfg.Dial = func(context.Context, string, string) (net.Conn, error) { return agent, nil }
		var sends []time.Time
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer engine.Close()
			r := bufio.NewReader(engine)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				reply := "ACK"
				if strings.HasPrefix(line, "__BATCH__:") {
					sends = append(sends, time.Now())
					reply = "RETRY"
					if len(sends) == 4 {
						reply = "RECEIVED"
					}
				}
				if _, err := io.WriteString(engine, reply+"\n"); err != nil {
					return
				}
			}
		}()
		c := newClient(t, cfg)
		c.backoff.Rand = func(n int64) int64 { return n / 4 }
		res, err := c.Send(t.Context(), batches(1))
		if err != nil || res[0].Outcome != transport.Received {
			t.Fatalf("Send = %+v, %v, want Received", res, err)
		}
		_ = c.Close()
		<-done
		var gaps []time.Duration
		for i := 1; i < len(sends); i++ {
			gaps = append(gaps, sends[i].Sub(sends[i-1]))
		}
		// Delays 2s, 4s, 5s (capped), each shortened by a quarter of itself
		// rounded down: Rand is asked for d/2+1 values and answers a quarter.
		// After each pause the idle session is checked before the resend;
		// net.Pipe has no socket to peek at, so the check waits idleProbe.
		want := []time.Duration{2*time.Second - 250*time.Millisecond + idleProbe, 4*time.Second - 500*time.Millisecond + idleProbe, 5*time.Second - 625*time.Millisecond + idleProbe}
		if !slices.Equal(gaps, want) {
			t.Fatalf("pauses between sends of a RETRYed batch = %v, want %v", gaps, want)
		}
	})
}
