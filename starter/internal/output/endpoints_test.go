package output

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

// fakeEndpoint is an engine behind one endpoint: up, it answers RECEIVED
// to every batch (after perBatch each, a slow engine); down, it cannot be
// reached; refuse makes it answer AUTH_FAILED. It records the ids it got.
type fakeEndpoint struct {
	up       atomic.Bool
	refuse   atomic.Bool
	perBatch time.Duration
	// dieAfter > 0: the connection fails after that many batches of the
	// next Send were received; the rest were on the wire, unanswered.
	dieAfter int

	mu       sync.Mutex
	ids      []int64
	connects int
	sent     uint64
}

func newFake(up bool) *fakeEndpoint {
	f := &fakeEndpoint{}
	f.up.Store(up)
	return f
}

func (f *fakeEndpoint) verdict() error {
	switch {
	case f.refuse.Load():
		return fmt.Errorf("authenticate: %w", transport.ErrAuthFailed)
	case !f.up.Load():
		return fmt.Errorf("%w: connection refused", transport.ErrUnavailable)
	}
	return nil
}

func (f *fakeEndpoint) Send(ctx context.Context, bs []transport.Batch) ([]transport.Result, error) {
	out := make([]transport.Result, len(bs))
	err := f.verdict()
	for i, b := range bs {
		out[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent, Err: err}
	}
	if err != nil {
		return out, err
	}
	for i, b := range bs {
		if f.dieAfter > 0 && i == f.dieAfter {
			f.up.Store(false)
			lost := fmt.Errorf("%w: connection reset", transport.ErrUnavailable)
			for j := i; j < len(bs); j++ {
				out[j] = transport.Result{ID: bs[j].ID, Outcome: transport.Failed, Err: fmt.Errorf("batch %d: written but never answered: %w", bs[j].ID, lost)}
			}
			return out, lost
		}
		if err := ctx.Err(); err != nil {
			for j := i; j < len(bs); j++ {
				out[j] = transport.Result{ID: bs[j].ID, Outcome: transport.NotSent, Err: err}
			}
			return out, err
		}
		if f.perBatch > 0 {
			time.Sleep(f.perBatch)
		}
		f.mu.Lock()
		f.ids = append(f.ids, b.ID)
		f.sent++
		f.mu.Unlock()
		out[i].Outcome, out[i].Err = transport.Received, nil
	}
	return out, nil
}

func (f *fakeEndpoint) Connect(context.Context) error {
	f.mu.Lock()
	f.connects++
	f.mu.Unlock()
	return f.verdict()
}

func (f *fakeEndpoint) Stats() client.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return client.Stats{BatchesSent: f.sent, Received: uint64(len(f.ids))}
}

func (f *fakeEndpoint) Close() error { return nil }

func (f *fakeEndpoint) got() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ids)
}

func newTestEndpoints(mode string, fakes ...*fakeEndpoint) *Endpoints {
	addrs := make([]string, len(fakes))
	cs := make([]endpointClient, len(fakes))
	for i, f := range fakes {
		addrs[i], cs[i] = fmt.Sprintf("engine-%d:9999", i), f
	}
	return newEndpoints(mode, addrs, cs, 8*time.Second, nil, nil)
}

// ids makes batches with ids from..from+n-1.
func ids(from, n int) []transport.Batch {
	out := make([]transport.Batch, n)
	for i := range out {
		out[i] = transport.Batch{ID: int64(from + i), Payload: []byte("x")}
	}
	return out
}

func mustSend(t *testing.T, e *Endpoints, bs []transport.Batch) {
	t.Helper()
	res, err := e.Send(context.Background(), bs)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	for _, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("batch %d: %v (%v)", r.ID, r.Outcome, r.Err)
		}
	}
}

func activeOf(e *Endpoints) string {
	for _, s := range e.Endpoints() {
		if s.Active {
			return s.Endpoint
		}
	}
	return ""
}

