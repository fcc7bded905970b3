package httpin

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// BenchmarkPost is the rate of records through the input: 4 senders POST
// NDJSON bodies of 100 records of about 200 bytes; a scheduler stand-in
// polls and commits at once (no WAL). b.N counts requests; it reports
// records/s and the heap in use at the end.
func BenchmarkPost(b *testing.B) {
	cfg := NewDefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	in, err := New(cfg, input.Settings{ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := in.Open(b.Context(), input.OpenOptions{}); err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		var dst []input.Event
		for {
			dst, _ = in.Poll(b.Context(), dst[:0], 1024)
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
	var body bytes.Buffer
	pad := strings.Repeat("x", 170)
	for k := range 100 {
		fmt.Fprintf(&body, "{\"seq\":%d,\"msg\":%q}\n", k, pad)
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
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
				resp, err := client.Post(in.url(), "application/x-ndjson", bytes.NewReader(body.Bytes()))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
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
