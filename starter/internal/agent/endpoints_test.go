package agent

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// idEngine is a loopback ingress that records, in arrival order, the
// batch ids and the payloads it got.
type idEngine struct {
	srv *standin.Server
	mu  sync.Mutex
	ids []int64
	got map[string]int
}

func startIDEngine(t testing.TB, addr string) *idEngine {
	t.Helper()
	e := &idEngine{got: map[string]int{}}
	srv, err := standin.New(standin.Config{Addr: addr, Token: testToken, RejectGrace: -1,
		Handler: func(id int64, rec []byte) {
			e.mu.Lock()
			e.ids = append(e.ids, id)
			e.got[string(rec)]++
			e.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(func() { _ = srv.Close() })
	return e
}

func (e *idEngine) received() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ids)
}

func (e *idEngine) batchIDs() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ids)
}

// freeAddr is a loopback address nothing listens on (for now).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func endpointsConfig(t testing.TB, mode string, addrs ...string) *testCfg {
	cfg := transportConfig(t, "")
	tc := cfg.Output.Options.(*output.TransportConfig)
	tc.Client.Endpoint, tc.Endpoints, tc.EndpointMode = "", addrs, mode
	return cfg
}

// delivered checks that every payload of want reached one of the engines
// and returns how many arrived more than once.
func delivered(t testing.TB, want []string, engines ...*idEngine) int {
	t.Helper()
	seen := map[string]int{}
	for _, e := range engines {
		e.mu.Lock()
		for p, n := range e.got {
			seen[p] += n
		}
		e.mu.Unlock()
	}
	dups := 0
	for _, p := range want {
		if seen[p] == 0 {
			t.Fatalf("payload %s never delivered", p)
		}
		dups += seen[p] - 1
	}
	if len(seen) != len(want) {
		t.Fatalf("engines got %d distinct records, want %d", len(seen), len(want))
	}
	return dups
}

// Failover through real sessions: the preferred endpoint down at start,
// back later (the agent returns to it), killed mid-run (the fallback takes
// over): nothing lost, and status says which endpoint is active.
func TestFailoverThroughIngress(t *testing.T) {
	addrA := freeAddr(t)
	b := startIDEngine(t, "127.0.0.1:0")
	cfg := endpointsConfig(t, output.ModeFailover, addrA, b.srv.Addr())
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 200)...)
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	transporttest.Eventually(t, 20*time.Second, "200 acks through the fallback", func() bool { return h.rt.Snapshot().Acked == 200 })
	if st := h.rt.Snapshot(); len(st.Endpoints) != 2 || st.Endpoints[0].Active || !st.Endpoints[1].Active ||
		st.Endpoints[0].State != "unavailable" {
		t.Fatalf("endpoints while the preferred is down: %+v", st.Endpoints)
	}

	a := startIDEngine(t, addrA) // back
	next := 200
	transporttest.Eventually(t, 20*time.Second, "the preferred endpoint takes rows again", func() bool {
		in.push(lineEvents("a.log", next, next+1)...) // a row per poll keeps rows flowing
		next++
		return a.received() > 0
	})
	transporttest.Eventually(t, 20*time.Second, "every row acked", func() bool { return h.rt.Snapshot().Acked == uint64(next) })
	if st := h.rt.Snapshot(); !st.Endpoints[0].Active || st.Endpoints[1].Active {
		t.Fatalf("endpoints once the preferred is back: %+v", st.Endpoints)
	}

	_ = a.srv.Close() // killed mid-run
	fromB := b.received()
	in.push(lineEvents("a.log", next, next+300)...)
	next += 300
	transporttest.Eventually(t, 20*time.Second, "every row acked after the kill", func() bool { return h.rt.Snapshot().Acked >= uint64(next) })
	if b.received() <= fromB {
		t.Fatal("the fallback took nothing after the preferred endpoint died")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	dups := delivered(t, payloadsOf(0, next), a, b)
	t.Logf("rows %d: preferred %d, fallback %d, duplicates %d", next, a.received(), b.received(), dups)
}

