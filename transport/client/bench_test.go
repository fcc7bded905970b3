package client

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// benchBatch is the size of one Send call in the benchmarks, as a
// scheduler claiming WAL rows would pass.
const benchBatch = 512

// BenchmarkSend measures batches/s from the client to the ingress library
// over loopback, directly and through a proxy adding 10 ms each way
// (20 ms RTT), with one batch in flight (the Java agent), with 64 (the
// window a session starts with) and with the default cap, 1024, up to
// which the window grows.
func BenchmarkSend(b *testing.B) {
	payload := []byte(`{"_index":0,"_file":"/var/log/app/service.log","_line":1234,"_offset":567890,"_ts":1700000000000,"payload":"GET /api/v1/orders status=200 user=42 latency_ms=13 trace=5f2c9a region=eu-west ok ok ok"}`)
	for _, link := range []struct {
		name string
		rtt  time.Duration
	}{{"loopback", 0}, {"rtt20ms", 20 * time.Millisecond}} {
		for _, inflight := range []int{1, 64, 1024} {
			b.Run(fmt.Sprintf("%s/inflight=%d", link.name, inflight), func(b *testing.B) {
				srv, err := standin.New(standin.Config{Token: "tok"})
				if err != nil {
					b.Fatal(err)
				}
				if err := srv.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
				addr := srv.Addr()
				if link.rtt > 0 {
					addr = transporttest.NewDelayProxy(b, addr, link.rtt).Addr()
				}
				cfg := DefaultConfig()
				cfg.Endpoint, cfg.Token, cfg.MaxInFlight = addr, "tok", inflight
				c, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				batches := make([]transport.Batch, benchBatch)
				for i := range batches {
					batches[i].Payload = payload
				}
				// Connect outside the timed part.
				if _, err := c.Send(context.Background(), []transport.Batch{{ID: 1, Payload: payload}}); err != nil {
					b.Fatal(err)
				}
				next := int64(2)
				b.SetBytes(int64(len(payload)))
				b.ResetTimer()
				for left := b.N; left > 0; left -= benchBatch {
					n := min(left, benchBatch)
					for i := range n {
						batches[i].ID = next
						next++
					}
					res, err := c.Send(context.Background(), batches[:n])
					if err != nil {
						b.Fatal(err)
					}
					if res[n-1].Outcome != transport.Received {
						b.Fatalf("%+v", res[n-1])
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
			})
		}
	}
}
