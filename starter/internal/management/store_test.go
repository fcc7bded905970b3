package management

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStoreRoundTripAndMode(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "edge-agent.remote-config.json")}
	if r, err := s.Load(); err != nil || r != nil {
		t.Fatalf("empty store: %v %v", r, err)
	}
	want := Remote{Hash: []byte{1, 2, 0xff}, YAML: []byte("input:\n  paths: [a]\n"), AppliedAt: time.Unix(1_700_000_000, 0).UTC()}
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 && os.PathSeparator == '/' {
		t.Fatalf("mode %o, want 0600: the file may hold tokens", perm)
	}
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Hash, want.Hash) || !bytes.Equal(got.YAML, want.YAML) || !got.AppliedAt.Equal(want.AppliedAt) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Load(); err != nil || r != nil {
		t.Fatalf("after Remove: %v %v", r, err)
	}
}

func TestParseRemoteRejects(t *testing.T) {
	for _, raw := range []string{"", "{", `{"opamp_config_hash":"zz","agent_yaml":"a: 1"}`, `{"opamp_config_hash":"01"}`} {
		if _, err := ParseRemote("f.json", []byte(raw)); !errors.Is(err, ErrCorruptRemote) {
			t.Errorf("%q: got %v, want ErrCorruptRemote", raw, err)
		}
	}
}

func FuzzParseRemote(f *testing.F) {
	f.Add([]byte(`{"opamp_config_hash":"0a0b","agent_yaml":"input:\n  paths: [x]\n","applied_at":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := ParseRemote("f", raw)
		if err != nil {
			if !errors.Is(err, ErrCorruptRemote) {
				t.Fatalf("error %v does not wrap ErrCorruptRemote", err)
			}
			return
		}
		if len(r.Hash) == 0 || len(r.YAML) == 0 {
			t.Fatalf("accepted %q without a hash or a config", raw)
		}
	})
}
