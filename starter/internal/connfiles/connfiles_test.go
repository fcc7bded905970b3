package connfiles

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStageSavePrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "connections")
	var cert1, key1, ca1 string
	if err := Stage(dir, "kind", "0123456789abcdef", PEM{Data: []byte("C1"), Name: "cert.pem", Path: &cert1},
		PEM{Data: []byte("K1"), Name: "key.pem", Path: &key1}, PEM{Name: "ca.pem", Path: &ca1}); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "kind-0123456789ab-cert.pem"); cert1 != want {
		t.Errorf("cert path %q, want %q", cert1, want)
	}
	if ca1 != "" {
		t.Errorf("a PEM without data got a path: %q", ca1)
	}
	for _, p := range []string{cert1, key1} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", p, err, st)
		}
	}
	var cert2 string
	if err := Stage(dir, "kind", "fedcba", PEM{Data: []byte("C2"), Name: "cert.pem", Path: &cert2}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other-0123-cert.pem")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, "kind", map[string]string{"cert": cert2}, cert2); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(File(dir, "kind"))
	var got map[string]string
	if err != nil || json.Unmarshal(raw, &got) != nil || got["cert"] != cert2 {
		t.Fatalf("saved %q (%v)", raw, err)
	}
	for p, want := range map[string]bool{cert1: false, key1: false, cert2: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s present = %v, want %v", p, err == nil, want)
		}
	}
}

// TestLoad: what Save wrote comes back; no record is nil without an
// error; a record that does not decode, or lacks a required field, is
// ErrCorrupt naming its file.
func TestLoad(t *testing.T) {
	type rec struct {
		Hash string `json:"hash"`
	}
	complete := func(r *rec) bool { return r.Hash != "" }
	dir := t.TempDir()
	if got, err := Load(dir, "edgesocket", complete); got != nil || err != nil {
		t.Fatalf("Load with nothing saved = %v, %v; want nil, nil", got, err)
	}
	if err := Save(dir, "edgesocket", rec{Hash: "abc"}); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(dir, "edgesocket", complete); err != nil || got == nil || got.Hash != "abc" {
		t.Fatalf("Load after Save = %v, %v; want hash abc", got, err)
	}
	for _, raw := range []string{"{", `{"hash":""}`, `[]`} {
		if err := os.WriteFile(File(dir, "edgesocket"), []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(dir, "edgesocket", complete)
		if got != nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), File(dir, "edgesocket")) {
			t.Errorf("Load of %q = %v, %v; want ErrCorrupt naming the file", raw, got, err)
		}
	}
}
