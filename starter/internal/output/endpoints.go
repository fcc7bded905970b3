package output

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
	"github.com/edge-agent/edge-agent/transport/client"
)

// Several endpoints (output.endpoints) are served by one Sender, Endpoints,
// holding one EdgeSocket client per endpoint; the scheduler sees a single
// Sender and its rate cap, WAL claims and acks stay as with one endpoint.
//
// # Modes
//
// failover sends every batch to the active endpoint: the first of the
// list that authenticates. When it cannot be reached, REJECTED or refused
// (AUTH_FAILED, DECRYPT_FAILED, a broken protocol), the batches it left
// unanswered go, in their order and within the same Send, to the next
// endpoint of the list; the failed one is probed (a session opened,
// nothing sent) after a jittered backoff that grows from probeInitial to
// max-backoff-ms while it stays down, and keeps growing when it fails
// again within stableUp of coming back (a flapping endpoint is not
// switched to every second). An endpoint before
// the active one that answers a probe becomes active at the next Send:
// switches happen only between Sends, never with batches in flight.
//
// spread sends each Send's batches to every endpoint that is up at once,
// cut into contiguous runs in id order, sized by what each endpoint
// received per second lately, so a slow endpoint gets fewer rows and N
// endpoints (N EdgeSocket jobs) multiply what the agent can deliver.
// What a failing endpoint left unanswered is spread over the others in
// the same Send; the failed one is probed as in failover.
//
// # Batch ids
//
// Ids are the WAL's, allocated at append and increasing, one per row.
// Every Send's batches arrive in id order and each endpoint gets
// contiguous runs of them, in order, so an endpoint sees increasing ids
// for rows it has not seen, with gaps where another endpoint took the
// rows (spread) or while it was not active (failover). Exceptions follow
// failures, as with one endpoint: a row that comes back unsent or refused
// is sent again with its id, later, to whichever endpoint is then chosen,
// and the rows a failed endpoint left are moved at once, so the endpoint
// that takes them may already have got higher ids.
// Each endpoint is a source of its own to the engine (its own
// __COMMIT__ watermark): the agent's commits are barriers only here, and
// CHECKPOINT delivery refuses several endpoints.
//
// A checkpoint mode, which needs gap-free ids per endpoint, would
// allocate wire ids per endpoint at claim time instead: the WAL would
// record, with a claimed row, its endpoint and the id drawn from that
// endpoint's counter (kept in the WAL's metadata, in the claim's
// transaction), and a row released unsent would keep both, so it goes
// back to the same endpoint with the same id; only an endpoint removed
// from the list would free its rows for new ids elsewhere.
//
// # Guarantees
//
// At least once, as with one endpoint: a row is acked only after an
// endpoint answered RECEIVED. A switch may duplicate the rows that were
// on the wire, unanswered, when the old endpoint failed: they are sent
// again to the next one, which the engine does not deduplicate.

// Endpoint modes (output.endpoint-mode).
const (
	ModeFailover = "failover"
	ModeSpread   = "spread"
)

// multiReconnectCycles caps max-reconnect-cycles for each endpoint of a
// list: an endpoint that fails this many connect attempts in one Send is
// left for the next, instead of holding the batches for the minutes the
// default cycles take. Five attempts span about a second and a half of
// backoff, time for an engine to reopen its port after a collector left.
const multiReconnectCycles = 5

// probeInitial is the first wait before a failed endpoint is probed; the
// waits double up to max-backoff-ms while it stays down, or while it
// fails again within stableUp of answering a probe.
const (
	probeInitial = time.Second
	stableUp     = time.Minute
)

// EndpointStatus is one endpoint of a list, for status and metrics.
type EndpointStatus struct {
	Endpoint string
	// State is what the last send or probe found: idle, connected,
	// unavailable, rejected, auth_failed, decrypt_failed.
	State string
	// Active: failover sends to it now; in spread every endpoint up is.
	Active bool
	// Sent counts batch lines written to it, Received its RECEIVED replies.
	Sent, Received uint64
	LastError      string
	LastErrorAt    time.Time
	// Switches counts the times failover moved to this endpoint.
	Switches uint64
}

// EndpointReporter is implemented by Senders of several endpoints.
type EndpointReporter interface {
	Endpoints() []EndpointStatus
}

// endpointClient is what Endpoints needs of one endpoint's client;
// *client.Client satisfies it.
type endpointClient interface {
	transport.Sender
	Connect(ctx context.Context) error
	Stats() client.Stats
}

