package glob

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ErrBadPattern is returned by Compile for malformed patterns.
var ErrBadPattern = errors.New("bad glob pattern")

// Pattern is one compiled pattern. Matching is doublestar's; this type
// adds what a tailer needs around it: the directory a walk starts from,
// and the per-directory pruning that keeps a walk off subtrees no file
// below could match.
type Pattern struct {
	raw     string // absolute, slash-separated
	base    string // directory a walk starts from; the path itself when literal
	literal bool   // no meta characters at all
	// segs is the part after base split into path segments, used to
	// prune the walk; nil when it holds `**` or an alternative spanning
	// a `/`, where any depth may match.
	segs []string
}

// Compile compiles a configured pattern; a relative one is resolved
// against the working directory.
func Compile(pattern string) (*Pattern, error) {
	if strings.TrimSpace(pattern) == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadPattern)
	}
	abs, err := filepath.Abs(pattern)
	if err != nil {
		return nil, fmt.Errorf("resolve pattern %q: %w", pattern, err)
	}
	slashed := filepath.ToSlash(abs)
	if !doublestar.ValidatePattern(slashed) {
		return nil, fmt.Errorf("%w %q: unbalanced [ ] or { }, or a dangling \\", ErrBadPattern, pattern)
	}
	p := &Pattern{raw: slashed}
	base, rel := doublestar.SplitPattern(slashed)
	if !hasMeta(rel) {
		p.literal, p.base = true, filepath.FromSlash(slashed)
		return p, nil
	}
	p.base = filepath.FromSlash(base)
	if !strings.Contains(rel, "**") {
		p.segs = splitSegments(rel)
	}
	return p, nil
}

// CompileExclude compiles an exclude pattern. A pattern without a path
// separator matches the file's base name anywhere (e.g. "*.gz").
func CompileExclude(pattern string) (*Pattern, error) {
	if !strings.Contains(filepath.ToSlash(pattern), "/") {
		pattern = "/**/" + pattern
	}
	return Compile(pattern)
}

// String returns the absolute pattern.
func (p *Pattern) String() string { return p.raw }

// Base is the directory the walk starts from (for a literal pattern, the
// path itself).
func (p *Pattern) Base() string { return p.base }

// Literal reports whether the pattern has no meta characters.
func (p *Pattern) Literal() bool { return p.literal }

// Match reports whether the absolute path name matches.
func (p *Pattern) Match(name string) bool {
	return doublestar.MatchUnvalidated(p.raw, filepath.ToSlash(name))
}

// mayHold reports whether a directory at rel (segments below the base)
// can hold a match: a file must still match at least one more segment.
func (p *Pattern) mayHold(rel []string) bool {
	if p.segs == nil {
		return true
	}
	if len(rel) >= len(p.segs) {
		return false
	}
	for i, name := range rel {
		if !doublestar.MatchUnvalidated(p.segs[i], name) {
			return false
		}
	}
	return true
}

// matchesBelow reports whether the file at rel below the base matches.
func (p *Pattern) matchesBelow(rel []string) bool {
	return p.Match(filepath.Join(p.base, filepath.Join(rel...)))
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[{\`) }

// splitSegments splits a pattern at the slashes that separate path
// segments; nil when an alternative spans a slash ({a/b,c}), whose
// segments do not line up with the directories.
func splitSegments(pat string) []string {
	var segs []string
	depth, start := 0, 0
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case '/':
			if depth > 0 {
				return nil
			}
			segs = append(segs, pat[start:i])
			start = i + 1
		}
	}
	return append(segs, pat[start:])
}
