//go:build unix

package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// otlpSink is an OTLP/HTTP logs endpoint on loopback that keeps the
// bodies of the records posted with the right header, and the instance
// id of their resource.
type otlpSink struct {
	mu       sync.Mutex
	bodies   []string
	instance string
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req collogspb.ExportLogsServiceRequest
	if r.Header.Get("Authorization") != "Bearer own-logs" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "refused", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rl := range req.ResourceLogs {
		for _, kv := range rl.GetResource().GetAttributes() {
			if kv.Key == "service.instance.id" {
				s.instance = kv.GetValue().GetStringValue()
			}
		}
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				s.bodies = append(s.bodies, lr.GetBody().GetStringValue())
			}
		}
	}
}

func (s *otlpSink) has(body string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bodies {
		if b == body {
			return true, s.instance
		}
	}
	return false, s.instance
}

// The OpAMP server's own_logs offer makes the agent post its own logs to
// that OTLP/HTTP endpoint, with the offered headers.
func TestOpAMPOwnLogs(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	sink := &otlpSink{}
	col := httptest.NewServer(sink)
	defer col.Close()
	root := newRoot(t, options{port: rc.port, extra: managed(srv.Endpoint())})
	p := root.startReady()
	defer root.stop(p)
	uid := root.instanceUID()
	waitAgent(t, srv, uid, "ReportsOwnLogs", func(a opampdev.Agent) bool {
		return a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs != 0
	})
	hash := srv.OfferOwnLogs(col.URL+"/v1/logs", map[string]string{"Authorization": "Bearer own-logs"})
	waitAgent(t, srv, uid, "own_logs APPLIED", func(a opampdev.Agent) bool {
		return a.ConnectionStatus() == "APPLIED" && string(a.Connections.GetLastConnectionSettingsHash()) == string(hash)
	})
	var instance string
	eventually(t, deliverTimeout, "the agent's own log line at the endpoint", func() bool {
		var ok bool
		ok, instance = sink.has("own logs shipped where the OpAMP server's own_logs says")
		return ok
	})
	if instance != uid {
		t.Fatalf("resource service.instance.id %q, want %q", instance, uid)
	}
}