// Endpoints is a transport.Sender over several endpoints (see the
// package's section on several endpoints). Send calls are serialised;
// Endpoints, Stats and Close may be called from any goroutine.
type Endpoints struct {
	mode  string
	log   *slog.Logger
	now   func() time.Time
	probe backoff.Policy

	eps []*endpoint

	sendMu sync.Mutex // serialises Send

	mu     sync.Mutex // guards the endpoints' state and active
	active int        // failover: the endpoint sent to

	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // probes
	closed sync.Once
}

type endpoint struct {
	addr string
	c    endpointClient
	// Guarded by Endpoints.mu.
	up        bool
	state     string
	lastErr   string
	lastErrAt time.Time
	// failures counts the failed probes and the falls back down soon
	// after coming up (within stableUp): the probe waits grow with it,
	// so a flapping endpoint is not switched to every second.
	failures  int
	upSince   time.Time // when it last came up
	nextProbe time.Time // when to probe it while down
	probing   bool
	rate      float64 // rows RECEIVED per second at its last send (spread's weight)
	switches  uint64
}

var _ transport.Sender = (*Endpoints)(nil)

// newEndpoints wraps one client per endpoint, in list order.
func newEndpoints(mode string, addrs []string, clients []endpointClient, maxBackoff time.Duration, log *slog.Logger, now func() time.Time) *Endpoints {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	e := &Endpoints{mode: mode, log: log, now: now, probe: backoff.Policy{Initial: probeInitial, Max: max(probeInitial, maxBackoff)}}
	for i, a := range addrs {
		// Unknown counts as up: the first Send finds out.
		e.eps = append(e.eps, &endpoint{addr: a, c: clients[i], up: true, state: "idle"})
	}
	e.life, e.cancel = context.WithCancel(context.Background())
	return e
}

// Mode is failover or spread.
func (e *Endpoints) Mode() string { return e.mode }

// Send delivers batches as the mode says; see transport.Sender. It
// returns nil once every batch has an outcome from some endpoint; an
// error when batches remain that no endpoint took: the error of the
// first endpoint tried.
func (e *Endpoints) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	results := make([]transport.Result, len(batches))
	for i, b := range batches {
		results[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent, Err: transport.ErrUnavailable}
	}
	if e.life.Err() != nil {
		for i := range results {
			results[i].Err = transport.ErrClosed
		}
		return results, transport.ErrClosed
	}
	e.startProbes()
	e.returnToPreferred()
	todo := make([]int, len(batches))
	for i := range todo {
		todo[i] = i
	}
	failed := make([]bool, len(e.eps)) // endpoints that failed in this Send
	var firstErr error
	// Each round either settles every batch or fails an endpoint more:
	// at most one round per endpoint, and one more.
	for round := 0; len(todo) > 0 && round <= len(e.eps); round++ {
		targets := e.targets(failed)
		if len(targets) == 0 {
			break
		}
		parts := e.split(todo, targets)
		errs := e.sendParts(ctx, batches, results, targets, parts)
		todo = todo[:0]
		for k, t := range targets {
			err := errs[k]
			if err == nil {
				continue
			}
			if firstErr == nil {
				firstErr = err
			}
			if !movable(err) {
				continue // the caller stopped (ctx, Close): nothing moves on
			}
			failed[t] = true
			for _, i := range parts[k] {
				if results[i].Outcome != transport.Received && reroutable(results[i]) {
					todo = append(todo, i)
				}
			}
		}
		if ctx.Err() != nil || e.life.Err() != nil {
			break
		}
		slices.Sort(todo)
	}
	if len(todo) == 0 && allSettled(results) {
		return results, nil
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("%w: no endpoint of output.endpoints took the batches", transport.ErrUnavailable)
	}
	return results, firstErr
}

// allSettled reports whether every batch reached an endpoint's verdict.
func allSettled(rs []transport.Result) bool {
	for _, r := range rs {
		if r.Outcome == transport.NotSent {
			return false
		}
	}
	return true
}

// movable: err says the endpoint, not the caller, stopped the Send, so
// what it left goes to the next endpoint.
func movable(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, transport.ErrClosed)
}

// reroutable: the batch has no verdict of its own (unsent, or lost on a
// connection that failed): another endpoint may take it. A batch the
// engine answered (DECODE_FAILED, RETRY spent) keeps its outcome.
func reroutable(r transport.Result) bool {
	if r.Outcome == transport.NotSent {
		return true
	}
	for _, s := range []error{transport.ErrUnavailable, transport.ErrRejected, transport.ErrAuthFailed, transport.ErrDecryptFailed, transport.ErrProtocol} {
		if errors.Is(r.Err, s) {
			return true
		}
	}
	return false
}

