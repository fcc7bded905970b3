package paths

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type env map[string]string

func (e env) get(k string) string { return e[k] }

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHome(t *testing.T) {
	root := t.TempDir()
	exe := filepath.Join(root, "bin", "edge-agent")
	touch(t, exe)

	if got := Home(env{EnvHome: "/opt/edge"}.get, exe); got != "/opt/edge" {
		t.Errorf("EDGE_AGENT_HOME: %s", got)
	}
	if got := Home(env{}.get, exe); got != root {
		t.Errorf("above bin/: got %s, want %s", got, root)
	}

	// A symlink elsewhere still finds the real install root.
	links := t.TempDir()
	link := filepath.Join(links, "edge-agent")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if got := Home(env{}.get, link); got != root {
		t.Errorf("via symlink: got %s, want %s", got, root)
	}

	// Not in bin/: the current directory.
	other := filepath.Join(t.TempDir(), "tools", "edge-agent")
	touch(t, other)
	wd := t.TempDir()
	t.Chdir(wd)
	if got := Home(env{}.get, other); got != wd {
		t.Errorf("not in bin/: got %s, want cwd %s", got, wd)
	}
	if got := Home(env{}.get, ""); got != wd {
		t.Errorf("no executable: got %s, want cwd %s", got, wd)
	}
	// A relative EDGE_AGENT_HOME is made absolute.
	if got := Home(env{EnvHome: "rel"}.get, exe); got != filepath.Join(wd, "rel") {
		t.Errorf("relative home: %s", got)
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct{ home, p, want string }{
		{"/opt/edge", "data/wal.db", "/opt/edge/data/wal.db"},
		{"/opt/edge", "/var/lib/wal.db", "/var/lib/wal.db"},
		{"/opt/edge", "", ""},
		{"/opt/edge", "../x", "/opt/x"},
	} {
		if got := Resolve(tc.home, tc.p); got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tc.home, tc.p, got, tc.want)
		}
	}
}

func TestConfigPath(t *testing.T) {
	home := t.TempDir()
	wd := t.TempDir()
	t.Chdir(wd)
	homeCfg := filepath.Join(home, "config", "agent.yaml")
	wdCfg := filepath.Join(wd, "config", "agent.yaml")
	wdFlat := filepath.Join(wd, "agent.yaml")
	explicit := filepath.Join(t.TempDir(), "mine.yaml")
	fromEnv := filepath.Join(t.TempDir(), "env.yaml")

	// Nothing anywhere.
	_, err := ConfigPath("", env{}.get, home)
	want := "no agent.yaml found: use --config /path/to/agent.yaml, set EDGE_AGENT_CONFIG, or place config/agent.yaml under the install root (" + home + ")"
	if err == nil || err.Error() != want || !errors.Is(err, ErrNoConfig) {
		t.Errorf("not found: %v\nwant %s", err, want)
	}

	touch(t, wdFlat)
	check := func(name, explicit string, e env, want string) {
		t.Helper()
		got, err := ConfigPath(explicit, e.get, home)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, want)
		}
	}
	check("./agent.yaml", "", env{}, wdFlat)
	touch(t, wdCfg)
	check("./config/agent.yaml", "", env{}, wdCfg)
	touch(t, homeCfg)
	check("home config", "", env{}, homeCfg)
	touch(t, fromEnv)
	check("EDGE_AGENT_CONFIG", "", env{EnvConfig: fromEnv}, fromEnv)
	touch(t, explicit)
	check("--config", explicit, env{EnvConfig: fromEnv}, explicit)
	check("relative --config", "agent.yaml", env{}, wdFlat)

	// An explicit path that does not exist is an error, not a fallback.
	if _, err := ConfigPath(filepath.Join(wd, "nope.yaml"), env{}.get, home); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing --config: %v", err)
	}
	if _, err := ConfigPath("", env{EnvConfig: "/nope.yaml"}.get, home); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), EnvConfig) {
		t.Errorf("missing EDGE_AGENT_CONFIG: %v", err)
	}
	if _, err := ConfigPath(wd, env{}.get, home); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory as --config: %v", err)
	}
}

func TestRuntimeFiles(t *testing.T) {
	home := "/opt/edge"
	for _, tc := range []struct {
		name string
		fn   func(func(string) string, string) string
		env  string
		def  string
	}{
		{"PIDFile", PIDFile, EnvPIDFile, "/opt/edge/edge-agent.pid"},
		{"IDFile", IDFile, EnvIDFile, "/opt/edge/edge-agent.id"},
		{"LogDir", LogDir, EnvLogDir, "/opt/edge/log"},
	} {
		if got := tc.fn(env{}.get, home); got != tc.def {
			t.Errorf("%s default = %s, want %s", tc.name, got, tc.def)
		}
		if got := tc.fn(env{tc.env: "/run/x"}.get, home); got != "/run/x" {
			t.Errorf("%s absolute override = %s", tc.name, got)
		}
		if got := tc.fn(env{tc.env: "var/x"}.get, home); got != "/opt/edge/var/x" {
			t.Errorf("%s relative override = %s", tc.name, got)
		}
	}
}