func increasing(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

// Failover: the first endpoint down at start, back later, killed again:
// every batch is received by one endpoint, the preferred one is used as
// soon as a probe finds it answering, and each endpoint's ids increase.
func TestFailoverDownAtStartBackLaterKilledMidRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFake(false), newFake(true)
		e := newTestEndpoints(ModeFailover, a, b)
		defer e.Close()
		next := 1
		send := func(n int) {
			mustSend(t, e, ids(next, n))
			next += n
		}
		send(10) // a is down at start: b takes everything
		if got := activeOf(e); got != "engine-1:9999" {
			t.Fatalf("active = %q, want the fallback", got)
		}
		a.up.Store(true)
		time.Sleep(30 * time.Second) // past the first probe's backoff
		send(1)                      // starts the probe
		synctest.Wait()
		send(10) // between Sends: back to a
		if got := activeOf(e); got != "engine-0:9999" {
			t.Fatalf("active = %q after a answered a probe, want the preferred one", got)
		}
		a.up.Store(false) // killed mid-run
		send(10)
		if got := activeOf(e); got != "engine-1:9999" {
			t.Fatalf("active = %q after a died, want the fallback", got)
		}
		all := append(a.got(), b.got()...)
		slices.Sort(all)
		if len(all) != next-1 || all[0] != 1 || all[len(all)-1] != int64(next-1) {
			t.Fatalf("received %d batches (%v), want each of 1..%d once", len(all), all, next-1)
		}
		for name, f := range map[string]*fakeEndpoint{"a": a, "b": b} {
			if !increasing(f.got()) {
				t.Errorf("endpoint %s got ids out of order: %v", name, f.got())
			}
		}
		if len(a.got()) != 10 {
			t.Errorf("preferred endpoint got %d batches, want the 10 sent while it was back", len(a.got()))
		}
		st := e.Endpoints()
		if st[0].State != "unavailable" || st[1].State != "connected" || st[0].LastError == "" {
			t.Errorf("status = %+v", st)
		}
	})
}

// A refusal (AUTH_FAILED) moves on like an unreachable engine; with every
// endpoint failing, Send returns the first one's error and nothing is
// received.
func TestFailoverRefusalAndAllDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFake(true), newFake(true)
		a.refuse.Store(true)
		e := newTestEndpoints(ModeFailover, a, b)
		defer e.Close()
		mustSend(t, e, ids(1, 5))
		if len(b.got()) != 5 || e.Endpoints()[0].State != "auth_failed" {
			t.Fatalf("b got %v, status %+v", b.got(), e.Endpoints())
		}
		b.up.Store(false)
		res, err := e.Send(context.Background(), ids(6, 3))
		if !errors.Is(err, transport.ErrUnavailable) && !errors.Is(err, transport.ErrAuthFailed) {
			t.Fatalf("Send with every endpoint failing = %v", err)
		}
		for _, r := range res {
			if r.Outcome != transport.NotSent {
				t.Fatalf("batch %d = %v, want NotSent (no attempt charged)", r.ID, r.Outcome)
			}
		}
		// Both back: the next Send succeeds without waiting for a probe.
		a.refuse.Store(false)
		b.up.Store(true)
		mustSend(t, e, ids(6, 3))
	})
}

// Spread: every endpoint gets a share, ids increase per endpoint, a slow
// endpoint gets fewer rows, a dead one's share goes to the others.
func TestSpreadSharesMonotonicAndSlowGetsLess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast, slow, third := newFake(true), newFake(true), newFake(true)
		fast.perBatch, slow.perBatch, third.perBatch = time.Millisecond, 4*time.Millisecond, time.Millisecond
		e := newTestEndpoints(ModeSpread, fast, slow, third)
		defer e.Close()
		next := 1
		for range 20 {
			mustSend(t, e, ids(next, 300))
			next += 300
		}
		for name, f := range map[string]*fakeEndpoint{"fast": fast, "slow": slow, "third": third} {
			if !increasing(f.got()) {
				t.Errorf("%s got ids out of order", name)
			}
		}
		nf, ns := len(fast.got()), len(slow.got())
		t.Logf("fast %d, slow %d, third %d rows", nf, ns, len(third.got()))
		if ns == 0 || ns*2 > nf {
			t.Errorf("slow endpoint got %d rows, fast %d: want a share, at most half the fast one's", ns, nf)
		}
		third.up.Store(false)
		mustSend(t, e, ids(next, 300))
		total := len(fast.got()) + len(slow.got()) + len(third.got())
		if total != next+300-1 {
			t.Fatalf("received %d rows in all, want %d", total, next+300-1)
		}
		if st := e.Endpoints(); st[2].Active || !st[0].Active || !st[1].Active {
			t.Errorf("status = %+v", st)
		}
	})
}

