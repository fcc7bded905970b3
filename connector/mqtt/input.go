package mqtt

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
)

// Input is a running mqtt input. Open, Poll, Drain, Committed and Close
// are the scheduler's (one goroutine); the client's router goroutine
// hands messages over through onMessage, and the acker goroutine sends
// the acknowledgements Committed released.
type Input struct {
	cfg      *Config
	log      *slog.Logger
	clientID string
	password string
	tls      *tls.Config
	q        *pushq.Queue
	stats    stats
	now      func() time.Time

	// encMu guards enc: the client may run a handler per subscription.
	encMu sync.Mutex
	enc   *encoder

	client brokerClient
	// ctx ends at Close: a handler waiting for room gives up.
	ctx    context.Context
	cancel context.CancelFunc

	// ackMu guards acks, the messages committed and not yet acknowledged;
	// ackWake tells the acker there are some.
	ackMu   sync.Mutex
	acks    []func()
	ackWake chan struct{}
	ackStop chan struct{}
	ackDone chan struct{}

	// failMu guards the rate limit of the connect-failure WARN.
	failMu   sync.Mutex
	failLast time.Time
	failHeld int

	closeOnce sync.Once
}

// brokerClient is one MQTT version's client. It hands each message to
// Input.take with a function that acknowledges it, and reports its
// connection through Input.connected, subscribed, lost and connectFailed.
type brokerClient interface {
	// connect starts connecting in the background and returns: the
	// client retries with backoff and subscribes at every connect.
	connect() error
	// barrier waits up to wait until the broker has read the acks sent
	// so far; false when it could not tell.
	barrier(wait time.Duration) bool
	// disconnect ends the connection; a persistent session stays at the
	// broker.
	disconnect()
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Acker         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

// New checks cfg and reads its files; nothing connects until Open.
func New(cfg *Config, set input.Settings) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{
		cfg: cfg, log: log,
		clientID: cfg.clientID(set),
		q:        pushq.New(cfg.MaxPendingBytes),
		enc:      newEncoder(cfg.Payload, cfg.TopicField),
		now:      time.Now,
		ackWake:  make(chan struct{}, 1),
		ackStop:  make(chan struct{}),
		ackDone:  make(chan struct{}),
	}
	var err error
	if in.password, err = cfg.password(); err != nil {
		return nil, err
	}
	if in.tls, err = cfg.tlsConfig(); err != nil {
		return nil, err
	}
	return in, nil
}

// Open starts the client. It does not wait for a broker: an unreachable
// one is retried (with backoff up to max-reconnect-interval-ms) while the
// agent runs, and logged.
func (in *Input) Open(_ context.Context, _ input.OpenOptions) error {
	in.ctx, in.cancel = context.WithCancel(context.Background())
	if in.cfg.ProtocolVersion == Protocol5 {
		in.client = newClient5(in)
	} else {
		in.client = newClient3(in)
	}
	go in.acker()
	if err := in.client.connect(); err != nil {
		in.cancel()
		close(in.ackStop)
		<-in.ackDone
		in.client = nil
		return fmt.Errorf("mqtt input: start the MQTT %s client: %w", in.cfg.ProtocolVersion, err)
	}
	in.log.Info("mqtt input started", slog.String("client_id", in.clientID),
		slog.String("protocol_version", in.cfg.ProtocolVersion),
		slog.Int("brokers", len(in.cfg.Brokers)), slog.Int("topics", len(in.cfg.Topics)),
		slog.Int("qos", in.cfg.QoS), slog.Bool("clean_session", in.cfg.CleanSession))
	return nil
}

// connected counts a session opened; the client then subscribes.
func (in *Input) connected() {
	in.stats.connects.Add(1)
	in.stats.connected.Store(1)
}

// subscribed reports the outcome of the subscription made at a connect:
// err when it failed as a whole, refused the filters the broker denied.
func (in *Input) subscribed(err error, refused []string) {
	if err != nil {
		in.stats.errors.Add(1)
		in.log.Error("mqtt subscribe failed; the connection is dropped and retried", slog.Any("error", err))
		return
	}
	for _, topic := range refused {
		in.stats.errors.Add(1)
		in.log.Error("mqtt broker refused a subscription (its ACL?)", slog.String("topic", topic))
	}
	in.stats.subscribed.Add(1)
	in.log.Info("mqtt connected and subscribed", slog.Int("topics", len(in.cfg.Topics)))
}

func (in *Input) lost(err error) {
	in.stats.connected.Store(0)
	in.stats.errors.Add(1)
	in.log.Warn("mqtt connection lost; reconnecting (messages taken and not stored are sent again by the broker)",
		slog.Any("error", err))
}

