package file

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/edge-agent/edge-agent/connector/file/internal/glob"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Overlapper = (*Config)(nil)

// Overlaps lists c's paths that other certainly reads too: the same
// pattern, a file path other's pattern matches, or a path below a
// directory other names. Glob against glob is not decided (it would need
// the file system); the inputs' run-time check covers those.
func (c *Config) Overlaps(other input.Config) []input.Overlap {
	o, ok := other.(*Config)
	if !ok {
		return nil
	}
	var out []input.Overlap
	for i, p := range c.Paths {
		pp, err := glob.Compile(p)
		if err != nil {
			continue
		}
		for _, q := range o.Paths {
			qp, err := glob.Compile(q)
			if err != nil {
				continue
			}
			if reads(pp, qp) || reads(qp, pp) {
				out = append(out, input.Overlap{Key: fmt.Sprintf("paths[%d]", i), Source: p})
				break
			}
		}
	}
	return out
}

// reads reports whether pattern b certainly reads what literal a names.
func reads(a, b *glob.Pattern) bool {
	if a.String() == b.String() {
		return true
	}
	if !a.Literal() {
		return false
	}
	if b.Match(a.String()) {
		return true
	}
	dir := strings.TrimSuffix(b.String(), "/") + "/"
	return b.Literal() && strings.HasPrefix(filepath.ToSlash(a.String()), dir)
}
