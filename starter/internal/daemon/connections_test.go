package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/management"
)

// The store keeps the confirmed settings and only their PEM files; a
// staged offer that was rolled back leaves nothing behind once pruned.
func TestConnStoreKeepsOnlyTheSettingsInForce(t *testing.T) {
	st := connStore{dir: filepath.Join(t.TempDir(), "edge-agent.connections")}
	if s, err := st.load(); s != nil || err != nil {
		t.Fatalf("empty store: %v %v", s, err)
	}
	first, err := st.stage(management.EdgeSocketOffer{Hash: []byte{1, 2, 3}, Endpoint: "127.0.0.1:9000", Token: "t1",
		Cert: []byte("CERT1"), Key: []byte("KEY1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.save(first); err != nil {
		t.Fatal(err)
	}
	second, err := st.stage(management.EdgeSocketOffer{Hash: []byte{4, 5, 6}, Token: "t2", Cert: []byte("CERT2"), Key: []byte("KEY2")})
	if err != nil {
		t.Fatal(err)
	}
	st.prune(first) // the second was rolled back
	if _, err := os.Stat(second.CertFile); !os.IsNotExist(err) {
		t.Errorf("the rolled-back certificate is still there: %v", err)
	}
	got, err := st.load()
	if err != nil || got.Endpoint != "127.0.0.1:9000" || got.Token != "t1" || got.CertFile != first.CertFile {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	for _, p := range []string{st.file(), first.CertFile, first.KeyFile} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, fi, err)
		}
	}
	if oc := got.outputConnection(); oc.ID != "010203" || oc.CertFile != first.CertFile {
		t.Errorf("output connection %+v", oc)
	}
	if err := st.remove(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(st.dir, "*")); len(left) != 0 {
		t.Errorf("after remove: %v", left)
	}
	if err := os.WriteFile(st.file(), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.load(); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt file: %v", err)
	}
}

func TestTailLines(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		n             int
		want          []string
	}{
		{"empty", "", 3, nil},
		{"fewer", "a\nb\n", 3, []string{"a", "b"}},
		{"more", "a\nb\nc\nd\n", 2, []string{"c", "d"}},
		{"no final newline", "a\nb", 5, []string{"a", "b"}},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name)
		if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := tailLines(p, tt.n)
		if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("%s: %q %v, want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := tailLines(filepath.Join(dir, "missing"), 1); err == nil {
		t.Error("a missing log gave no error")
	}
}