// connectFailed counts and logs a failed connection attempt, at most
// one WARN per failWarnEvery: a broker down is retried every second or so.
func (in *Input) connectFailed(attrs ...any) {
	in.stats.errors.Add(1)
	in.failMu.Lock()
	now := in.now()
	if !in.failLast.IsZero() && now.Sub(in.failLast) < failWarnEvery {
		in.failHeld++
		in.failMu.Unlock()
		return
	}
	held := in.failHeld
	in.failLast, in.failHeld = now, 0
	in.failMu.Unlock()
	in.log.Warn("mqtt connect failed; retrying with backoff", append(attrs, slog.Int("failures_not_logged", held))...)
}

// failWarnEvery spaces the WARNs of failed connection attempts.
const failWarnEvery = 30 * time.Second

// take is the clients' message handler, on their router goroutine: it
// builds the event and queues it, waiting for room (the router, and with
// it the client's reader, waits meanwhile). ack, nil at QoS 0, sends the
// message's acknowledgement; Committed releases it to the acker.
func (in *Input) take(topic string, qos byte, retained bool, payload []byte, ack func()) {
	in.encMu.Lock()
	ev := in.enc.appendEvent(nil, topic, qos, retained, payload, in.now())
	in.stats.invalid.Store(in.enc.invalid)
	in.stats.parseErrors.Store(in.enc.parseErrors)
	in.encMu.Unlock()
	in.stats.messages.Add(1)
	in.stats.bytes.Add(int64(len(payload)))
	var done func()
	if qos > 0 && ack != nil {
		done = func() { in.release(ack) }
	}
	if in.q.Full(len(ev)) {
		in.stats.waits.Add(1)
	}
	if err := in.q.Put(in.ctx, [][]byte{ev}, done); err != nil {
		// Stopping: not acknowledged, the broker sends it again.
		return
	}
}

// release hands ack to the acker; on the scheduler's goroutine, never
// blocks.
func (in *Input) release(ack func()) {
	in.ackMu.Lock()
	in.acks = append(in.acks, ack)
	in.ackMu.Unlock()
	select {
	case in.ackWake <- struct{}{}:
	default:
	}
}

// acker sends the acknowledgements in commit order until Close. An ack
// for a connection that has since dropped is discarded by the client;
// the broker then sends the message again (a duplicate, not a loss).
func (in *Input) acker() {
	defer close(in.ackDone)
	var batch []func()
	for {
		select {
		case <-in.ackWake:
		case <-in.ackStop:
			return
		}
		batch = in.sendAcks(batch)
	}
}

// sendAcks acknowledges every message released so far; batch is scratch.
func (in *Input) sendAcks(batch []func()) []func() {
	in.ackMu.Lock()
	batch, in.acks = in.acks, batch[:0]
	in.ackMu.Unlock()
	for i, ack := range batch {
		ack()
		batch[i] = nil
		in.stats.acked.Add(1)
	}
	return batch
}

// Poll hands up to max events to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	return in.q.Poll(dst, max), nil
}

// Committed releases the acknowledgements of the next n events polled.
func (in *Input) Committed(n int) { in.q.Committed(n) }

// Drain stops taking messages and hands over those taken, so they are
// stored (and acknowledged) before Close.
func (in *Input) Drain(dst []input.Event) []input.Event {
	return in.q.Drain(dst)
}

// Close acknowledges what was committed, then disconnects; messages not
// stored stay unacknowledged at the broker, which sends them again.
// Idempotent.
func (in *Input) Close() error {
	in.closeOnce.Do(func() {
		in.q.Stop()
		if in.client == nil {
			return
		}
		close(in.ackStop)
		<-in.ackDone
		in.sendAcks(nil)
		if !in.client.barrier(ackBarrierWait) {
			in.log.Warn("mqtt broker did not confirm the last acks before the stop; it may send those messages again",
				slog.Duration("waited", ackBarrierWait))
		}
		in.client.disconnect()
		in.cancel()
	})
	return nil
}

// ackBarrierFilter is never subscribed: unsubscribing it changes nothing,
// and the broker's answer comes after it read every ack sent before.
// Without that barrier DISCONNECT can overtake the last acks, and the
// broker sends their messages again (duplicates).
const ackBarrierFilter = "edge-agent/ack-barrier/never-subscribed"

// ackBarrierWait bounds Close's wait for the broker; disconnectQuiesce
// is what a disconnect may take to send DISCONNECT.
const (
	ackBarrierWait    = 5 * time.Second
	disconnectQuiesce = 250 * time.Millisecond
)

// Wakeup fires when messages were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.Wakeup() }
