package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// A reload names the sections that changed and, apart, each changed key
// the running agent cannot apply; log.level is not one of them. It also
// says which plug-ins to rebuild.
func TestChangesNameSectionsAndRestartKeys(t *testing.T) {
	load := func(text string) *Config {
		t.Helper()
		cfg, _, err := loadText(t, text)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cur := load("input:\n  type: file\n  paths: [\"in/*.log\"]\nqueue:\n  path: data/wal.db\nlog:\n  level: info\n")
	next := load(`input:
  type: file
  paths: ["in/*.log", "more/*.log"]
queue:
  path: data/other.db
  fsync: false
  backlog-share: 0.5
agent:
  delivery-guarantee: NON
log:
  level: debug
  file: log/other.log
http:
  listen: 127.0.0.1:9467
management:
  opamp:
    endpoint: ws://127.0.0.1:4320/v1/opamp
`)
	ch := cur.Changes(next)
	if want := []string{"agent", "queue", "input", "log", "http", "management"}; !slices.Equal(ch.Sections, want) {
		t.Errorf("changed sections = %q, want %q", ch.Sections, want)
	}
	if want := []string{"queue.path", "queue.fsync", "queue.backlog-share", "agent.delivery-guarantee", "log.file", "http.listen", "management"}; !slices.Equal(ch.RestartKeys, want) {
		t.Errorf("restart keys = %q, want %q", ch.RestartKeys, want)
	}
	if !slices.Equal(ch.Inputs, []string{""}) || ch.Output {
		t.Errorf("rebuild inputs %q output %v, want the input (no id written) only", ch.Inputs, ch.Output)
	}
	if same := cur.Changes(cur); len(same.Sections) != 0 || len(same.RestartKeys) != 0 || len(same.Inputs) != 0 || same.Output {
		t.Errorf("an unchanged config reports %+v", same)
	}
	// A token read from output.token-file counts, so a reload after the
	// file changed rebuilds the output (the cure for AUTH_FAILED).
	a := load("output:\n  type: transport\n  endpoint: h:1\n  token: one\n" + minimal)
	b := load("output:\n  type: transport\n  endpoint: h:1\n  token: two\n" + minimal)
	if ch := a.Changes(b); !ch.Output || len(ch.Inputs) != 0 || !slices.Equal(ch.Sections, []string{"output"}) {
		t.Errorf("token change: %+v, want the output rebuilt", ch)
	}
}

// output.endpoints loads as a list, each entry's problem at its own
// line:column, and a changed list or mode rebuilds the output (reload,
// OpAMP remote config).
func TestEndpointsLoadAndChange(t *testing.T) {
	load := func(text string) *Config {
		t.Helper()
		cfg, _, err := loadText(t, text)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	a := load("output:\n  type: transport\n  endpoints: [h:1, h:2]\n  token: one\n" + minimal)
	if o := a.Output.Options.(*output.TransportConfig); !slices.Equal(o.Endpoints, []string{"h:1", "h:2"}) || o.EndpointMode != output.ModeFailover {
		t.Fatalf("endpoints %q mode %q", o.Endpoints, o.EndpointMode)
	}
	b := load("output:\n  type: transport\n  endpoints: [h:1, h:3]\n  token: one\n" + minimal)
	c := load("output:\n  type: transport\n  endpoints: [h:1, h:3]\n  endpoint-mode: spread\n  token: one\n" + minimal)
	for _, ch := range []Changes{a.Changes(b), b.Changes(c)} {
		if !ch.Output || !slices.Equal(ch.Sections, []string{"output"}) {
			t.Errorf("endpoint list change: %+v, want the output rebuilt", ch)
		}
	}
	_, _, err := loadText(t, "output:\n  type: transport\n  endpoint: h:9\n  endpoints:\n    - h:1\n    - nope\n  token: one\n"+minimal)
	for _, want := range []string{"output.endpoints: endpoint and endpoints are both set", ":6:", "output.endpoints[1]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
