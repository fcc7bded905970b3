package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables (the Java agent's names).
const (
	EnvHome    = "EDGE_AGENT_HOME"
	EnvConfig  = "EDGE_AGENT_CONFIG"
	EnvPIDFile = "EDGE_AGENT_PID_FILE"
	EnvIDFile  = "EDGE_AGENT_ID_FILE"
	EnvLogDir  = "EDGE_AGENT_LOG_DIR"
	// EnvOutFile takes the stdout and stderr of `start --background`.
	EnvOutFile = "EDGE_AGENT_LOG_FILE"
)

// File names under the install root.
const (
	PIDFileName = "edge-agent.pid"
	IDFileName  = "edge-agent.id"
	// InstanceUIDFileName and RemoteConfigFileName sit in the id file's
	// folder: they are the agent's identity and its fleet's config, kept
	// apart from the WAL so that recreating the WAL keeps both.
	InstanceUIDFileName  = "edge-agent.instance-uid"
	RemoteConfigFileName = "edge-agent.remote-config.json"
	LogDirName           = "log"
)

// ErrNoConfig is wrapped by ConfigPath when no agent.yaml is found.
var ErrNoConfig = errors.New("no agent.yaml found")

// Home returns the install root: EDGE_AGENT_HOME if set, else the folder
// above the binary's directory when the binary sits in a directory named
// "bin" (the tarball layout), else the current directory. executable is
// the binary's path (os.Executable); symlinks are followed so a link in
// /usr/local/bin still finds its real install root. The result is
// absolute when it can be made so.
func Home(getenv func(string) string, executable string) string {
	if h := getenv(EnvHome); h != "" {
		return absOr(h)
	}
	if executable != "" {
		exe := executable
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(absOr(exe))
		if filepath.Base(dir) == "bin" {
			return filepath.Dir(dir)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "."
}

// Resolve returns p itself when it is absolute (or empty), else p joined
// to home.
func Resolve(home, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(home, p)
}

// ConfigPath finds agent.yaml: the explicit --config path, then
// EDGE_AGENT_CONFIG, then <home>/config/agent.yaml, then ./config/agent.yaml
// and ./agent.yaml in the current directory. An explicit path (flag or
// variable) must exist: falling back silently to another file would run
// the agent with a config the operator did not choose. The result is
// absolute.
func ConfigPath(explicit string, getenv func(string) string, home string) (string, error) {
	for _, c := range []struct{ path, from string }{
		{explicit, "--config"},
		{getenv(EnvConfig), EnvConfig},
	} {
		if c.path == "" {
			continue
		}
		p := absOr(c.path)
		if err := isFile(p); err != nil {
			return "", fmt.Errorf("config file from %s: %w", c.from, err)
		}
		return p, nil
	}
	candidates := []string{
		filepath.Join(home, "config", "agent.yaml"),
		filepath.Join("config", "agent.yaml"),
		"agent.yaml",
	}
	for _, c := range candidates {
		p := absOr(c)
		if isFile(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: use --config /path/to/agent.yaml, set %s, or place config/agent.yaml under the install root (%s)", ErrNoConfig, EnvConfig, home)
}

// PIDFile is EDGE_AGENT_PID_FILE (relative to home) or <home>/edge-agent.pid.
func PIDFile(getenv func(string) string, home string) string {
	return fromEnv(getenv, EnvPIDFile, home, PIDFileName)
}

// APIAddrFile is where the running agent whose pid file is pidFile keeps
// the address its HTTP API bound (edge-agent.api-address beside
// edge-agent.pid), so that the CLI reaches an API whose http.listen asks
// for a free port.
func APIAddrFile(pidFile string) string {
	dir, base := filepath.Split(pidFile)
	return filepath.Join(dir, strings.TrimSuffix(base, ".pid")+".api-address")
}

// APITokenFile is where the running agent whose pid file is pidFile keeps
// the token its HTTP API accepts (edge-agent.api-token beside
// edge-agent.pid, mode 0600): the CLI run by the agent's user reads it.
func APITokenFile(pidFile string) string {
	dir, base := filepath.Split(pidFile)
	return filepath.Join(dir, strings.TrimSuffix(base, ".pid")+".api-token")
}

// IDFile is EDGE_AGENT_ID_FILE (relative to home) or <home>/edge-agent.id.
func IDFile(getenv func(string) string, home string) string {
	return fromEnv(getenv, EnvIDFile, home, IDFileName)
}

// InstanceUIDFile is the OpAMP instance uid file, next to IDFile.
func InstanceUIDFile(getenv func(string) string, home string) string {
	return filepath.Join(filepath.Dir(IDFile(getenv, home)), InstanceUIDFileName)
}

// RemoteConfigFile is where the last config applied from the OpAMP server
// is kept, next to IDFile.
func RemoteConfigFile(getenv func(string) string, home string) string {
	return filepath.Join(filepath.Dir(IDFile(getenv, home)), RemoteConfigFileName)
}

// LogDir is EDGE_AGENT_LOG_DIR (relative to home) or <home>/log.
func LogDir(getenv func(string) string, home string) string {
	return fromEnv(getenv, EnvLogDir, home, LogDirName)
}

func fromEnv(getenv func(string) string, name, home, def string) string {
	if v := getenv(name); v != "" {
		return Resolve(home, v)
	}
	return filepath.Join(home, def)
}

func isFile(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return &fs.PathError{Op: "open", Path: p, Err: errors.New("is a directory")}
	}
	return nil
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}
