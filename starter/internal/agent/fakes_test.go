package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

// fakeInput hands out the events pushed into it. Safe for the test
// goroutine to push while the loop polls.
type fakeInput struct {
	mu      sync.Mutex
	queue   []input.Event
	held    []input.Event // returned by Drain
	opened  *input.OpenOptions
	closed  bool
	pollErr error
	polls   int
	// onPoll, when set, runs at the start of every Poll, on the loop's
	// goroutine and outside mu: an input that takes time to read.
	onPoll func()
}

func (f *fakeInput) push(evs ...input.Event) {
	f.mu.Lock()
	f.queue = append(f.queue, evs...)
	f.mu.Unlock()
}

func (f *fakeInput) Open(_ context.Context, o input.OpenOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = &o
	return nil
}

func (f *fakeInput) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	if f.onPoll != nil {
		f.onPoll()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	if f.pollErr != nil {
		return dst, f.pollErr
	}
	n := min(max, len(f.queue))
	dst = append(dst, f.queue[:n]...)
	f.queue = f.queue[n:]
	return dst, nil
}

func (f *fakeInput) Drain(dst []input.Event) []input.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	dst = append(dst, f.held...)
	f.held = nil
	return dst
}

func (f *fakeInput) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

func (f *fakeInput) openOptions() input.OpenOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opened == nil {
		return input.OpenOptions{}
	}
	return *f.opened
}

// pollCount and isOpened read what the loop's goroutine writes.
func (f *fakeInput) pollCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

func (f *fakeInput) isOpened() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened != nil
}

func (f *fakeInput) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

type fakeInputConfig struct{}

func (fakeInputConfig) Validate() error { return nil }

type fakeFactory struct{ in input.Input }

func (fakeFactory) Type() string                   { return "fake" }
func (fakeFactory) NewDefaultConfig() input.Config { return fakeInputConfig{} }
func (f fakeFactory) Create(input.Config, input.Settings) (input.Input, error) {
	return f.in, nil
}

// lineEvent is event i of source key: payload "line-<i>", position i.
func lineEvent(key string, i int) input.Event {
	return input.Event{
		Payload: []byte(fmt.Sprintf(`{"_line":%d,"payload":"line-%d"}`, i, i)),
		Pos:     input.Position{Key: key, State: []byte(strconv.Itoa(i))},
	}
}

func lineEvents(key string, from, to int) []input.Event {
	var out []input.Event
	for i := from; i < to; i++ {
		out = append(out, lineEvent(key, i))
	}
	return out
}

// fakeSender decides each batch's fate with decide; it records every send.
type fakeSender struct {
	mu     sync.Mutex
	decide func(b transport.Batch, n int) transport.Outcome // n: earlier sends of b.ID
	// callErr, when set, is consulted first for each Send call: a non-nil
	// error makes the call return every batch NotSent with that error.
	callErr func(call int) error
	// down, while set, makes every Send call return its batches NotSent
	// with that error: an engine that is down or turns us away. Tests
	// clear it under mu.
	down error
	// block makes Send wait for its context: an engine that never answers.
	block bool
	// gate, when set, holds every Send until it is closed.
	gate chan struct{}
	// delay makes each Send answer that long after it began, or end
	// NotSent if its context ends first: an engine that answers slowly.
	delay time.Duration
	// started, when set, gets one value (if it has room) per Send begun.
	started chan struct{}
	calls   int
	sizes   []int // batches handed to each Send call, in order
	sends   map[int64]int
	times   map[int64][]time.Time
	last    map[int64][]byte
	closed  bool
	// order is every batch Send took, in the order it took them.
	order []transport.Batch
	// afterSent, when set, runs under mu after each batch taken.
	afterSent func(s *fakeSender, b transport.Batch)
}

func newFakeSender(decide func(b transport.Batch, n int) transport.Outcome) *fakeSender {
	if decide == nil {
		decide = func(transport.Batch, int) transport.Outcome { return transport.Received }
	}
	return &fakeSender{decide: decide, sends: map[int64]int{}, times: map[int64][]time.Time{}, last: map[int64][]byte{}}
}