// targets are the endpoints this round sends to, of those that have not
// failed in this Send: failover the first up one (the active first),
// spread every up one. With none up, a down one, in list order: a Send
// always tries something, or a list all down would wait for probes
// alone.
func (e *Endpoints) targets(failed []bool) []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var up, rest []int
	order := make([]int, 0, len(e.eps))
	if e.mode == ModeFailover {
		order = append(order, e.active)
	}
	for i := range e.eps {
		if e.mode != ModeFailover || i != e.active {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if failed[i] {
			continue
		}
		if e.eps[i].up {
			up = append(up, i)
		} else {
			rest = append(rest, i)
		}
	}
	if len(up) == 0 {
		up = rest
		if anyTrue(failed) && len(up) > 0 {
			// Everything up failed already: the down ones, one at a time.
			up = up[:1]
		}
	}
	if e.mode == ModeFailover && len(up) > 1 {
		up = up[:1]
	}
	return up
}

func anyTrue(bs []bool) bool {
	for _, t := range bs {
		if t {
			return true
		}
	}
	return false
}

// split cuts todo (batch indexes, ascending) into one contiguous run per
// target: failover one run, spread runs sized by each endpoint's rate
// (equal while none is known yet).
func (e *Endpoints) split(todo []int, targets []int) [][]int {
	if len(targets) == 1 {
		return [][]int{todo}
	}
	e.mu.Lock()
	w := make([]float64, len(targets))
	known, sum := 0.0, 0.0
	for k, t := range targets {
		w[k] = e.eps[t].rate
		if w[k] > 0 {
			known += w[k]
		}
	}
	e.mu.Unlock()
	nKnown := 0
	for _, x := range w {
		if x > 0 {
			nKnown++
		}
	}
	for k := range w {
		switch {
		case nKnown == 0:
			w[k] = 1
		case w[k] <= 0:
			// Not measured yet: as much as the average of those that are.
			w[k] = known / float64(nKnown)
		}
		sum += w[k]
	}
	parts := make([][]int, len(targets))
	n, from := len(todo), 0
	acc := 0.0
	for k := range targets {
		acc += w[k]
		to := n
		if k < len(targets)-1 {
			to = min(n, int(float64(n)*acc/sum+0.5))
		}
		parts[k] = todo[from:to]
		from = to
	}
	return parts
}

// sendParts sends each run to its endpoint, at once, and files the
// results; it returns each endpoint's error.
func (e *Endpoints) sendParts(ctx context.Context, batches []transport.Batch, results []transport.Result, targets []int, parts [][]int) []error {
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for k, t := range targets {
		if len(parts[k]) == 0 {
			continue
		}
		run := make([]transport.Batch, len(parts[k]))
		for j, i := range parts[k] {
			run[j] = batches[i]
		}
		send := func() {
			ep := e.eps[t]
			start := e.now()
			got, err := ep.c.Send(ctx, run)
			took := e.now().Sub(start)
			received := 0
			for j, i := range parts[k] {
				if j < len(got) {
					results[i] = got[j]
					if got[j].Outcome == transport.Received {
						received++
					}
				}
			}
			errs[k] = err
			e.after(t, err, received, took)
		}
		if len(targets) == 1 {
			send() // failover: on this goroutine
			continue
		}
		wg.Go(send)
	}
	wg.Wait()
	return errs
}

// after records what a send to endpoint t found and logs a failover.
func (e *Endpoints) after(t int, err error, received int, took time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := e.eps[t]
	if err == nil || !movable(err) {
		if err == nil {
			ep.up, ep.state = true, "connected"
			e.took(t)
			if took > 0 && received > 0 {
				r := float64(received) / took.Seconds()
				if ep.rate > 0 {
					r = (ep.rate + r) / 2
				}
				ep.rate = r
			}
		}
		return
	}
	now := e.now()
	wasUp := ep.up
	ep.up, ep.state, ep.lastErr, ep.lastErrAt = false, ConnectionState(err), err.Error(), now
	if now.Sub(ep.upSince) >= stableUp {
		ep.failures = 0
	}
	ep.nextProbe = now.Add(e.probe.Jittered(ep.failures))
	if !wasUp {
		return
	}
	what := "output endpoint failed; its rows go to the other endpoints until it answers a probe"
	if e.mode == ModeFailover {
		what = "output endpoint failed; moving to the next endpoint of the list until it answers a probe"
	}
	e.log.Warn(what, slog.String("endpoint", ep.addr), slog.String("state", ep.state), slog.String("error", err.Error()))
}

