package paths

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       map[string]string
		wantErr    string
	}{
		{name: "no file"},
		{name: "paths", file: "# comment\n\nEDGE_AGENT_PID_FILE=/var/lib/a/edge-agent.pid\n EDGE_AGENT_ID_FILE = /var/lib/a/edge-agent.id \n",
			want: map[string]string{EnvPIDFile: "/var/lib/a/edge-agent.pid", EnvIDFile: "/var/lib/a/edge-agent.id"}},
		{name: "unknown name", file: "EDGE_AGENT_HOME=/x\n", wantErr: ":1: \"EDGE_AGENT_HOME\" is not one of"},
		{name: "no value", file: "EDGE_AGENT_LOG_DIR=\n", wantErr: ":1: want NAME=VALUE"},
		{name: "twice", file: "EDGE_AGENT_LOG_DIR=/a\nEDGE_AGENT_LOG_DIR=/b\n", wantErr: ":2: EDGE_AGENT_LOG_DIR is set twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.file != "" {
				write(t, filepath.Join(home, DefaultsFileName), tc.file)
			}
			got, err := LoadDefaults(home)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestWithDefaults: the environment wins; a default fills what it leaves
// empty, and the path functions see it.
func TestWithDefaults(t *testing.T) {
	defs := map[string]string{EnvPIDFile: "/var/lib/a/edge-agent.pid", EnvIDFile: "/var/lib/a/edge-agent.id"}
	getenv := WithDefaults(env{EnvIDFile: "/elsewhere/edge-agent.id"}.get, defs)
	if got := PIDFile(getenv, "/opt/a"); got != "/var/lib/a/edge-agent.pid" {
		t.Errorf("PIDFile = %s, want the default", got)
	}
	if got := IDFile(getenv, "/opt/a"); got != "/elsewhere/edge-agent.id" {
		t.Errorf("IDFile = %s, want the environment's", got)
	}
	if got := LogDir(getenv, "/opt/a"); got != "/opt/a/log" {
		t.Errorf("LogDir = %s, want the install root's", got)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
