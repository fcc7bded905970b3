//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
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
	root, restarted, answered, _ := pushKill{
		inputs: `inputs:
  - id: otel
    type: otlp
    http-listen: 127.0.0.1:%d
    grpc-listen: ""
`,
		path: "/v1/logs",
		request: func(url, key string) (*http.Request, error) {
			var recs []*logspb.LogRecord
			for k := range recordsPerRequest {
				recs = append(recs, &logspb.LogRecord{TimeUnixNano: uint64(time.Now().UnixNano()), SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO,
					Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprintf("%s-%d", key, k)}}})
			}
			b, err := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: recs}}}}})
			if err != nil {
				return nil, err
			}
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
			if err == nil {
				req.Header.Set("Content-Type", "application/x-protobuf")
			}
			return req, err
		},
		delivered: otlpBodies,
	}.run(t)
	t.Logf("kill -9: %d exports answered 200, all %d records delivered after the restart", answered, answered*recordsPerRequest)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}
