package paths

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultsFileName is the file in the install root that a package ships to
// say where it keeps the agent's files (an install root whose state lives
// elsewhere, as /opt/edge-agent with /var/lib/edge-agent). Its values are
// defaults: the environment wins over them. Without it, every path is
// under the install root.
const DefaultsFileName = "edge-agent.paths"

// DefaultsKeys are the variables a defaults file may set.
var DefaultsKeys = []string{EnvConfig, EnvIDFile, EnvPIDFile, EnvLogDir, EnvOutFile}

// LoadDefaults reads <home>/edge-agent.paths: NAME=VALUE lines for the
// names in DefaultsKeys, blank lines and # comments. A missing file is no
// defaults; a malformed one is an error naming the file and line, since
// ignoring it would put the pid or id file where no other command looks.
func LoadDefaults(home string) (map[string]string, error) {
	path := filepath.Join(home, DefaultsFileName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read path defaults: %w", err)
	}
	defs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		key, val, ok := strings.Cut(text, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case !ok || val == "":
			return nil, fmt.Errorf("%s:%d: want NAME=VALUE", path, line)
		case !slices.Contains(DefaultsKeys, key):
			return nil, fmt.Errorf("%s:%d: %q is not one of %s", path, line, key, strings.Join(DefaultsKeys, ", "))
		case defs[key] != "":
			return nil, fmt.Errorf("%s:%d: %s is set twice", path, line, key)
		}
		defs[key] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read path defaults %s: %w", path, err)
	}
	return defs, nil
}

// WithDefaults returns a getenv that answers from getenv first and from
// defs for the names getenv leaves empty.
func WithDefaults(getenv func(string) string, defs map[string]string) func(string) string {
	if len(defs) == 0 {
		return getenv
	}
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return defs[name]
	}
}
