package file

import (
	"path/filepath"
	"strings"

	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.PathAnchor = (*Config)(nil)

// AnchorPaths makes relative paths and exclude patterns absolute under base.
// Blank entries stay blank so Validate still reports them. An exclude
// pattern without a separator ("*.gz") is a base-name pattern that
// matches anywhere (glob.CompileExclude) and stays as it is.
func (c *Config) AnchorPaths(base string) {
	if base == "" {
		return
	}
	for k, list := range [][]string{c.Paths, c.Exclude} {
		for i, p := range list {
			if strings.TrimSpace(p) == "" || filepath.IsAbs(p) {
				continue
			}
			if k == 1 && !strings.ContainsRune(filepath.ToSlash(p), '/') {
				continue
			}
			list[i] = filepath.Join(base, p)
		}
	}
}

// Sources lists the globs read (input.Sourcer).
func (c *Config) Sources() []string { return append([]string(nil), c.Paths...) }
