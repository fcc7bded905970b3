package mqtt

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/mqtt/mosquittotest"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// testWait bounds every wait of these tests: a real broker on a loaded
// machine, never a timing assertion.
const testWait = 30 * time.Second

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// open creates and opens an input on cfg, closed when the test ends.
func open(t *testing.T, cfg *Config, id string) *Input {
	t.Helper()
	in, err := New(cfg, input.Settings{ID: id, AgentID: "agent-1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(t.Context(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

// waitFor polls cond until it holds, failing after testWait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	transporttest.Eventually(t, testWait, what, cond)
}

// waitSubscribed waits for the input's n-th granted subscription.
func waitSubscribed(t *testing.T, in *Input, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("subscription %d", n), func() bool { return in.stats.subscribed.Load() >= n })
}

// pollN polls (as the scheduler does, woken by the input) until n events
// arrived; commit says whether each Poll result is then committed.
func pollN(t *testing.T, in *Input, n int, commit bool) []event {
	t.Helper()
	var out []event
	deadline := time.After(testWait)
	for len(out) < n {
		evs, err := in.Poll(t.Context(), nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			out = append(out, decodeEvent(t, e.Payload))
		}
		if commit && len(evs) > 0 {
			in.Committed(len(evs))
		}
		if len(evs) == 0 {
			select {
			case <-in.Wakeup():
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatalf("got %d events of %d: %v", len(out), n, out)
			}
		}
	}
	return out
}

// event is the decoded event JSON.
type event struct {
	TS         int64           `json:"_ts"`
	Topic      string          `json:"topic"`
	QoS        int             `json:"qos"`
	Retained   bool            `json:"retained"`
	Message    *string         `json:"message"`
	Payload    json.RawMessage `json:"payload"`
	ParseError string          `json:"parse_error"`
}

func decodeEvent(t *testing.T, b []byte) event {
	t.Helper()
	var e event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("event is not JSON: %v: %s", err, b)
	}
	return e
}

func (e event) String() string {
	if e.Message != nil {
		return e.Topic + "=" + *e.Message
	}
	return e.Topic + "=" + string(e.Payload)
}

// publisher connects a plain paho client to the broker.
func publisher(t *testing.T, url string, opts ...func(*pahoOptions)) paho.Client {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(url).SetClientID(fmt.Sprintf("pub-%d", time.Now().UnixNano())).
		SetAutoReconnect(false)
	for _, f := range opts {
		f(o)
	}
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(testWait) || tok.Error() != nil {
		t.Fatalf("publisher connect to %s: %v", url, tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func publish(t *testing.T, c paho.Client, topic string, qos byte, payload string) {
	t.Helper()
	tok := c.Publish(topic, qos, false, payload)
	if !tok.WaitTimeout(testWait) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

func brokerConfig(b *mosquittotest.Broker, topics ...string) *Config {
	cfg := NewDefaultConfig()
	cfg.Brokers = []string{b.URL("tcp")}
	cfg.Topics = topics
	cfg.ClientID = "edge-test-sub"
	cfg.MaxReconnectInterval = 200 * time.Millisecond
	return cfg
}

type pahoOptions = paho.ClientOptions
