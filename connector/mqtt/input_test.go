package mqtt

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/mqtt/mosquittotest"
)

// A QoS 1 or 2 message is acknowledged only once committed: with nothing
// committed the broker stops at its in-flight window (20), messages
// polled but never committed come again at the next session (the broker
// kept them unacknowledged), and once committed they never come again.
// Both protocol versions hold it.
func TestAckOnlyAfterCommit(t *testing.T) {
	for _, tc := range []struct {
		version string
		qos     int
	}{{Protocol311, 1}, {Protocol311, 2}, {Protocol5, 1}, {Protocol5, 2}} {
		qos := tc.qos
		t.Run(fmt.Sprintf("mqtt%s/qos%d", tc.version, qos), func(t *testing.T) {
			b := mosquittotest.Start(t, mosquittotest.Options{})
			defer func() {
				if t.Failed() {
					t.Log(b.LogText())
				}
			}()
			cfg := brokerConfig(b, "site/+/temp")
			cfg.QoS = qos
			cfg.ProtocolVersion = tc.version
			pub := publisher(t, b.URL("tcp"))

			in := open(t, cfg, "bus")
			waitSubscribed(t, in, 1)
			const n = 50
			var want []string
			for i := range n {
				topic := fmt.Sprintf("site/l%d/temp", i%3)
				publish(t, pub, topic, byte(qos), fmt.Sprint(i))
				want = append(want, fmt.Sprintf("%s=%d", topic, i))
			}
			publish(t, pub, "site/l1/other", byte(qos), "not subscribed")
			const window = 20 // the broker's max_inflight_messages
			got := pollN(t, in, window, false)
			checkEvents(t, "first session", got, want[:window])
			_ = in.Close() // nothing committed: nothing acknowledged

			in2 := open(t, cfg, "bus")
			got = pollN(t, in2, n, true)
			checkEvents(t, "after a close without commit", got, want)
			_ = in2.Close() // all committed: all acknowledged

			in3 := open(t, cfg, "bus")
			waitSubscribed(t, in3, 1)
			publish(t, pub, "site/end/temp", byte(qos), "marker")
			got = pollN(t, in3, 1, true)
			checkEvents(t, "after a committed session", got, []string{"site/end/temp=marker"})
		})
	}
}

// checkEvents: exactly want, in order, each with a topic and qos.
func checkEvents(t *testing.T, when string, got []event, want []string) {
	t.Helper()
	var s []string
	for _, e := range got {
		s = append(s, e.String())
	}
	if !slices.Equal(s, want) {
		t.Fatalf("%s: got %d events %v\nwant %d %v", when, len(s), s, len(want), want)
	}
}

// A broker restarted without its session store forgets the subscription:
// the input reconnects and subscribes again, in both protocol versions.
func TestBrokerRestartResubscribes(t *testing.T) {
	for _, v := range []string{Protocol311, Protocol5} {
		t.Run("mqtt"+v, func(t *testing.T) { testBrokerRestartResubscribes(t, v) })
	}
}

func testBrokerRestartResubscribes(t *testing.T, version string) {
	b := mosquittotest.Start(t, mosquittotest.Options{})
	cfg := brokerConfig(b, "site/#")
	cfg.ProtocolVersion = version
	in := open(t, cfg, "bus")
	waitSubscribed(t, in, 1)
	pub := publisher(t, b.URL("tcp"))
	publish(t, pub, "site/a", 1, "before")
	checkEvents(t, "before the restart", pollN(t, in, 1, true), []string{"site/a=before"})

	b.Restart()
	waitSubscribed(t, in, 2)
	pub = publisher(t, b.URL("tcp"))
	publish(t, pub, "site/b", 1, "after")
	checkEvents(t, "after the restart", pollN(t, in, 1, true), []string{"site/b=after"})
	if s := in.Stats(); s.Restarts < 1 || s.Connections != 1 {
		t.Fatalf("stats after a reconnect: %+v", s)
	}
}

// While nothing is polled the input takes messages up to
// max-pending-bytes and no further; once polled and committed every
// message arrives, once, in order.
func TestBackpressureBoundsMemory(t *testing.T) {
	for _, v := range []string{Protocol311, Protocol5} {
		t.Run("mqtt"+v, func(t *testing.T) { testBackpressureBoundsMemory(t, v) })
	}
}

func testBackpressureBoundsMemory(t *testing.T, version string) {
	// No in-flight window: the input's own bound is all that holds.
	b := mosquittotest.Start(t, mosquittotest.Options{UnlimitedInflight: true})
	cfg := brokerConfig(b, "bulk")
	cfg.ProtocolVersion = version
	cfg.MaxPendingBytes = 64 << 10
	in := open(t, cfg, "bus")
	waitSubscribed(t, in, 1)
	pub := publisher(t, b.URL("tcp"))
	// 4000 bytes: MQTT 5's receive maximum (20) of them exceed the bound.
	body := strings.Repeat("x", 4000)
	const n = 400
	var want []string
	go func() {
		for i := range n {
			pub.Publish("bulk", 1, false, fmt.Sprintf("%04d%s", i, body))
		}
	}()
	for i := range n {
		want = append(want, fmt.Sprintf("bulk=%04d%s", i, body))
	}
	waitFor(t, "the queue at its bound", func() bool {
		return in.q.Full(4100)
	})
	if got := in.q.Bytes(); got > cfg.MaxPendingBytes {
		t.Fatalf("queue holds %d bytes, bound %d", got, cfg.MaxPendingBytes)
	}
	if got := in.stats.messages.Load(); got >= n {
		t.Fatalf("took all %d messages with nothing polled", got)
	}
	checkEvents(t, "after draining", pollN(t, in, n, true), want)
}

// payload: json puts the parsed payload into the event; one that is not
// JSON is kept as text with parse_error. topic-field renames the topic.
func TestJSONPayload(t *testing.T) {
	b := mosquittotest.Start(t, mosquittotest.Options{})
	cfg := brokerConfig(b, "j/#")
	cfg.Payload = PayloadJSON
	cfg.QoS = 0
	in := open(t, cfg, "bus")
	waitSubscribed(t, in, 1)
	pub := publisher(t, b.URL("tcp"))
	publish(t, pub, "j/1", 0, "{\"t\": 21.5,\n \"ok\": true}")
	publish(t, pub, "j/2", 0, "not json")
	got := pollN(t, in, 2, true)
	if string(got[0].Payload) != `{"t":21.5,"ok":true}` || got[0].QoS != 0 {
		t.Fatalf("json payload: %+v", got[0])
	}
	if got[1].Message == nil || *got[1].Message != "not json" || !strings.Contains(got[1].ParseError, "not JSON") {
		t.Fatalf("non-JSON payload: %+v", got[1])
	}
}
