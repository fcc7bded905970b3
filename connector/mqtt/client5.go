package mqtt

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"
	"github.com/eclipse/paho.golang/paho/session/state"
)

// client5 speaks MQTT 5 through eclipse/paho.golang's autopaho, which
// reconnects; manual acknowledgement is on, so a message's PUBACK or
// PUBREC leaves only through Client.Ack, and the client sends acks in
// the order the messages came, batched every ackInterval5.
type client5 struct {
	in *Input
	cm *autopaho.ConnectionManager
	// session counts the acks written; released counts those handed to
	// the client, which writes them on its own tick.
	session  *countingSession
	released atomic.Int64
	// ctx ends at disconnect: autopaho stops reconnecting.
	ctx    context.Context
	cancel context.CancelFunc
}

var _ brokerClient = (*client5)(nil)

// ackInterval5 is how often the client sends the acks released to it.
const ackInterval5 = 10 * time.Millisecond

// receiveMaximum5 is the CONNECT's Receive Maximum: the QoS 1/2 messages
// the broker may have sent and not had acknowledged, and the size of the
// client's own buffer of messages not yet handed over (QoS 0 too). Left
// at MQTT's 65535, a paused input would let the client buffer that many
// (and a broker honours the client's value over its own in-flight
// limit). The value is mosquitto's default in-flight window, which 3.1.1
// clients get.
const receiveMaximum5 = 20

func newClient5(in *Input) *client5 {
	return &client5{in: in, session: &countingSession{State: state.NewInMemory(), wrote: make(chan struct{}, 1)}}
}

// countingSession is the client's session state, counting the acks it
// wrote to the connection so that barrier knows when all are out.
type countingSession struct {
	*state.State
	acks  atomic.Int64
	wrote chan struct{}
}

var _ session.SessionManager = (*countingSession)(nil)

func (s *countingSession) Ack(pb *packets.Publish) error {
	err := s.State.Ack(pb)
	s.acks.Add(1)
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return err
}

func (c *client5) connect() error {
	in := c.in
	urls := make([]*url.URL, 0, len(in.cfg.Brokers))
	for _, b := range in.cfg.Brokers {
		u, _, err := parseBroker(b)
		if err != nil {
			return fmt.Errorf("broker %q: %w", b, err)
		}
		urls = append(urls, u)
	}
	cfg := autopaho.ClientConfig{
		ServerUrls:                    urls,
		TlsCfg:                        in.tls,
		KeepAlive:                     uint16(min(in.cfg.KeepAlive/time.Second, 1<<16-1)),
		CleanStartOnInitialConnection: in.cfg.CleanSession,
		SessionExpiryInterval:         uint32(in.cfg.SessionExpiry / time.Second),
		ReconnectBackoff:              backoff(in.cfg.MaxReconnectInterval),
		ConnectTimeout:                in.cfg.ConnectTimeout,
		ConnectPacketBuilder: func(cp *paho.Connect, _ *url.URL) (*paho.Connect, error) {
			if cp.Properties == nil {
				cp.Properties = &paho.ConnectProperties{}
			}
			rm := uint16(receiveMaximum5)
			cp.Properties.ReceiveMaximum = &rm
			return cp, nil
		},
		OnConnectionUp:   c.onUp,
		OnConnectionDown: func() bool { in.lost(nil); return true },
		OnConnectError:   func(err error) { in.connectFailed(slog.Any("error", err)) },
		ClientConfig: paho.ClientConfig{
			ClientID:                   in.clientID,
			Session:                    c.session,
			OnPublishReceived:          []func(paho.PublishReceived) (bool, error){c.onPublish},
			EnableManualAcknowledgment: true,
			SendAcksInterval:           ackInterval5,
			OnClientError: func(err error) {
				in.stats.errors.Add(1)
				in.log.Warn("mqtt client error", slog.Any("error", err))
			},
			OnServerDisconnect: func(d *paho.Disconnect) {
				in.log.Warn("mqtt broker sent DISCONNECT; reconnecting", slog.Int("reason_code", int(d.ReasonCode)))
			},
		},
	}
	if in.cfg.Username != "" {
		cfg.ConnectUsername = in.cfg.Username
		cfg.ConnectPassword = []byte(in.password)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	cm, err := autopaho.NewConnection(c.ctx, cfg)
	if err != nil {
		c.cancel()
		return err
	}
	c.cm = cm
	return nil
}

// onUp subscribes at every connect, as client3 does; autopaho asks that
// it not block, so the subscription runs on its own goroutine.
func (c *client5) onUp(cm *autopaho.ConnectionManager, _ *paho.Connack) {
	c.in.connected()
	go c.subscribe(cm)
}

func (c *client5) subscribe(cm *autopaho.ConnectionManager) {
	in := c.in
	s := &paho.Subscribe{Subscriptions: make([]paho.SubscribeOptions, len(in.cfg.Topics))}
	for i, t := range in.cfg.Topics {
		s.Subscriptions[i] = paho.SubscribeOptions{Topic: t, QoS: byte(in.cfg.QoS)}
	}
	ctx, cancel := context.WithTimeout(c.ctx, in.cfg.ConnectTimeout)
	defer cancel()
	sa, err := cm.Subscribe(ctx, s)
	if err != nil {
		in.subscribed(err, nil)
		return
	}
	var refused []string
	for i, code := range sa.Reasons {
		if code >= 0x80 && i < len(in.cfg.Topics) {
			refused = append(refused, in.cfg.Topics[i])
		}
	}
	in.subscribed(nil, refused)
}

// onPublish hands the message over; its ack is dropped when the
// connection it came on has ended (the broker sends it again).
func (c *client5) onPublish(pr paho.PublishReceived) (bool, error) {
	p, cl := pr.Packet, pr.Client
	ack := func() {
		select {
		case <-cl.Done():
			return
		default:
		}
		if err := cl.Ack(p); err != nil {
			c.in.log.Debug("mqtt ack not sent; the broker sends the message again", slog.Any("error", err))
			return
		}
		c.released.Add(1)
	}
	c.in.take(p.Topic, p.QoS, p.Retain, p.Payload, ack)
	return true, nil
}

// barrier waits until the client wrote every ack released to it, then
// for the broker's answer to an UNSUBSCRIBE: it answers in order, after
// the acks.
func (c *client5) barrier(wait time.Duration) bool {
	if c.in.stats.connected.Load() == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(c.ctx, wait)
	defer cancel()
	for c.session.acks.Load() < c.released.Load() {
		select {
		case <-c.session.wrote:
		case <-ctx.Done():
			return false
		}
	}
	if _, err := c.cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{ackBarrierFilter}}); err != nil {
		return false
	}
	return true
}

func (c *client5) disconnect() {
	ctx, cancel := context.WithTimeout(context.Background(), disconnectQuiesce)
	defer cancel()
	_ = c.cm.Disconnect(ctx)
	c.cancel()
}

// backoff waits 0 before the first attempt, then a jittered wait that
// doubles from a second up to maxWait.
func backoff(maxWait time.Duration) autopaho.Backoff {
	return func(attempt int) time.Duration {
		if attempt <= 0 {
			return 0
		}
		d := min(time.Second<<min(attempt-1, 20), maxWait)
		return d/2 + rand.N(d/2+1)
	}
}
