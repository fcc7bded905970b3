package config

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// Switching output.type from transport to console in a full file must keep
// it loading (Java parity): the console output accepts, and ignores, the
// transport's keys.
func TestConsoleKeepsTransportKeys(t *testing.T) {
	data, err := os.ReadFile(shippedExample(t))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.Count(text, "\n  type: transport\n") != 1 {
		t.Fatal("the example no longer sets output.type: transport on its own line")
	}
	cfg, warns := mustLoad(t, strings.Replace(text, "\n  type: transport\n", "\n  type: console\n", 1))
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	cc, ok := cfg.Output.Options.(*output.ConsoleConfig)
	if cfg.Output.Type != output.TypeConsole || !ok {
		t.Fatalf("output %q with %T", cfg.Output.Type, cfg.Output.Options)
	}
	if cc.Transport.Client.Endpoint != "127.0.0.1:9999" || cc.Transport.Client.MaxInFlight != 32768 {
		t.Errorf("transport keys not kept: %+v", cc.Transport.Client)
	}
}

// What only the transport uses is not checked for console; what is wrong
// whatever the type still is.
func TestConsoleChecksOnlyNumbers(t *testing.T) {
	cfg, warns := mustLoad(t, `output:
  type: console
  endpoint: 0.0.0.0:1
  token-file: /does/not/exist
  auth-type: none
  packet-mode: udp
  compression: zstd
  encryption: rot13
  aes-secret-key-file: /does/not/exist/either
  tls:
    enabled: true
    cert-file: c.pem
    insecure-skip-verify: true
`+minimal)
	if len(warns) != 0 {
		t.Errorf("console warns about transport settings: %v", warns)
	}
	if cfg.Output.Type != output.TypeConsole {
		t.Errorf("type %q", cfg.Output.Type)
	}
	for _, typ := range []string{"console", "transport"} {
		_, _, err := loadText(t, "output:\n  type: "+typ+"\n  endpoint: h:1\n  token: t\n  max-in-flight: 65537\n"+minimal)
		if want := "agent.yaml:5:3: output.max-in-flight: must be between 1 and 65536, got 65537"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", typ, err, want)
		}
	}
}

func TestOutputSharedKeys(t *testing.T) {
	cfg, _, err := Load(writeConfig(t, "output:\n  type: ${OUT}\n  id: '  out-9 '\n  endpoint: h:1\n  token: t\n"+minimal),
		LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{"OUT": " Transport "}.get})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Output.Type != output.TypeTransport || cfg.Output.ID != "out-9" {
		t.Errorf("type %q id %q", cfg.Output.Type, cfg.Output.ID)
	}
	transportOf(t, cfg)
	// A typo in an output key is found whatever the type.
	for _, typ := range []string{"console", "transport"} {
		_, _, err := loadText(t, "output:\n  type: "+typ+"\n  max-in-flite: 8\n"+minimal)
		if want := "agent.yaml:3:3: output.max-in-flite: unknown key; did you mean output.max-in-flight?"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", typ, err, want)
		}
	}
}

// output.rate-limit is the agent's, whatever the type: decoded for every
// type, checked by package output at its own keys, handed to the agent,
// and retuned by a reload without rebuilding the output.
func TestOutputRateLimit(t *testing.T) {
	for _, typ := range []string{"console", "transport"} {
		text := "output:\n  type: " + typ + "\n  endpoint: h:1\n  token: t\n  rate-limit:\n    events-per-second: 2.5\n    bytes-per-second: 4096\n    burst: 10\n" + minimal
		cfg, _, err := loadText(t, text)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		want := output.RateLimit{EventsPerSecond: 2.5, BytesPerSecond: 4096, Burst: 10}
		if got := cfg.AgentOptions().RateLimit; got != want {
			t.Errorf("%s: agent gets %+v, want %+v", typ, got, want)
		}
	}
	_, _, err := loadText(t, "output:\n  rate-limit:\n    events-per-second: -1\n    burst: x\n"+minimal)
	for _, want := range []string{
		"agent.yaml:3:5: output.rate-limit.events-per-second: must be >= 0",
		"agent.yaml:4:5: output.rate-limit.burst: expected an integer",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	_, _, err = loadText(t, "output:\n  rate-limit:\n    event-per-second: 1\n"+minimal)
	if want := "output.rate-limit.event-per-second: unknown key; did you mean output.rate-limit.events-per-second?"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}

	a, _, err := loadText(t, "output:\n  type: transport\n  endpoint: h:1\n  token: t\n"+minimal)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := loadText(t, "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  rate-limit:\n    bytes-per-second: 1000\n"+minimal)
	if err != nil {
		t.Fatal(err)
	}
	if ch := a.Changes(b); ch.Output || !slices.Equal(ch.Sections, []string{"output"}) || len(ch.RestartKeys) != 0 {
		t.Errorf("rate-limit change: %+v, want the output section changed, nothing rebuilt or restarted", ch)
	}
}