// Spread over two real sessions: both get a share, each sees increasing
// batch ids, and the agent's rate cap holds for both together.
func TestSpreadThroughIngressSharesAndCap(t *testing.T) {
	a, b := startIDEngine(t, "127.0.0.1:0"), startIDEngine(t, "127.0.0.1:0")
	cfg := endpointsConfig(t, output.ModeSpread, a.srv.Addr(), b.srv.Addr())
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 4000)...)
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	transporttest.Eventually(t, 30*time.Second, "4000 acks", func() bool { return h.rt.Snapshot().Acked == 4000 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if dups := delivered(t, payloadsOf(0, 4000), a, b); dups != 0 {
		t.Errorf("%d duplicates without a failure", dups)
	}
	for name, e := range map[string]*idEngine{"a": a, "b": b} {
		ids := e.batchIDs()
		if len(ids) < 400 {
			t.Errorf("endpoint %s got %d of 4000 rows: want a share", name, len(ids))
		}
		if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Errorf("endpoint %s got batch ids out of order", name)
		}
	}
	t.Logf("a %d rows, b %d rows", a.received(), b.received())

	// The cap is the agent's: 200 events/s over both endpoints.
	a2, b2 := startIDEngine(t, "127.0.0.1:0"), startIDEngine(t, "127.0.0.1:0")
	cfg = endpointsConfig(t, output.ModeSpread, a2.srv.Addr(), b2.srv.Addr())
	opts := ingressOptions(t, cfg, t.TempDir(), in)
	opts.RateLimit = output.RateLimit{EventsPerSecond: 200, Burst: 20}
	in2 := &fakeInput{}
	in2.push(lineEvents("b.log", 0, 320)...)
	opts.Inputs = newOptions(t, cfg, opts.Home, in2, nil).Inputs
	start := time.Now()
	h = startRuntime(t, opts)
	transporttest.Eventually(t, 30*time.Second, "320 acks", func() bool { return h.rt.Snapshot().Acked == 320 })
	took := time.Since(start)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// (320 - 20 burst) / 200 per second: 1.5 s at the least.
	if took < 1400*time.Millisecond {
		t.Fatalf("320 events over two endpoints took %s under a 200/s cap: the cap is not the agent's", took)
	}
	if a2.received() == 0 || b2.received() == 0 {
		t.Fatalf("capped spread: a %d, b %d rows", a2.received(), b2.received())
	}
	t.Logf("capped: %s for 320 events, a %d, b %d", took.Round(time.Millisecond), a2.received(), b2.received())
}

// A reload changes the list: from one endpoint to two in spread, then to
// another single one; rows after each reload go where the new config says.
func TestReloadChangesTheEndpointList(t *testing.T) {
	a, b, c := startIDEngine(t, "127.0.0.1:0"), startIDEngine(t, "127.0.0.1:0"), startIDEngine(t, "127.0.0.1:0")
	cfg := transportConfig(t, a.srv.Addr())
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 100)...)
	home := t.TempDir()
	h := startRuntime(t, ingressOptions(t, cfg, home, in))
	transporttest.Eventually(t, 20*time.Second, "100 acks at a", func() bool { return h.rt.Snapshot().Acked == 100 })
	if st := h.rt.Snapshot(); st.Endpoints != nil {
		t.Fatalf("single endpoint lists endpoints: %+v", st.Endpoints)
	}

	next := endpointsConfig(t, output.ModeSpread, b.srv.Addr(), c.srv.Addr())
	if err := h.rt.Reload(context.Background(), ingressOptions(t, next, home, in), Replace{Output: true}); err != nil {
		t.Fatal(err)
	}
	in.push(lineEvents("a.log", 100, 2100)...)
	transporttest.Eventually(t, 20*time.Second, "2100 acks", func() bool { return h.rt.Snapshot().Acked == 2100 })
	if a.received() != 100 || b.received() == 0 || c.received() == 0 {
		t.Fatalf("after the reload to spread: a %d, b %d, c %d", a.received(), b.received(), c.received())
	}
	if st := h.rt.Snapshot(); len(st.Endpoints) != 2 || st.Endpoints[0].Endpoint != b.srv.Addr() {
		t.Fatalf("status after the reload: %+v", st.Endpoints)
	}

	back := endpointsConfig(t, output.ModeFailover, a.srv.Addr())
	if err := h.rt.Reload(context.Background(), ingressOptions(t, back, home, in), Replace{Output: true}); err != nil {
		t.Fatal(err)
	}
	fromB, fromC := b.received(), c.received()
	in.push(lineEvents("a.log", 2100, 2200)...)
	transporttest.Eventually(t, 20*time.Second, "2200 acks", func() bool { return h.rt.Snapshot().Acked == 2200 })
	if a.received() != 200 || b.received() != fromB || c.received() != fromC {
		t.Fatalf("after the reload back to a: a %d, b %d (was %d), c %d (was %d)", a.received(), b.received(), fromB, c.received(), fromC)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	delivered(t, payloadsOf(0, 2200), a, b, c)
}
