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
	if stderr.Len() != 0 {
		t.Fatalf("non-terminal run wrote to stderr: %q", stderr.String())
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
