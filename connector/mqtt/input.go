package mqtt

import (
	"context"
	"crypto/tls"
	"log/slog"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

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

	client paho.Client
	// ctx ends at Close: a handler waiting for room gives up.
	ctx    context.Context
	cancel context.CancelFunc

	// ackMu guards acks, the messages committed and not yet acknowledged;
	// ackWake tells the acker there are some.
	ackMu   sync.Mutex
	acks    []paho.Message
	ackWake chan struct{}
	ackStop chan struct{}
	ackDone chan struct{}

	// failMu guards the rate limit of the connect-failure WARN.
	failMu   sync.Mutex
	failLast time.Time
	failHeld int

	closeOnce sync.Once
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
	o := paho.NewClientOptions().
		SetClientID(in.clientID).
		SetCleanSession(in.cfg.CleanSession).
		SetProtocolVersion(4).
		SetAutoAckDisabled(true).
		SetOrderMatters(true).
		SetKeepAlive(in.cfg.KeepAlive).
		SetConnectTimeout(in.cfg.ConnectTimeout).
		SetAutoReconnect(true).
		SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).
		SetMaxReconnectInterval(in.cfg.MaxReconnectInterval).
		SetWriteTimeout(in.cfg.ConnectTimeout).
		SetDefaultPublishHandler(in.onMessage).
		SetOnConnectHandler(in.onConnect).
		SetConnectionLostHandler(in.onLost).
		SetConnectionNotificationHandler(in.onNotification)
	for _, b := range in.cfg.Brokers {
		o.AddBroker(b)
	}
	if in.cfg.Username != "" {
		o.SetUsername(in.cfg.Username)
		o.SetPassword(in.password)
	}
	if in.tls != nil {
		o.SetTLSConfig(in.tls)
	}
	in.client = paho.NewClient(o)
	go in.acker()
	// With ConnectRetry the token completes only once connected (or at
	// Disconnect): the agent runs meanwhile.
	in.client.Connect()
	in.log.Info("mqtt input started", slog.String("client_id", in.clientID),
		slog.Int("brokers", len(in.cfg.Brokers)), slog.Int("topics", len(in.cfg.Topics)),
		slog.Int("qos", in.cfg.QoS), slog.Bool("clean_session", in.cfg.CleanSession))
	return nil
}

// onConnect subscribes at every connect: a broker that lost its sessions
// (restarted without persistence) gets the subscriptions back.
func (in *Input) onConnect(c paho.Client) {
	in.stats.connects.Add(1)
	in.stats.connected.Store(1)
	filters := make(map[string]byte, len(in.cfg.Topics))
	for _, t := range in.cfg.Topics {
		filters[t] = byte(in.cfg.QoS)
	}
	tok := c.SubscribeMultiple(filters, nil)
	if !tok.WaitTimeout(in.cfg.ConnectTimeout) {
		in.stats.errors.Add(1)
		in.log.Warn("mqtt subscribe not answered in time; the connection is dropped and retried",
			slog.Duration("timeout", in.cfg.ConnectTimeout))
		return
	}
	if err := tok.Error(); err != nil {
		in.stats.errors.Add(1)
		in.log.Error("mqtt subscribe failed", slog.Any("error", err))
		return
	}
	if st, ok := tok.(*paho.SubscribeToken); ok {
		for topic, code := range st.Result() {
			if code == 0x80 {
				in.stats.errors.Add(1)
				in.log.Error("mqtt broker refused a subscription (its ACL?)", slog.String("topic", topic))
			}
		}
	}
	in.stats.subscribed.Add(1)
	in.log.Info("mqtt connected and subscribed", slog.Int("topics", len(filters)))
}

func (in *Input) onLost(_ paho.Client, err error) {
	in.stats.connected.Store(0)
	in.stats.errors.Add(1)
	in.log.Warn("mqtt connection lost; reconnecting (messages taken and not stored are sent again by the broker)",
		slog.Any("error", err))
}

