package cli

import (
	"strings"
	"testing"
)

const processConfig = `agent:
  processors:
    - set: {site: plant-7}
inputs:
  - id: app
    paths: [/var/log/app/*.log]
    processors:
      - parse: {format: json}
      - drop: 'payload.level == "debug"'
      - redact: {detectors: [email], action: mask}
      - dedup: {window-ms: 600000}
      - remove: [_ts, _first_ts, _last_ts, _offset]
  - id: db
    paths: [/var/log/db/*.log]
output:
  type: console
`

func TestProcessDryRun(t *testing.T) {
	e := newTestEnv(t)
	cfg := e.write("agent.yaml", processConfig)
	e.stdin = `{"level":"info","msg":"hi bob@example.com"}
{"level":"debug","msg":"noise"}
{"level":"error","msg":"disk full"}
{"level":"error","msg":"disk full"}
`
	if code := e.run("process", "--config", cfg, "--input", "app"); code != 0 {
		t.Fatalf("exit %d: %s", code, e.stderr.String())
	}
	want := `{"_file":"-","_line":1,"_repeats":1,"payload":{"level":"info","msg":"hi ***************"},"site":"plant-7"}
{"_file":"-","_line":3,"_repeats":2,"payload":{"level":"error","msg":"disk full"},"site":"plant-7"}
`
	if e.stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", e.stdout.String(), want)
	}
	for _, line := range []string{
		"processors[0] parse", "in=4 out=4",
		"processors[1] drop", "in=4 out=3 dropped=1",
		"processors[2] redact", "redacted_email=1",
		"processors[3] dedup", "in=3 out=2 folded=1",
		"processors[5] set",
	} {
		if !strings.Contains(e.stderr.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, e.stderr.String())
		}
	}
}

func TestProcessPicksAnInput(t *testing.T) {
	e := newTestEnv(t)
	cfg := e.write("agent.yaml", processConfig)
	if code := e.run("process", "--config", cfg); code == 0 || !strings.Contains(e.stderr.String(), "pick one with --input (app, db)") {
		t.Errorf("no --input with two inputs: exit %d, %s", code, e.stderr.String())
	}
	if code := e.run("process", "--config", cfg, "--input", "web"); code == 0 || !strings.Contains(e.stderr.String(), `no input with id "web"`) {
		t.Errorf("unknown input: exit %d, %s", code, e.stderr.String())
	}
	e.stdin = "x\n"
	if code := e.run("process", "--config", cfg, "--input", "db"); code != 0 || !strings.Contains(e.stdout.String(), `"payload":"x","site":"plant-7"`) {
		t.Errorf("db (the agent's processors only): exit %d, %s %s", code, e.stdout.String(), e.stderr.String())
	}
}
