package cli

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
)

type fakeRequest struct{ stop bool }

// serviceHarness runs superviseAgent on its own goroutine with an agent
// whose steps the test drives.
type serviceHarness struct {
	requests chan fakeRequest
	states   []serviceState
	others   int
	result   chan error
	ctxDone  chan struct{} // closed when the agent saw its context end
}

func startService(run func(ctx context.Context, ready func()) error) *serviceHarness {
	h := &serviceHarness{requests: make(chan fakeRequest), result: make(chan error, 1), ctxDone: make(chan struct{})}
	go func() {
		h.result <- superviseAgent(run, h.requests,
			func(r fakeRequest) bool { return r.stop },
			func(fakeRequest) { h.others++ },
			func(st serviceState) { h.states = append(h.states, st) })
	}()
	return h
}

var errAgentStopped = errors.New("agent stopped")

// TestServiceStopsAgentGracefully: the service reports running once the
// agent is ready, and a stop request cancels the agent's context (its
// graceful stop) and waits for it; other requests change nothing.
func TestServiceStopsAgentGracefully(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *serviceHarness
		h = startService(func(ctx context.Context, ready func()) error {
			ready()
			<-ctx.Done()
			close(h.ctxDone)
			return errAgentStopped
		})
		synctest.Wait()
		if want := []serviceState{serviceStartPending, serviceRunning}; !slices.Equal(h.states, want) {
			t.Fatalf("states before stop = %v, want %v", h.states, want)
		}
		h.requests <- fakeRequest{} // an interrogation
		synctest.Wait()
		if h.others != 1 || len(h.states) != 2 {
			t.Fatalf("interrogation: others %d, states %v", h.others, h.states)
		}
		select {
		case <-h.ctxDone:
			t.Fatal("agent stopped without a stop request")
		default:
		}
		h.requests <- fakeRequest{stop: true}
		err := <-h.result
		if !errors.Is(err, errAgentStopped) {
			t.Fatalf("result = %v, want the agent's own", err)
		}
		<-h.ctxDone
		if want := []serviceState{serviceStartPending, serviceRunning, serviceStopPending}; !slices.Equal(h.states, want) {
			t.Fatalf("states = %v, want %v", h.states, want)
		}
	})
}

// TestServiceStopBeforeReady: a stop while the agent is starting stops it
// and never reports it running.
func TestServiceStopBeforeReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startService(func(ctx context.Context, ready func()) error {
			<-ctx.Done()
			return nil
		})
		synctest.Wait()
		h.requests <- fakeRequest{stop: true}
		if err := <-h.result; err != nil {
			t.Fatal(err)
		}
		if want := []serviceState{serviceStartPending, serviceStopPending}; !slices.Equal(h.states, want) {
			t.Fatalf("states = %v, want %v", h.states, want)
		}
	})
}

// TestServiceAgentFailsAtStart: an agent that fails before it is ready
// ends the service with its error, never reported running.
func TestServiceAgentFailsAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := errors.New("config invalid")
		h := startService(func(context.Context, func()) error { return bad })
		if err := <-h.result; !errors.Is(err, bad) {
			t.Fatalf("result = %v, want %v", err, bad)
		}
		if want := []serviceState{serviceStartPending, serviceStopPending}; !slices.Equal(h.states, want) {
			t.Fatalf("states = %v, want %v", h.states, want)
		}
	})
}
