package management

import (
	"errors"
	"sync"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// fakeOwnLogs records what own_logs offers asked for.
type fakeOwnLogs struct {
	mu       sync.Mutex
	endpoint []string
	headers  map[string]string
	refuse   error
}

func (f *fakeOwnLogs) Apply(endpoint string, headers map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	f.endpoint = append(f.endpoint, endpoint)
	f.headers = headers
	return nil
}

func (f *fakeOwnLogs) last() (string, map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.endpoint) == 0 {
		return "", nil
	}
	return f.endpoint[len(f.endpoint)-1], f.headers
}

// With a shipper the agent reports its own logs, takes the server's
// own_logs endpoint and headers, and reports the offer APPLIED; a
// refusal is reported FAILED with its reason.
func TestOwnLogsOffer(t *testing.T) {
	own := &fakeOwnLogs{}
	f := newFixture(t, func(o *Options) { o.OwnLogs = own })
	f.start(t)
	a := f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Capabilities != 0 })
	if a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs == 0 {
		t.Fatalf("capabilities %v lack ReportsOwnLogs", a.Capabilities)
	}
	f.srv.OfferOwnLogs("http://127.0.0.1:4318/v1/logs", map[string]string{"Authorization": "Bearer k"})
	f.wait(t, "own_logs applied", func(a opampdev.Agent) bool { return a.ConnectionStatus() == "APPLIED" })
	if ep, h := own.last(); ep != "http://127.0.0.1:4318/v1/logs" || h["Authorization"] != "Bearer k" {
		t.Fatalf("applied %q %v", ep, h)
	}
	own.mu.Lock()
	own.refuse = errors.New("own_logs destination_endpoint \"x\": want an http or https URL")
	own.mu.Unlock()
	f.srv.OfferOwnLogs("x", nil)
	got := f.wait(t, "own_logs refused", func(a opampdev.Agent) bool { return a.ConnectionStatus() == "FAILED" })
	if msg := got.Connections.GetErrorMessage(); msg != "own_logs destination_endpoint \"x\": want an http or https URL" {
		t.Fatalf("error message %q", msg)
	}
}

// Without a shipper ReportsOwnLogs is not advertised.
func TestNoOwnLogsCapabilityWithoutShipper(t *testing.T) {
	f := newFixture(t, nil)
	f.start(t)
	a := f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Capabilities != 0 })
	if a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs != 0 {
		t.Fatalf("ReportsOwnLogs advertised without a shipper")
	}
}