// onNotification counts and logs failed connection attempts, at most
// one WARN per failWarnEvery: a broker down is retried every second or so.
func (in *Input) onNotification(_ paho.Client, n paho.ConnectionNotification) {
	var attrs []any
	switch f := n.(type) {
	case paho.ConnectionNotificationBrokerFailed:
		attrs = []any{slog.String("broker", f.Broker.Redacted()), slog.Any("error", f.Reason)}
	case paho.ConnectionNotificationFailed:
		attrs = []any{slog.Any("error", f.Reason)}
	default:
		return
	}
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

// onMessage is the client's handler, on its router goroutine: it builds
// the event and queues it, waiting for room (the router, and with it the
// client's reader, waits meanwhile). The ack is released by Committed.
func (in *Input) onMessage(_ paho.Client, m paho.Message) {
	in.encMu.Lock()
	ev := in.enc.appendEvent(nil, m.Topic(), m.Qos(), m.Retained(), m.Payload(), in.now())
	in.stats.invalid.Store(in.enc.invalid)
	in.stats.parseErrors.Store(in.enc.parseErrors)
	in.encMu.Unlock()
	in.stats.messages.Add(1)
	in.stats.bytes.Add(int64(len(m.Payload())))
	var done func()
	if m.Qos() > 0 {
		done = func() { in.ack(m) }
	}
	if in.q.Full(len(ev)) {
		in.stats.waits.Add(1)
	}
	if err := in.q.Put(in.ctx, [][]byte{ev}, done); err != nil {
		// Stopping: not acknowledged, the broker sends it again.
		return
	}
}

// ack hands m to the acker; on the scheduler's goroutine, never blocks.
func (in *Input) ack(m paho.Message) {
	in.ackMu.Lock()
	in.acks = append(in.acks, m)
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
	var batch []paho.Message
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
func (in *Input) sendAcks(batch []paho.Message) []paho.Message {
	in.ackMu.Lock()
	batch, in.acks = in.acks, batch[:0]
	in.ackMu.Unlock()
	for i, m := range batch {
		m.Ack()
		batch[i] = nil
		in.stats.acked.Add(1)
	}
	return batch
}

// Poll hands up to max events to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	n := len(dst)
	dst = in.q.Poll(dst, max)
	in.stats.events.Add(int64(len(dst) - n))
	return dst, nil
}

// Committed releases the acknowledgements of the next n events polled.
func (in *Input) Committed(n int) { in.q.Committed(n) }

// Drain stops taking messages and hands over those taken, so they are
// stored (and acknowledged) before Close.
func (in *Input) Drain(dst []input.Event) []input.Event {
	n := len(dst)
	dst = in.q.Drain(dst)
	in.stats.events.Add(int64(len(dst) - n))
	return dst
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
		in.ackBarrier()
		in.client.Disconnect(uint(disconnectQuiesce.Milliseconds()))
		in.cancel()
	})
	return nil
}

// ackBarrier waits (up to ackBarrierWait) until the broker has read the
// acks sent: it answers packets in order, so the UNSUBACK of a filter
// never subscribed comes after it took every ack before it. Without it
// DISCONNECT can overtake the last acks, and the broker sends their
// messages again (duplicates).
func (in *Input) ackBarrier() {
	if !in.client.IsConnectionOpen() {
		return
	}
	tok := in.client.Unsubscribe(ackBarrierFilter)
	if !tok.WaitTimeout(ackBarrierWait) {
		in.log.Warn("mqtt broker did not confirm the last acks before the stop; it may send those messages again",
			slog.Duration("waited", ackBarrierWait))
	}
}

// ackBarrierFilter is never subscribed: unsubscribing it changes nothing.
const ackBarrierFilter = "edge-agent/ack-barrier/never-subscribed"

// ackBarrierWait bounds Close's wait for the broker; disconnectQuiesce
// is what Disconnect may take to send DISCONNECT.
const (
	ackBarrierWait    = 5 * time.Second
	disconnectQuiesce = 250 * time.Millisecond
)

// Wakeup fires when messages were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.Wakeup() }
