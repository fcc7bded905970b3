package mqtt

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/mqtt/mosquittotest"
)

// BenchmarkQoS1 is the end-to-end rate through a real mosquitto: a
// publisher sends b.N QoS 1 messages of 200 bytes, the input takes them,
// and a scheduler stand-in polls and commits at once (so each ack goes
// out as in the agent, without the WAL). It reports messages/s and the
// heap in use at the end, with mosquitto's default in-flight window (20)
// and without one.
func BenchmarkQoS1(b *testing.B) {
	for _, unlimited := range []bool{false, true} {
		b.Run(fmt.Sprintf("unlimited-inflight=%t", unlimited), func(b *testing.B) {
			benchQoS1(b, mosquittotest.Options{UnlimitedInflight: unlimited})
		})
	}
}

func benchQoS1(b *testing.B, opts mosquittotest.Options) {
	broker := mosquittotest.Start(b, opts)
	cfg := NewDefaultConfig()
	cfg.Brokers, cfg.Topics, cfg.ClientID = []string{broker.URL("tcp")}, []string{"bench/#"}, "bench-sub"
	in, err := New(cfg, input.Settings{ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := in.Open(b.Context(), input.OpenOptions{}); err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	for deadline := time.Now().Add(testWait); in.stats.subscribed.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("not subscribed")
		}
	}
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL("tcp")).SetClientID("bench-pub"))
	if tok := pub.Connect(); !tok.WaitTimeout(testWait) || tok.Error() != nil {
		b.Fatal(tok.Error())
	}
	defer pub.Disconnect(100)
	body := strings.Repeat("x", 190)
	b.ResetTimer()
	start := time.Now()
	go func() {
		var last paho.Token
		for i := range b.N {
			last = pub.Publish("bench/a", 1, false, fmt.Sprintf("%09d%s", i, body))
		}
		if last != nil {
			last.WaitTimeout(testWait)
		}
	}()
	got := 0
	var dst []input.Event
	deadline := time.After(5 * time.Minute)
	for got < b.N {
		dst, _ = in.Poll(b.Context(), dst[:0], 1024)
		if len(dst) > 0 {
			in.Committed(len(dst))
			got += len(dst)
			continue
		}
		select {
		case <-in.Wakeup():
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			b.Fatalf("got %d of %d", got, b.N)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
}