func (s *fakeSender) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	out := make([]transport.Result, len(batches))
	for i, b := range batches {
		out[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent}
	}
	s.mu.Lock()
	block, gate, delay, started := s.block, s.gate, s.delay, s.started
	s.mu.Unlock()
	if started != nil {
		select {
		case started <- struct{}{}:
		default:
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	if block {
		<-ctx.Done()
		return out, ctx.Err()
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return out, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.sizes = append(s.sizes, len(batches))
	if s.closed {
		return out, transport.ErrClosed
	}
	if s.down != nil {
		return out, s.down
	}
	if s.callErr != nil {
		if err := s.callErr(s.calls); err != nil {
			return out, err
		}
	}
	for i, b := range batches {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		o := s.decide(b, s.sends[b.ID])
		s.sends[b.ID]++
		s.times[b.ID] = append(s.times[b.ID], time.Now())
		s.last[b.ID] = append([]byte(nil), b.Payload...)
		s.order = append(s.order, transport.Batch{ID: b.ID, Payload: s.last[b.ID]})
		if s.afterSent != nil {
			s.afterSent(s, b)
		}
		out[i].Outcome = o
		if o == transport.Failed {
			out[i].Err = fmt.Errorf("engine replied BAD_REQUEST")
		}
	}
	return out, nil
}

func (s *fakeSender) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// stats returns distinct batches sent and total sends.
func (s *fakeSender) stats() (distinct, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.sends {
		total += n
	}
	return len(s.sends), total
}

func (s *fakeSender) payloads() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, p := range s.last {
		out[string(p)]++
	}
	return out
}

// testCfg is what the tests tune, in the shape of config.Config (which
// they cannot import: config imports runtime); newOptions hands each part
// to Options as cli does through config.AgentOptions.
type testCfg struct {
	Agent Settings
	Queue struct {
		wal.Options
		QueueSettings
	}
	Retry  RetrySettings
	Output struct {
		Type    string
		Options output.Config
	}
	InputType string
	Input     input.Config
}

// singleInput is agent.yaml's `input:` form: one input that may leave
// its id out.
func singleInput(typ string, c input.Config) InputSpec {
	return InputSpec{Type: typ, Config: c, Key: "input", OptionalID: true}
}

// testConfig is a small, fast configuration over the fake input.
func testConfig(t testing.TB) *testCfg {
	cfg := &testCfg{Agent: DefaultSettings(), Retry: DefaultRetrySettings()}
	cfg.Queue.QueueSettings = DefaultQueueSettings()
	cfg.InputType = "fake"
	cfg.Input = fakeInputConfig{}
	cfg.Output.Type, cfg.Output.Options = "fake", output.NewConsoleConfig()
	cfg.Queue.Path = "data/wal.db"
	cfg.Queue.Fsync = false
	cfg.Agent.IdleSleep = 5 * time.Millisecond
	cfg.Agent.FlushInterval = 20 * time.Millisecond
	cfg.Agent.CommitInterval = 20 * time.Millisecond
	cfg.Agent.ShutdownTimeout = 5 * time.Second
	cfg.Retry.Backoff = 10 * time.Millisecond
	cfg.Retry.BackoffMax = 100 * time.Millisecond
	return cfg
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("RUNTIME_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// harness runs a Agent in the background.
type harness struct {
	t      testing.TB
	rt     *Agent
	home   string
	cancel context.CancelFunc
	done   chan error
	ready  chan struct{}
}

func newOptions(t testing.TB, cfg *testCfg, home string, in input.Input, snd transport.Sender) Options {
	return Options{
		Agent:      cfg.Agent,
		Queue:      cfg.Queue.QueueSettings,
		Retry:      cfg.Retry,
		WAL:        cfg.Queue.Options,
		InputList:  []InputSpec{singleInput(cfg.InputType, cfg.Input)},
		OutputType: cfg.Output.Type,
		Output:     cfg.Output.Options,
		Home:       home,
		Inputs:     input.NewRegistry(fakeFactory{in: in}),
		// "fake" hands over snd; "transport" is the real EdgeSocket client.
		Outputs: output.NewRegistry(fakeOutputFactory{snd: snd}, output.NewTransportFactory()),
		IDs:     IDs{Agent: "agent-1", Input: "input-1", Output: "output-1"},
		Logger:  testLogger(t),
		// The boot clock would not follow a synctest bubble's time.
		Clock: newTestClock(),
	}
}

// fakeOutputFactory is output type "fake": the console output's options
// (so pacing is the transport's defaults) and a given sender.
type fakeOutputFactory struct{ snd transport.Sender }

func (fakeOutputFactory) Type() string                    { return "fake" }
func (fakeOutputFactory) NewDefaultConfig() output.Config { return output.NewConsoleConfig() }
func (f fakeOutputFactory) Create(output.Config, output.Settings) (transport.Sender, output.Encoder, error) {
	return f.snd, nil, nil
}

// clientOptions are the EdgeSocket client options inside cfg's output
// options, for tests that tune pacing.
func clientOptions(t testing.TB, cfg *testCfg) *client.Config {
	t.Helper()
	switch o := cfg.Output.Options.(type) {
	case *output.ConsoleConfig:
		return &o.Transport.Client
	case *output.TransportConfig:
		return &o.Client
	}
	t.Fatalf("output options are %T", cfg.Output.Options)
	return nil
}

func startRuntime(t testing.TB, opts Options) *harness {
	t.Helper()
	h := newRuntime(t, opts)
	h.run()
	return h
}

// newRuntime builds the agent without running it (run does).
func newRuntime(t testing.TB, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, home: opts.Home, done: make(chan error, 1), ready: make(chan struct{})}
	prev := opts.OnReady
	opts.OnReady = func() {
		if prev != nil {
			prev()
		}
		close(h.ready)
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.rt = rt
	return h
}

// run starts the agent and waits until it is ready.
func (h *harness) run() {
	t := h.t
	t.Helper()
	rt := h.rt
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- rt.Run(ctx) }()
	select {
	case <-h.ready:
	case err := <-h.done:
		cancel()
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("runtime not ready after 10s")
	}
}

// stop cancels the runtime and returns Run's error.
func (h *harness) stop() error {
	h.t.Helper()
	h.cancel()
	return h.wait(20 * time.Second)
}

func (h *harness) wait(d time.Duration) error {
	h.t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(d):
		h.t.Fatalf("Run did not return within %v", d)
		return nil
	}
}
