package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueueKeyFile: queue.encryption.key-file is read relative to the
// install root and decoded like the output's key; a bad one is a config
// error at its key, never an unencrypted WAL.
func TestQueueKeyFile(t *testing.T) {
	home := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("wal.key", testKey+"\n")
	write("short", "c2hvcnQ=\n")
	write("empty", "\n")
	opts := LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, Home: home}
	queue := func(file string) string { return "queue:\n  encryption:\n    key-file: " + file + "\n" + minimal }

	cfg, _, err := Load(writeConfig(t, queue("wal.key")), opts)
	if err != nil {
		t.Fatal(err)
	}
	enc := cfg.Queue.Encryption
	if len(enc.Key) != 32 || enc.KeyFile != filepath.Join(home, "wal.key") {
		t.Fatalf("encryption %q (%d-byte key)", enc.KeyFile, len(enc.Key))
	}
	if !bytes.Equal(cfg.AgentOptions().WAL.Encryption.Key, enc.Key) {
		t.Fatal("the WAL options lack the key")
	}
	for _, c := range []struct{ file, want string }{
		{"short", "queue.encryption.key-file: " + filepath.Join(home, "short") + ": key must base64-decode to exactly 32 bytes"},
		{"empty", "key is empty"},
		{"missing", "queue.encryption.key-file: cannot read"},
	} {
		_, _, err := Load(writeConfig(t, queue(c.file)), opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.file, err, c.want)
		}
	}
	if cfg, _, err := Load(writeConfig(t, minimal), opts); err != nil || cfg.Queue.Encryption.Key != nil {
		t.Fatalf("no encryption: %v, %v", cfg.Queue.Encryption, err)
	}
}

// TestRemoteKeepsQueueEncryption: a remote config can neither remove nor
// change queue.encryption.
func TestRemoteKeepsQueueEncryption(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "wal.key"), []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, Home: home, ReadFile: os.ReadFile}
	local, _, err := Load(writeConfig(t, "queue:\n  encryption:\n    key-file: wal.key\n"+minimal), opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg, warns, err := LoadRemote(local, []byte(minimal), opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Queue.Encryption.KeyFile != local.Queue.Encryption.KeyFile || !bytes.Equal(cfg.Queue.Encryption.Key, local.Queue.Encryption.Key) {
		t.Fatalf("remote config changed queue.encryption to %q", cfg.Queue.Encryption.KeyFile)
	}
	if !strings.Contains(fmt.Sprint(warns), "queue.encryption") {
		t.Fatalf("no warning: %v", warns)
	}
}
