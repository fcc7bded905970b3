package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"INFO", slog.LevelInfo, false},
		{"debug", slog.LevelDebug, false},
		{"warn", slog.LevelWarn, false},
		{"Warning", slog.LevelWarn, false},
		{" error ", slog.LevelError, false},
		{"trace", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseLevel(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("ParseLevel(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestFileJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log", "edge-agent.log")
	var stderr bytes.Buffer
	logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo), File: file}, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	logger.Debug("hidden")
	logger.Info("BOOTSTRAP_READY edge-agent started", "agent_id", "a1")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("want 1 record (debug filtered), got %q", b)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if rec["msg"] != "BOOTSTRAP_READY edge-agent started" || rec["agent_id"] != "a1" {
		t.Fatalf("record = %v", rec)
	}
}

// A --background agent (no Stderr) logs to the file alone: its stderr is
// edge-agent.out, kept for what only the runtime can say (a panic).
func TestNoStderrFileOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "edge-agent.log")
	logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo), File: file}})
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("only in the file")
	closer.Close()
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "only in the file") {
		t.Fatalf("file = %q", b)
	}
}

// Under systemd or in a container stderr is a pipe: every record reaches it
// as one JSON object per line (journald and log collectors parse those),
// and the file still gets its copy.
func TestStderrJSONWhenNotTerminal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "edge-agent.log")
	var stderr bytes.Buffer
	logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo), Format: FormatText, File: file}, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	logger.Debug("hidden")
	logger.Info("BOOTSTRAP_READY edge-agent started", "agent_id", "a1")
	logger.Warn("engine unavailable", "error", "connection refused")
	closer.Close()
	recs := decodeLines(t, stderr.String())
	if len(recs) != 2 {
		t.Fatalf("want 2 JSON records on stderr (debug filtered), got %q", stderr.String())
	}
	if recs[0]["msg"] != "BOOTSTRAP_READY edge-agent started" || recs[0]["agent_id"] != "a1" || recs[1]["level"] != "WARN" {
		t.Fatalf("records = %v", recs)
	}
	// log.format chooses the file's format only.
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), `msg="BOOTSTRAP_READY edge-agent started"`) {
		t.Fatalf("text file = %q", b)
	}
}

// On a terminal stderr gets tint's coloured text, not JSON.
func TestStderrTintOnTerminal(t *testing.T) {
	var stderr bytes.Buffer
	logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo)}, Stderr: &stderr, Terminal: true})
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("hello", "file_count", 3)
	closer.Close()
	out := stderr.String()
	if !strings.Contains(out, "\x1b[") || !strings.Contains(out, "hello") || json.Valid([]byte(strings.TrimSpace(out))) {
		t.Fatalf("terminal output is not tint: %q", out)
	}
}

// Console serves stderr before the config is known: the same choice.
func TestConsole(t *testing.T) {
	var pipe, tty bytes.Buffer
	Console(&pipe, false, slog.LevelInfo).Error("BOOTSTRAP_FAILED x", "exit_code", 78)
	Console(&tty, true, slog.LevelInfo).Error("BOOTSTRAP_FAILED x", "exit_code", 78)
	if recs := decodeLines(t, pipe.String()); len(recs) != 1 || recs[0]["exit_code"] != float64(78) {
		t.Fatalf("console without a terminal: %q", pipe.String())
	}
	if !strings.Contains(tty.String(), "\x1b[") {
		t.Fatalf("console on a terminal: %q", tty.String())
	}
}

