package config

import (
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

func TestExpandEnv(t *testing.T) {
	e := env{"HOST": "collector", "PORT": "9999", "EMPTY": ""}.get
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "${HOST}:${PORT}", want: "collector:9999"},
		{in: "pre-${HOST}-post", want: "pre-collector-post"},
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${HOST:-fallback}", want: "collector"},
		{in: "${MISSING:-}", want: ""},
		{in: "${MISSING:-a:-b}", want: "a:-b"},
		{in: "cost $5 and $HOST", want: "cost $5 and $HOST"},
		{in: "$${HOST}", want: "${HOST}"},
		{in: "$$${HOST}", want: "$${HOST}"}, // "$", then an escaped "${"
		{in: "${MISSING}", err: "environment variable MISSING is not set"},
		{in: "${EMPTY}", err: "environment variable EMPTY is not set or empty"},
		{in: "${HOST", err: "unterminated ${"},
		{in: "${}", err: "invalid environment variable name"},
		{in: "${A-B}", err: "invalid environment variable name"},
		{in: "${9A}", err: "invalid environment variable name"},
	}
	for _, tc := range tests {
		got, err := expandEnv(tc.in, e)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("expandEnv(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestLoadExpandsEnv(t *testing.T) {
	p := writeConfig(t, `agent:
  id: ${AGENT_ID}
  idle-sleep-ms: ${IDLE_MS}
queue:
  fsync: ${FSYNC:-true}
input:
  paths:
    - ${LOG_DIR}/*.log
    - "${LOG_DIR:-/none}/b.log"
output:
  type: ${OUT:-transport}
  endpoint: ${HOST}:${PORT:-9999}
  token: ${EDGE_AGENT_TOKEN}
`)
	cfg, _, err := Load(p, LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{
		"AGENT_ID": "edge-7", "IDLE_MS": "50", "FSYNC": "false", "LOG_DIR": "/srv/logs",
		"HOST": "10.0.0.5", "EDGE_AGENT_TOKEN": " s3cret ",
	}.get})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.ID != "edge-7" || cfg.Agent.IdleSleep != 50*time.Millisecond || cfg.Queue.Fsync ||
		cfg.Output.Type != output.TypeTransport || transportOf(t, cfg).Client.Endpoint != "10.0.0.5:9999" ||
		transportOf(t, cfg).Client.Token != " s3cret " {
		t.Errorf("expanded: %+v", cfg)
	}
	if got := fileInput(t, cfg).Paths; got[0] != "/srv/logs/*.log" || got[1] != "/srv/logs/b.log" {
		t.Errorf("paths: %v", got)
	}
	// Keys are never expanded: ${X} as a key is just an unknown key.
	_, _, err = Load(writeConfig(t, "agent:\n  ${X}: 1\n"+minimal), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{"X": "id"}.get})
	if err == nil || !strings.Contains(err.Error(), "agent.yaml:2:3: agent.${X}: unknown key") {
		t.Errorf("env in key: %v", err)
	}
}

func TestLoadEnvWrongType(t *testing.T) {
	_, _, err := Load(writeConfig(t, "agent:\n  idle-sleep-ms: ${IDLE_MS}\n"+minimal),
		LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{"IDLE_MS": "soon"}.get})
	if err == nil || !strings.Contains(err.Error(), `agent.yaml:2:3: agent.idle-sleep-ms: expected an integer, got "soon"`) {
		t.Errorf("err = %v", err)
	}
}
