package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBound: a free port (http.listen port 0) is replaced by the address
// the agent recorded; any other listen is kept as configured; a missing
// or damaged record is an error naming the file.
func TestBound(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("127.0.0.1:40123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("127.0.0.1:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		listen, file, want, wantErr string
	}{
		{"127.0.0.1:0", good, "127.0.0.1:40123", ""},
		{":0", good, "127.0.0.1:40123", ""},
		{"127.0.0.1:9466", good, "127.0.0.1:9466", ""},
		{"127.0.0.1:9466", missing, "127.0.0.1:9466", ""},
		{Off, missing, Off, ""},
		{"127.0.0.1:0", missing, "", missing},
		{"127.0.0.1:0", bad, "", "restart the agent"},
	} {
		got, err := Settings{Listen: tc.listen}.Bound(tc.file)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Bound(%q, %s): %v, want an error containing %q", tc.listen, filepath.Base(tc.file), err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Listen != tc.want {
			t.Errorf("Bound(%q, %s) = %q, %v; want %q", tc.listen, filepath.Base(tc.file), got.Listen, err, tc.want)
		}
	}
}

// TestLocal: the CLI sends the token file's token when it can read the
// file beside the pid file, and http.token otherwise.
func TestLocal(t *testing.T) {
	dir := t.TempDir()
	pid := filepath.Join(dir, "edge-agent.pid")
	if err := os.WriteFile(filepath.Join(dir, "edge-agent.api-address"), []byte("127.0.0.1:40123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Settings{Listen: "127.0.0.1:0", Token: "conf"}.Local(pid)
	if err != nil || got.Listen != "127.0.0.1:40123" || got.Token != "conf" {
		t.Fatalf("without a token file: %+v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "edge-agent.api-token"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = Settings{Listen: "127.0.0.1:9466", Token: "conf"}.Local(pid)
	if err != nil || got.Listen != "127.0.0.1:9466" || got.Token != "from-file" {
		t.Fatalf("with a token file: %+v, %v", got, err)
	}
}