// Durations carry their unit in every handler: JSON would otherwise print
// nanoseconds as a bare integer (took=17000000).
func TestDurationsCarryUnits(t *testing.T) {
	logAll := func(l *slog.Logger) {
		l.Info("stopped",
			slog.Duration("took", 17*time.Millisecond),
			"retry_in", 1500*time.Millisecond, // a time.Duration passed as any
			slog.Group("client", slog.Duration("wait", 2*time.Second)))
	}
	dir := t.TempDir()
	for _, format := range []Format{FormatJSON, FormatText} {
		t.Run(string(format), func(t *testing.T) {
			file := filepath.Join(dir, string(format)+".log")
			var stderr bytes.Buffer
			logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo), Format: format, File: file}, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			logAll(logger)
			closer.Close()
			recs := decodeLines(t, stderr.String())
			if len(recs) != 1 {
				t.Fatalf("stderr = %q", stderr.String())
			}
			client, _ := recs[0]["client"].(map[string]any)
			if recs[0]["took"] != "17ms" || recs[0]["retry_in"] != "1.5s" || client["wait"] != "2s" {
				t.Errorf("JSON stderr durations: %v", recs[0])
			}
			b, _ := os.ReadFile(file)
			if format == FormatJSON {
				recs := decodeLines(t, string(b))
				client, _ := recs[0]["client"].(map[string]any)
				if recs[0]["took"] != "17ms" || recs[0]["retry_in"] != "1.5s" || client["wait"] != "2s" {
					t.Errorf("JSON file durations: %v", recs[0])
				}
				return
			}
			for _, want := range []string{"took=17ms", "retry_in=1.5s", "client.wait=2s"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("text file lacks %s: %q", want, b)
				}
			}
		})
	}
	var tty bytes.Buffer
	logger, _, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo)}, Stderr: &tty, Terminal: true})
	if err != nil {
		t.Fatal(err)
	}
	logAll(logger)
	for _, want := range []string{"17ms", "1.5s", "2s"} {
		if !strings.Contains(tty.String(), want) {
			t.Errorf("tint output lacks %s: %q", want, tty.String())
		}
	}
}

// decodeLines parses s as JSON lines, failing on any line that is not one.
func decodeLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

func TestTerminalAlsoWritesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "edge-agent.log")
	var stderr bytes.Buffer
	logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelDebug), Format: FormatText, File: file}, Stderr: &stderr, Terminal: true})
	if err != nil {
		t.Fatal(err)
	}
	logger.Debug("hello", "file_count", 3)
	closer.Close()
	if !strings.Contains(stderr.String(), "hello") {
		t.Fatalf("terminal output = %q", stderr.String())
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "msg=hello") || !strings.Contains(string(b), "file_count=3") {
		t.Fatalf("text file = %q", b)
	}
}

func TestErrors(t *testing.T) {
	if _, _, err := New(Options{Settings: Settings{File: filepath.Join(t.TempDir(), "x.log"), Format: "xml"}}); err == nil {
		t.Error("unknown format accepted")
	}
	// A folder where the file should be: the file cannot open.
	dir := t.TempDir()
	if _, _, err := New(Options{Settings: Settings{File: dir}}); err == nil {
		t.Error("unwritable log path accepted")
	}
}

func TestNoOutputsDiscards(t *testing.T) {
	logger, closer, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("dropped")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("regular file reported as terminal")
	}
	if IsTerminal(nil) {
		t.Error("nil reported as terminal")
	}
}

// The file rotates by size and keeps max-backups rotated files.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "edge-agent.log")
	logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo), File: file, MaxSizeMB: 1, MaxBackups: 2}})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 8<<10)
	for i := 0; i < 600; i++ { // ~4.8 MB: four rotations
		logger.Info("filler", "data", big)
	}
	closer.Close()
	// lumberjack removes surplus backups in the background.
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, _ := os.ReadDir(dir)
		if len(entries) == 3 { // the live file + 2 backups
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("files after rotation: %v, want the log and 2 backups", names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Setting the LevelVar changes what every handler writes at once, as a
// config reload of log.level does.
func TestLevelVarChangesLevelOfEveryHandler(t *testing.T) {
	file := filepath.Join(t.TempDir(), "edge-agent.log")
	var stderr bytes.Buffer
	lv := new(slog.LevelVar)
	logger, closer, err := New(Options{Settings: Settings{Level: Level(slog.LevelWarn), Format: FormatJSON, File: file}, Stderr: &stderr, LevelVar: lv})
	if err != nil {
		t.Fatal(err)
	}
	if lv.Level() != slog.LevelWarn {
		t.Fatalf("New left the LevelVar at %v, want WARN", lv.Level())
	}
	logger.Info("before")
	lv.Set(slog.LevelDebug)
	logger.Debug("after")
	closer.Close()
	recs := decodeLines(t, stderr.String())
	if len(recs) != 1 || recs[0]["msg"] != "after" {
		t.Fatalf("stderr records = %v, want only the debug one written after the change", recs)
	}
	b, _ := os.ReadFile(file)
	if frecs := decodeLines(t, string(b)); len(frecs) != 1 || frecs[0]["msg"] != "after" {
		t.Fatalf("file records = %v, want only the debug one written after the change", frecs)
	}
}
