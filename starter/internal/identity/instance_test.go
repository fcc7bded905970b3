package identity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestInstanceUIDCreatedOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "edge-agent.instance-uid")
	first, err := LoadInstanceUID(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := uuid.UUID(first).Version(); v != 7 {
		t.Fatalf("version %d, want a UUIDv7", v)
	}
	again, err := LoadInstanceUID(path)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("second load gave %s, want the stored %s", again, first)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != first.String()+"\n" {
		t.Fatalf("file holds %q", raw)
	}
}

func TestInstanceUIDCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge-agent.instance-uid")
	if err := os.WriteFile(path, []byte("not-a-uuid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadInstanceUID(path)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want ErrCorrupt naming the file", err)
	}
}

func FuzzParseInstanceUID(f *testing.F) {
	f.Add([]byte("01932c07-a5a4-7b4e-8f3e-2b9d6a1c0e55\n"))
	f.Add([]byte("{01932c07-a5a4-7b4e-8f3e-2b9d6a1c0e55}"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, err := ParseInstanceUID("f", raw)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// What parses round-trips through the form the agent writes.
		back, err := ParseInstanceUID("f", []byte(u.String()+"\n"))
		if err != nil || back != u {
			t.Fatalf("round trip of %s: %v %s", u, err, back)
		}
	})
}
