package mqtt

import (
	"log/slog"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// client3 speaks MQTT 3.1.1 through eclipse/paho.mqtt.golang with its
// automatic acks off: a message's Ack sends its PUBACK or PUBREC.
type client3 struct {
	in *Input
	c  paho.Client
}

var _ brokerClient = (*client3)(nil)

func newClient3(in *Input) *client3 { return &client3{in: in} }

func (c *client3) connect() error {
	in := c.in
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
		SetDefaultPublishHandler(c.onMessage).
		SetOnConnectHandler(c.onConnect).
		SetConnectionLostHandler(func(_ paho.Client, err error) { in.lost(err) }).
		SetConnectionNotificationHandler(c.onNotification)
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
	c.c = paho.NewClient(o)
	// With ConnectRetry the token completes only once connected (or at
	// Disconnect): the agent runs meanwhile.
	c.c.Connect()
	return nil
}

// onConnect subscribes at every connect: a broker that lost its sessions
// (restarted without persistence) gets the subscriptions back.
func (c *client3) onConnect(pc paho.Client) {
	in := c.in
	in.connected()
	filters := make(map[string]byte, len(in.cfg.Topics))
	for _, t := range in.cfg.Topics {
		filters[t] = byte(in.cfg.QoS)
	}
	tok := pc.SubscribeMultiple(filters, nil)
	if !tok.WaitTimeout(in.cfg.ConnectTimeout) {
		in.stats.errors.Add(1)
		in.log.Warn("mqtt subscribe not answered in time; the connection is dropped and retried",
			slog.Duration("timeout", in.cfg.ConnectTimeout))
		return
	}
	if err := tok.Error(); err != nil {
		in.subscribed(err, nil)
		return
	}
	var refused []string
	if st, ok := tok.(*paho.SubscribeToken); ok {
		for topic, code := range st.Result() {
			if code == 0x80 {
				refused = append(refused, topic)
			}
		}
	}
	in.subscribed(nil, refused)
}

func (c *client3) onNotification(_ paho.Client, n paho.ConnectionNotification) {
	switch f := n.(type) {
	case paho.ConnectionNotificationBrokerFailed:
		c.in.connectFailed(slog.String("broker", f.Broker.Redacted()), slog.Any("error", f.Reason))
	case paho.ConnectionNotificationFailed:
		c.in.connectFailed(slog.Any("error", f.Reason))
	}
}

func (c *client3) onMessage(_ paho.Client, m paho.Message) {
	c.in.take(m.Topic(), m.Qos(), m.Retained(), m.Payload(), m.Ack)
}

// barrier: the broker answers packets in order, so the UNSUBACK of a
// filter never subscribed comes after it took every ack before it.
func (c *client3) barrier(wait time.Duration) bool {
	if !c.c.IsConnectionOpen() {
		return true
	}
	return c.c.Unsubscribe(ackBarrierFilter).WaitTimeout(wait)
}

func (c *client3) disconnect() {
	c.c.Disconnect(uint(disconnectQuiesce.Milliseconds()))
}
