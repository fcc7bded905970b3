//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// otlpBodies counts the string "body" of every event with a
// severity_number the receiver wrote (otlp events).
func otlpBodies(t *testing.T, rc *receiver) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, g := range receivedGroups(t, rc.out) {
		for _, o := range g {
			if b, ok := o["body"].(string); ok && o["severity_number"] != nil {
				out[b]++
			}
		}
	}
	return out
}

// The built agent with an otlp input is killed (SIGKILL) while four
// exporters stream OTLP/HTTP protobuf exports of 20 records; after the
// restart every record of every export it had answered 200 is delivered.
func TestOTLPKillLosesNothingAnswered(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	hold := holdPort(t)
	root := newRoot(t, options{port: rc.port})
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: otel
    type: otlp
    http-listen: 127.0.0.1:%d
    grpc-listen: ""
`, hold.port)
	root.writeConfig()
	hold.release()
	agent := root.startReady()
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/logs", hold.port)

	var mu sync.Mutex
	answered := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 20 * time.Second}
	for s := range 4 {
		wg.Go(func() {
			end := time.Now().Add(2 * time.Minute)
			for r := 0; r < 100_000 && time.Now().Before(end); r++ {
				select {
				case <-stop:
					return
				default:
				}
				var recs []*logspb.LogRecord
				for k := range 20 {
					recs = append(recs, &logspb.LogRecord{TimeUnixNano: uint64(time.Now().UnixNano()), SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO,
						Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprintf("%d-%d-%d", s, r, k)}}})
				}
				b, _ := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: recs}}}}})
				resp, err := client.Post(url, "application/x-protobuf", bytes.NewReader(b))
				if err != nil {
					return // the agent was killed
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					answered[fmt.Sprintf("%d-%d", s, r)] = true
					mu.Unlock()
				}
			}
		})
	}
	eventually(t, deliverTimeout, "some records delivered", func() bool { return len(otlpBodies(t, rc)) >= 2000 })
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	close(stop)
	wg.Wait()
	if len(answered) == 0 {
		t.Fatal("no export answered 200 before the kill")
	}
	restarted := root.startReady()
	missing := ""
	eventually(t, deliverTimeout, fmt.Sprintf("every record of the %d exports answered 200 delivered", len(answered)), func() bool {
		got := otlpBodies(t, rc)
		missing = ""
		for key := range answered {
			for k := range 20 {
				if got[fmt.Sprintf("%s-%d", key, k)] == 0 {
					missing = fmt.Sprintf("%s-%d", key, k)
					return false
				}
			}
		}
		return true
	})
	if missing != "" {
		t.Fatalf("%s lost", missing)
	}
	t.Logf("kill -9: %d exports answered 200, all %d records delivered after the restart", len(answered), len(answered)*20)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}
