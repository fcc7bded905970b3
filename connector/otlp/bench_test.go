package otlp

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/edge-agent/edge-agent/connector/input"
)

// BenchmarkGRPCExport is the rate of records through the input: 4
// exporters send gRPC exports of 100 records of about 200 bytes; a
// scheduler stand-in polls and commits at once (no WAL). b.N counts
// exports; it reports records/s and the heap in use at the end.
func BenchmarkGRPCExport(b *testing.B) {
	cfg := NewDefaultConfig()
	cfg.HTTPListen, cfg.GRPCListen = "", "127.0.0.1:0"
	in, err := New(cfg, input.Settings{ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := in.Open(b.Context(), input.OpenOptions{}); err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	stop, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		var dst []input.Event
		for {
			dst, _ = in.Poll(context.Background(), dst[:0], 1024)
			if len(dst) > 0 {
				in.Committed(len(dst))
				continue
			}
			select {
			case <-in.Wakeup():
			case <-stop:
				return
			}
		}
	}()
	conn, err := grpc.NewClient(in.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := collogspb.NewLogsServiceClient(conn)
	var bodies []string
	for range 100 {
		bodies = append(bodies, strings.Repeat("m", 170))
	}
	req := request(bodies...)
	next := make(chan struct{})
	go func() {
		for range b.N {
			next <- struct{}{}
		}
		close(next)
	}()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range next {
				if _, err := client.Export(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	<-polled
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.N*100)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
}