func TestEndpointsConfig(t *testing.T) {
	tests := []struct {
		name string
		mut  func(c *TransportConfig)
		want string
	}{
		{"a list", func(c *TransportConfig) { c.Client.Endpoint, c.Endpoints = "", []string{"a:1", "b:2"} }, ""},
		{"spread", func(c *TransportConfig) {
			c.Client.Endpoint, c.Endpoints, c.EndpointMode = "", []string{"a:1", "b:2"}, "SPREAD"
		}, ""},
		{"both keys", func(c *TransportConfig) { c.Endpoints = []string{"a:1"} }, "endpoints"},
		{"bad and repeated entries", func(c *TransportConfig) {
			c.Client.Endpoint, c.Endpoints = "", []string{"a:1", "nope", "a:1", "b:0"}
		}, "endpoints[1],endpoints[2],endpoints[3]"},
		{"unknown mode", func(c *TransportConfig) {
			c.Client.Endpoint, c.Endpoints, c.EndpointMode = "", []string{"a:1"}, "roundrobin"
		}, "endpoint-mode"},
		{"neither key", func(c *TransportConfig) { c.Client.Endpoint = "" }, "endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validTransport()
			tc.mut(c)
			err := c.Validate()
			if got := strings.Join(keys(err), ","); got != tc.want {
				t.Fatalf("keys = %q, want %q (%v)", got, tc.want, err)
			}
			if tc.name == "both keys" && !strings.Contains(err.Error(), "endpoint and endpoints are both set") {
				t.Errorf("error %q does not name both keys", err)
			}
		})
	}
}

// The factory builds an Endpoints for a list, in the mode asked, and a
// plain client for one endpoint.
func TestTransportFactoryEndpoints(t *testing.T) {
	c := validTransport()
	c.Client.Endpoint, c.Endpoints, c.EndpointMode = "", []string{"127.0.0.1:1", "127.0.0.1:2"}, "spread"
	snd, _, err := NewTransportFactory().Create(c, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	e, ok := snd.(*Endpoints)
	if !ok || e.Mode() != ModeSpread || len(e.Endpoints()) != 2 || e.Endpoints()[1].Endpoint != "127.0.0.1:2" {
		t.Fatalf("Create = %T %+v", snd, snd)
	}
	if c.Destination() != "127.0.0.1:1,127.0.0.1:2" {
		t.Errorf("Destination = %q", c.Destination())
	}
}

// Rows on the wire when the active endpoint dies go, in order, to the
// next one in the same Send: each is acked by one of them, none is
// charged; a Send the caller stops moves nothing on.
func TestFailoverMovesWhatWasOnTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFake(true), newFake(true)
		a.dieAfter = 40
		e := newTestEndpoints(ModeFailover, a, b)
		defer e.Close()
		mustSend(t, e, ids(1, 100))
		if got := a.got(); len(got) != 40 || got[39] != 40 {
			t.Fatalf("a got %v", got)
		}
		if got := b.got(); len(got) != 60 || got[0] != 41 || !increasing(got) {
			t.Fatalf("b got %v, want 41..100 in order", got)
		}
		if st := e.Endpoints(); st[1].Switches != 1 || !st[1].Active {
			t.Fatalf("status %+v", st)
		}

		b.perBatch = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 5500*time.Millisecond)
		defer cancel()
		res, err := e.Send(ctx, ids(101, 10))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stopped Send = %v", err)
		}
		for _, r := range res[6:] { // 101..106 were answered before the deadline
			if r.Outcome != transport.NotSent {
				t.Fatalf("batch %d = %v after the caller stopped, want NotSent", r.ID, r.Outcome)
			}
		}
		if st := e.Endpoints(); !st[1].Active || st[1].State != "connected" {
			t.Fatalf("a caller's stop failed the endpoint: %+v", st)
		}
	})
}

// A preferred endpoint that fails again soon after each return is
// probed at growing waits, so the agent does not switch every second.
func TestFailoverFlappingEndpointBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFake(false), newFake(true)
		e := newTestEndpoints(ModeFailover, a, b)
		defer e.Close()
		next := 1
		var waits []time.Duration
		for range 4 {
			mustSend(t, e, ids(next, 1)) // a fails: on b
			next++
			a.up.Store(true)
			start := time.Now()
			for activeOf(e) != "engine-0:9999" {
				if time.Since(start) > time.Hour {
					t.Fatal("never returned to the preferred endpoint")
				}
				time.Sleep(100 * time.Millisecond)
				mustSend(t, e, ids(next, 1))
				next++
				synctest.Wait()
			}
			waits = append(waits, time.Since(start))
			a.up.Store(false) // and down again at once
		}
		t.Logf("waits before each return: %v", waits)
		if waits[3] < 3*waits[0] {
			t.Fatalf("waits %v: a flapping endpoint must be probed less and less often", waits)
		}
	})
}
