//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edge-agent/edge-agent/connector/mqtt/mosquittotest"
)

// mqttMessages counts the "message" of every mqtt event (one with a
// "topic") the receiver wrote.
func mqttMessages(t *testing.T, rc *receiver) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, g := range receivedGroups(t, rc.out) {
		for _, o := range g {
			if m, ok := o["message"].(string); ok && o["topic"] != nil {
				out[m]++
			}
		}
	}
	return out
}

// The built agent subscribed to a real mosquitto at QoS 1 is killed
// (SIGKILL) while a publisher streams; the publisher goes on while the
// agent is down, so the broker holds messages for its persistent
// session. After the restart every message published is delivered: what
// the agent had acknowledged was in its WAL, and what it had not the
// broker sent again. Both protocol versions hold it.
func TestMQTTKillLosesNothingAcknowledged(t *testing.T) {
	skipShort(t)
	for _, version := range []string{"3.1.1", "5"} {
		t.Run("mqtt"+version, func(t *testing.T) { testMQTTKill(t, version) })
	}
}

func testMQTTKill(t *testing.T, version string) {
	broker := mosquittotest.Start(t, mosquittotest.Options{})
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port})
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: bus
    type: mqtt
    brokers: [%q]
    topics: ["e2e/+/data"]
    qos: 1
    client-id: e2e-gw
    protocol-version: %q
    max-reconnect-interval-ms: 500
`, broker.URL("tcp"), version)
	root.writeConfig()
	agent := root.startReady()
	subscribed := func() int { return strings.Count(root.logText(), `"msg":"mqtt connected and subscribed"`) }
	eventually(t, 20*time.Second, "the agent subscribed", func() bool { return subscribed() >= 1 })
	if want := fmt.Sprintf(`"protocol_version":%q`, version); !strings.Contains(root.logText(), want) {
		t.Fatalf("the agent's log lacks %s:\n%s", want, root.logText())
	}

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL("tcp")).SetClientID("e2e-publisher"))
	if tok := pub.Connect(); !tok.WaitTimeout(20*time.Second) || tok.Error() != nil {
		t.Fatalf("publisher: %v", tok.Error())
	}
	defer pub.Disconnect(100)
	const n = 3000
	published := make(chan error, 1)
	go func() {
		// QoS 1: each publish returns once the broker has the message;
		// bounded in count and time.
		end := time.Now().Add(2 * time.Minute)
		for i := range n {
			tok := pub.Publish(fmt.Sprintf("e2e/dev%d/data", i%7), 1, false, fmt.Sprintf("m-%05d", i))
			if !tok.WaitTimeout(time.Until(end)) || tok.Error() != nil {
				published <- fmt.Errorf("publish %d: %v", i, tok.Error())
				return
			}
		}
		published <- nil
	}()
	eventually(t, deliverTimeout, "some messages delivered", func() bool { return len(mqttMessages(t, rc)) >= 300 })
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	before := len(mqttMessages(t, rc))
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	if before >= n {
		t.Fatalf("all %d messages delivered before the kill: it did not come mid-stream", n)
	}

	restarted := root.startReady()
	var got map[string]int
	eventually(t, deliverTimeout, fmt.Sprintf("all %d messages delivered after the restart", n), func() bool {
		got = mqttMessages(t, rc)
		return len(got) >= n
	})
	dups := 0
	for i := range n {
		c := got[fmt.Sprintf("m-%05d", i)]
		if c == 0 {
			t.Fatalf("m-%05d lost", i)
		}
		dups += c - 1
	}
	t.Logf("kill -9 at %d of %d delivered; all %d delivered after the restart, %d twice (acknowledgements to the broker or from the engine not yet made at the kill)", before, n, n, dups)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}