// took notes that failover's endpoint t took a Send: it becomes the
// active one if the active one is down (a failover) or t comes before it.
// Callers hold mu.
func (e *Endpoints) took(t int) {
	if e.mode != ModeFailover || t == e.active {
		return
	}
	old := e.eps[e.active]
	if old.up && t > e.active {
		return
	}
	e.active = t
	e.eps[t].switches++
	e.log.Warn("failed over to another output endpoint",
		slog.String("from", old.addr), slog.String("to", e.eps[t].addr), slog.String("why", old.state), slog.String("error", old.lastErr))
}

// returnToPreferred makes failover's active the first endpoint that is up:
// one before it answered a probe. It runs between Sends only.
func (e *Endpoints) returnToPreferred() {
	if e.mode != ModeFailover {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 0; i < e.active; i++ {
		if e.eps[i].up {
			from := e.eps[e.active].addr
			e.active = i
			e.eps[i].switches++
			e.log.Info("returning to the preferred output endpoint: it answers again",
				slog.String("from", from), slog.String("to", e.eps[i].addr), slog.String("why", "probe succeeded"))
			return
		}
	}
}

// startProbes starts a probe of every endpoint down whose probe is due.
func (e *Endpoints) startProbes() {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for _, ep := range e.eps {
		if ep.up || ep.probing || now.Before(ep.nextProbe) {
			continue
		}
		ep.probing = true
		e.wg.Go(func() { e.probeOne(ep) })
	}
}

// probeOne opens a session with ep (Connect: nothing is sent, the session
// is kept for the next Send) and records the verdict.
func (e *Endpoints) probeOne(ep *endpoint) {
	err := ep.c.Connect(e.life)
	e.mu.Lock()
	defer e.mu.Unlock()
	ep.probing = false
	if e.life.Err() != nil {
		return
	}
	if err == nil {
		ep.up, ep.state, ep.upSince = true, "connected", e.now()
		ep.failures++ // forgotten once it stays up for stableUp
		e.log.Info("output endpoint answers again", slog.String("endpoint", ep.addr))
		return
	}
	ep.failures++
	ep.state, ep.lastErr, ep.lastErrAt = ConnectionState(err), err.Error(), e.now()
	ep.nextProbe = e.now().Add(e.probe.Jittered(ep.failures))
}

// Endpoints reports each endpoint, in list order.
func (e *Endpoints) Endpoints() []EndpointStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]EndpointStatus, len(e.eps))
	for i, ep := range e.eps {
		st := ep.c.Stats()
		out[i] = EndpointStatus{Endpoint: ep.addr, State: ep.state, Sent: st.BatchesSent, Received: st.Received,
			LastError: ep.lastErr, LastErrorAt: ep.lastErrAt, Switches: ep.switches,
			Active: ep.up && (e.mode == ModeSpread || i == e.active)}
	}
	return out
}

// Stats sums the clients' counters; Window, LinkBound and RoundTrip are
// the largest.
func (e *Endpoints) Stats() client.Stats {
	var s client.Stats
	for _, ep := range e.eps {
		c := ep.c.Stats()
		s.ConnectAttempts += c.ConnectAttempts
		s.Connects += c.Connects
		s.Reconnects += c.Reconnects
		s.BatchesSent += c.BatchesSent
		s.Received += c.Received
		s.Retries += c.Retries
		s.QueueFull += c.QueueFull
		s.Failures += c.Failures
		s.Window = max(s.Window, c.Window)
		s.LinkBound = max(s.LinkBound, c.LinkBound)
		s.RoundTrip = max(s.RoundTrip, c.RoundTrip)
		s.PeakInFlight = max(s.PeakInFlight, c.PeakInFlight)
	}
	return s
}

// Close stops the probes and closes every client. Idempotent.
func (e *Endpoints) Close() error {
	e.closed.Do(func() {
		e.cancel()
		for _, ep := range e.eps {
			_ = ep.c.Close()
		}
		e.wg.Wait()
	})
	return nil
}

// ProbeEach probes every endpoint in list order the way client.Probe
// does (nothing sent), for `edge-agent check output`.
func (e *Endpoints) ProbeEach(ctx context.Context) []client.ProbeResult {
	out := make([]client.ProbeResult, 0, len(e.eps))
	for _, ep := range e.eps {
		p, ok := ep.c.(interface {
			Probe(ctx context.Context) client.ProbeResult
		})
		if !ok {
			out = append(out, client.ProbeResult{Endpoint: ep.addr,
				Steps: []client.StepResult{{Step: client.StepConnect, Err: errors.New("this endpoint's client cannot be probed")}}})
			continue
		}
		out = append(out, p.Probe(ctx))
	}
	return out
}
